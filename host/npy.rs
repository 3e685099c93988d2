//! `.npy` files in C order: what `attention dump` and `conv dump` write for the PyTorch
//! cross-checks (`scripts/sdpa_check.py`, `scripts/conv_torch.py check`, `numpy.load`), and a
//! reader for the same form.
//!
//! The format (NumPy's `format.py`, version 1.0): the magic `\x93NUMPY`, the version bytes
//! `1 0`, a little-endian u16 header length, then an ASCII Python dict literal
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }` padded with spaces and ended
//! by `\n` so that the data starts on a 64-byte boundary; then the elements, little-endian.
//!
//! Element types ([`NpyElem`]): `f32` (`<f4`), [`half::f16`] (`<f2`) and `u16` (`<u2`, how
//! bf16 travels: NumPy has no bf16, so a bf16 tensor is written as its bit patterns and the
//! reader widens them with `bits << 16`).

use std::path::Path;

use crate::error::{Error, Result};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// An element type an `.npy` file can hold: its NumPy `descr` and little-endian bytes.
pub trait NpyElem: Copy {
    /// The NumPy type string (`<f4`, `<f2`, `<u2`).
    const DESCR: &'static str;
    /// Bytes per element.
    const SIZE: usize;
    /// Appends the element's little-endian bytes.
    fn put(self, out: &mut Vec<u8>);
    /// The element from `SIZE` little-endian bytes.
    fn get(bytes: &[u8]) -> Self;
}

impl NpyElem for f32 {
    const DESCR: &'static str = "<f4";
    const SIZE: usize = 4;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        f32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }
}

impl NpyElem for half::f16 {
    const DESCR: &'static str = "<f2";
    const SIZE: usize = 2;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_bits().to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        half::f16::from_bits(u16::from_le_bytes([b[0], b[1]]))
    }
}

impl NpyElem for u16 {
    const DESCR: &'static str = "<u2";
    const SIZE: usize = 2;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(b: &[u8]) -> Self {
        u16::from_le_bytes([b[0], b[1]])
    }
}

/// The bytes of an `.npy` file holding `data` as an array of `shape` (C order). `data` must
/// hold `shape`'s product of elements.
pub fn to_bytes<T: NpyElem>(shape: &[usize], data: &[T]) -> Result<Vec<u8>> {
    let count = shape.iter().try_fold(1usize, |a, &x| a.checked_mul(x));
    if count != Some(data.len()) {
        return Err(Error::InvalidArgument {
            kernel: "npy".into(),
            what: format!(
                "shape {shape:?} does not hold the {} elements given",
                data.len()
            ),
        });
    }
    let dims = match shape {
        [x] => format!("({x},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {dims}, }}",
        T::DESCR
    );
    // Magic (6) + version (2) + length (2) + header + '\n', padded to 64 bytes.
    let unpadded = MAGIC.len() + 4 + header.len() + 1;
    header.extend(std::iter::repeat_n(
        ' ',
        unpadded.next_multiple_of(64) - unpadded,
    ));
    header.push('\n');
    let len = u16::try_from(header.len()).map_err(|_| Error::InvalidArgument {
        kernel: "npy".into(),
        what: format!(
            "a header of {} bytes needs format version 2.0",
            header.len()
        ),
    })?;
    let mut out = Vec::with_capacity(10 + header.len() + T::SIZE * data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for &x in data {
        x.put(&mut out);
    }
    Ok(out)
}

/// Writes `data` as an array of `shape` to `path` ([`to_bytes`]).
pub fn write<T: NpyElem>(path: &Path, shape: &[usize], data: &[T]) -> Result<()> {
    std::fs::write(path, to_bytes(shape, data)?).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Parses an `.npy` file of `<f4` in C order (versions 1.0 and 2.0): its shape and elements.
pub fn from_bytes(bytes: &[u8]) -> Result<(Vec<usize>, Vec<f32>)> {
    from_bytes_as(bytes)
}

/// The header text of an `.npy` file, where its data starts and the header's length.
fn header_of(bytes: &[u8]) -> Result<(&str, usize, usize)> {
    let bad = |what: String| Error::InvalidArgument {
        kernel: "npy".into(),
        what,
    };
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad("not an .npy file (no \\x93NUMPY magic)".into()));
    }
    let (len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(bad(format!("format version {v} is not 1 or 2"))),
    };
    let header = bytes
        .get(start..start + len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| bad("the header is cut short or not text".into()))?;
    Ok((header, start, len))
}

/// The NumPy type string (`<f4`, `<f2`, `<u2`, `<V2`, …) of an `.npy` file, without its
/// quotes, so a caller can pick the [`NpyElem`] to read it as.
pub fn descr(bytes: &[u8]) -> Result<String> {
    let (header, _, _) = header_of(bytes)?;
    let at = header.find("'descr'").map(|i| i + "'descr'".len());
    at.and_then(|i| header[i..].trim_start().strip_prefix(':'))
        .map(str::trim_start)
        .and_then(|s| s.strip_prefix('\''))
        .and_then(|s| s.split_once('\''))
        .map(|(d, _)| d.to_string())
        .ok_or_else(|| Error::InvalidArgument {
            kernel: "npy".into(),
            what: format!("no 'descr' string in {header:?}"),
        })
}

/// Parses an `.npy` file of `T` ([`NpyElem::DESCR`]) in C order (versions 1.0 and 2.0): its
/// shape and elements.
pub fn from_bytes_as<T: NpyElem>(bytes: &[u8]) -> Result<(Vec<usize>, Vec<T>)> {
    let (header, start, len) = header_of(bytes)?;
    let bad = |what: String| Error::InvalidArgument {
        kernel: "npy".into(),
        what,
    };
    let field = |key: &str| header_field(header, key);
    let descr = field("descr").ok_or_else(|| bad(format!("no 'descr' in {header:?}")))?;
    if !descr.starts_with(&format!("'{}'", T::DESCR)) {
        return Err(bad(format!(
            "dtype {descr:.8}…: only '{}' is read here",
            T::DESCR
        )));
    }
    let fortran =
        field("fortran_order").ok_or_else(|| bad(format!("no 'fortran_order' in {header:?}")))?;
    if !fortran.starts_with("False") {
        return Err(bad("Fortran order: only C order is read".into()));
    }
    let dims = field("shape")
        .and_then(|s| s.strip_prefix('('))
        .and_then(|s| s.split_once(')'))
        .map(|(inside, _)| inside)
        .ok_or_else(|| bad(format!("no shape tuple in {header:?}")))?;
    let shape: Vec<usize> = dims
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| bad(format!("shape entry `{s}`")))
        })
        .collect::<Result<_>>()?;
    let count = shape
        .iter()
        .try_fold(1usize, |a, &x| a.checked_mul(x))
        .ok_or_else(|| bad(format!("shape {shape:?} overflows")))?;
    let data = &bytes[start + len..];
    if Some(data.len()) != count.checked_mul(T::SIZE) {
        return Err(bad(format!(
            "shape {shape:?} needs {count} × {} but {} bytes follow the header",
            T::DESCR,
            data.len()
        )));
    }
    let values = data.chunks_exact(T::SIZE).map(T::get).collect();
    Ok((shape, values))
}

/// Reads an `.npy` file of `<f4` ([`from_bytes`]).
pub fn read(path: &Path) -> Result<(Vec<usize>, Vec<f32>)> {
    read_as(path)
}

/// The largest `.npy` header read (NumPy writes tens of bytes; version 2 allows 4 GiB).
pub const MAX_HEADER_BYTES: usize = 1 << 20;

/// The bytes of the `.npy` file at `path`, read no further than its header says the data
/// goes: the magic, version and header first (a file that is not `.npy`, or whose header is
/// over [`MAX_HEADER_BYTES`], is refused after those few bytes), then at most the shape's
/// element count × the type's size and one byte more (which the parsers report as a length
/// mismatch). An endless or huge input (`/dev/zero`, a header claiming more data than the
/// file has) is never read into memory whole.
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let io = |source| Error::Io {
        path: path.display().to_string(),
        source,
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    (&mut f).take(12).read_to_end(&mut bytes).map_err(io)?;
    let header_len = match (bytes.get(..6), bytes.get(6)) {
        (Some(m), Some(1)) if m == MAGIC && bytes.len() >= 10 => {
            u16::from_le_bytes([bytes[8], bytes[9]]) as usize + 10
        }
        (Some(m), Some(2)) if m == MAGIC && bytes.len() >= 12 => {
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize + 12
        }
        // Not .npy (or version 3+): the parsers say which, from these bytes.
        _ => return Ok(bytes),
    };
    if header_len > MAX_HEADER_BYTES {
        return Err(Error::InvalidArgument {
            kernel: format!("npy {}", path.display()),
            what: format!("a header of {header_len} bytes (at most {MAX_HEADER_BYTES} are read)"),
        });
    }
    (&mut f)
        .take((header_len - bytes.len()) as u64)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    let data = header_of(&bytes)
        .ok()
        .and_then(|(h, _, _)| data_bytes(h))
        .unwrap_or(0);
    f.take(data as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    Ok(bytes)
}

/// The text after `'key':` in an `.npy` header (leading spaces trimmed).
fn header_field<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let at = header.find(&format!("'{key}'"))? + key.len() + 2;
    Some(header[at..].trim_start().strip_prefix(':')?.trim_start())
}

/// The data bytes an `.npy` header announces (elements of its shape × the item size its
/// `descr` ends with), if it can be read and does not overflow.
fn data_bytes(header: &str) -> Option<usize> {
    let field = |key: &str| header_field(header, key);
    let descr = field("descr")?.strip_prefix('\'')?.split_once('\'')?.0;
    let digits = descr.trim_start_matches(|c: char| !c.is_ascii_digit());
    let item: usize = digits.parse().ok()?;
    let dims = field("shape")?.strip_prefix('(')?.split_once(')')?.0;
    dims.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .try_fold(item, |a, s| a.checked_mul(s.parse::<usize>().ok()?))
}

/// Reads an `.npy` file of `T` ([`from_bytes_as`]).
pub fn read_as<T: NpyElem>(path: &Path) -> Result<(Vec<usize>, Vec<T>)> {
    let bytes = read_file(path)?;
    from_bytes_as(&bytes).map_err(|e| match e {
        Error::InvalidArgument { what, .. } => Error::InvalidArgument {
            kernel: format!("npy {}", path.display()),
            what,
        },
        e => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_shape_values_and_special_floats() {
        let data: Vec<f32> = (0..24)
            .map(|i| i as f32 * 0.37 - 3.0)
            .chain([
                f32::NEG_INFINITY,
                f32::INFINITY,
                -0.0,
                f32::MIN_POSITIVE / 8.0,
            ])
            .collect();
        for shape in [vec![28], vec![2, 14], vec![2, 7, 1, 2], vec![1, 1, 28]] {
            let bytes = to_bytes(&shape, &data).unwrap();
            assert_eq!(
                (bytes.len() - 4 * data.len()) % 64,
                0,
                "data 64-byte aligned"
            );
            assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
            let (s, v) = from_bytes(&bytes).unwrap();
            assert_eq!(s, shape);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&v), bits(&data));
        }
        let nan = from_bytes(&to_bytes(&[1], &[f32::NAN]).unwrap()).unwrap().1;
        assert!(nan[0].is_nan());
        let (s, v) = from_bytes(&to_bytes(&[], &[7.5f32]).unwrap()).unwrap();
        assert_eq!((s, v), (vec![], vec![7.5]));
        let (s, v) = from_bytes(&to_bytes::<f32>(&[3, 0], &[]).unwrap()).unwrap();
        assert_eq!((s, v.len()), (vec![3, 0], 0));
    }

    #[test]
    fn the_header_is_numpys() {
        let bytes = to_bytes(&[2, 3], &[0.0f32; 6]).unwrap();
        let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
        assert!(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
        assert!(header.ends_with('\n'));
        assert_eq!((10 + len) % 64, 0);
        assert_eq!(bytes.len(), 10 + len + 6 * 4);
        let one = to_bytes(&[5], &[0.0f32; 5]).unwrap();
        let len = u16::from_le_bytes([one[8], one[9]]) as usize;
        assert!(std::str::from_utf8(&one[10..10 + len])
            .unwrap()
            .contains("'shape': (5,), }"));
        assert_eq!(
            1.5f32.to_le_bytes(),
            bytes_of(&to_bytes(&[1], &[1.5f32]).unwrap())
        );
    }

    fn bytes_of(file: &[u8]) -> [u8; 4] {
        let n = file.len();
        [file[n - 4], file[n - 3], file[n - 2], file[n - 1]]
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        assert!(matches!(
            to_bytes(&[2, 3], &[0.0f32; 5]),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            to_bytes::<f32>(&[usize::MAX, 2], &[]),
            Err(Error::InvalidArgument { .. })
        ));
        let good = to_bytes(&[2, 2], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
        // The header with `old` replaced by `new` (of the same length).
        let header = |old: &str, new: &str| {
            let mut b = good.clone();
            let at = b
                .windows(old.len())
                .position(|w| w == old.as_bytes())
                .unwrap();
            b[at..at + old.len()].copy_from_slice(new.as_bytes());
            b
        };
        for (bytes, why) in [
            (b"nope".to_vec(), "magic"),
            (good[..good.len() - 1].to_vec(), "cut data"),
            (good[..20].to_vec(), "cut header"),
            (header("<f4", "<f8"), "dtype"),
            (
                header("'fortran_order': False", "'fortran_order': True "),
                "order",
            ),
            (header("(2, 2)", "(2, x)"), "shape entry"),
            (header("'shape'", "'shope'"), "no shape"),
        ] {
            match from_bytes(&bytes) {
                Err(Error::InvalidArgument { kernel, .. }) => assert_eq!(kernel, "npy", "{why}"),
                other => panic!("{why}: {other:?}"),
            }
        }
        let mut v3 = good.clone();
        v3[6] = 3;
        assert!(from_bytes(&v3).is_err());
        let dir = std::env::temp_dir().join(format!("rustile-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.npy");
        write(&path, &[2, 2], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(read(&path).unwrap(), (vec![2, 2], vec![1.0, 2.0, 3.0, 4.0]));
        assert!(matches!(
            read(&dir.join("missing.npy")),
            Err(Error::Io { .. })
        ));
        std::fs::write(&path, b"\x93NUMPY\x01\x00").unwrap();
        match read(&path) {
            Err(Error::InvalidArgument { kernel, .. }) => assert!(kernel.contains("x.npy")),
            other => panic!("{other:?}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn sixteen_bit_arrays_carry_their_numpy_type_and_bits() {
        let h: Vec<half::f16> = [1.5f32, -0.0, 65504.0, 6e-8]
            .iter()
            .map(|&v| half::f16::from_f32(v))
            .collect();
        let bytes = to_bytes(&[2, 2], &h).unwrap();
        let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert!(std::str::from_utf8(&bytes[10..10 + len])
            .unwrap()
            .starts_with("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 2), }"));
        assert_eq!((10 + len) % 64, 0);
        assert_eq!(bytes.len(), 10 + len + 2 * 4);
        assert_eq!(&bytes[10 + len..10 + len + 2], &0x3E00u16.to_le_bytes());
        let (s, back) = from_bytes_as::<half::f16>(&bytes).unwrap();
        assert_eq!(s, vec![2, 2]);
        assert_eq!(
            back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            h.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        let bits: Vec<u16> = vec![0x3F80, 0xBF80, 0x7FC0];
        let bytes = to_bytes(&[3], &bits).unwrap();
        assert_eq!(from_bytes_as::<u16>(&bytes).unwrap(), (vec![3], bits));
        // A file of one type is not read as another.
        assert!(matches!(
            from_bytes(&bytes),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(from_bytes_as::<half::f16>(&bytes).is_err());
    }
}
