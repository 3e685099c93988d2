//! Output digests for the determinism check: while [`recording`] runs a closure, every buffer
//! downloaded from the GPU ([`crate::Gpu::download`]) or read back from the simulator
//! ([`crate::sim::Simulator::read`]) on that thread is hashed, in order. Running a validation
//! case twice with the same seed and comparing the two lists says whether the kernels
//! returned bit-identical output (the inputs come from the seed, so they are identical).

use std::cell::RefCell;

thread_local! {
    static RECORD: RefCell<Option<Vec<Digest>>> = const { RefCell::new(None) };
}

/// One downloaded buffer: its length in bytes and a 64-bit hash of its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest {
    /// Bytes.
    pub bytes: usize,
    /// FNV-1a over the bytes, 8 at a time.
    pub hash: u64,
}

/// Runs `f`, returning what it returned and the digest of every buffer it downloaded, in
/// order. Recordings nest: an inner one takes the downloads made while it runs.
pub fn recording<R>(f: impl FnOnce() -> R) -> (R, Vec<Digest>) {
    let outer = RECORD.with(|r| r.borrow_mut().replace(Vec::new()));
    let out = f();
    let got = RECORD.with(|r| std::mem::replace(&mut *r.borrow_mut(), outer));
    (out, got.unwrap_or_default())
}

/// Hashes `bytes` into the current recording, if one runs on this thread.
pub(crate) fn note(bytes: &[u8]) {
    RECORD.with(|r| {
        if let Some(list) = r.borrow_mut().as_mut() {
            list.push(Digest {
                bytes: bytes.len(),
                hash: hash(bytes),
            });
        }
    });
}

/// FNV-1a, 64-bit, over 8-byte words (then the tail): fast enough for gigabyte outputs and
/// not meant to resist anyone, only to tell two outputs apart.
pub fn hash(bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        h ^= u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = h.wrapping_mul(PRIME);
    }
    for &b in words.remainder() {
        h ^= b as u64;
        h = h.wrapping_mul(PRIME);
    }
    h ^ bytes.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_in_order_and_nests() {
        let ((), outer) = recording(|| {
            note(&[1, 2, 3]);
            let ((), inner) = recording(|| note(&[4; 9]));
            assert_eq!(inner.len(), 1);
            assert_eq!(inner[0].bytes, 9);
            note(&[5]);
        });
        assert_eq!(outer.len(), 2);
        assert_eq!(outer[0].bytes, 3);
        assert_eq!(outer[1].bytes, 1);
        // Outside a recording nothing is kept.
        note(&[1]);
    }

    #[test]
    fn one_flipped_bit_changes_the_hash() {
        let a = vec![0u8; 4099];
        for i in [0, 7, 8, 4095, 4098] {
            let mut b = a.clone();
            b[i] ^= 0x10;
            assert_ne!(hash(&a), hash(&b), "bit flip at byte {i}");
        }
        assert_ne!(hash(&[0; 8]), hash(&[0; 9]));
    }
}
