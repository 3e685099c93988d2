//! TMA tensor maps (`cuTensorMapEncodeTiled`), built on the host and uploaded to device memory,
//! where the kernels read them (a by-value kernel parameter cannot carry them from Rust).

use cudarc::driver::CudaSlice;
use rustile_kernels::registry::DType;

use crate::error::{DriverContext, Result};
use crate::gpu::Gpu;

/// A 2-D tiled TMA tensor map (`cuTensorMapEncodeTiled`) over a row-major matrix of `rows`
/// rows of `cols` elements of `ty`, pitch `ld` elements, at device address `addr`; the box is
/// `(cols, rows)` = `bx`, 128-byte swizzle, zero fill out of range. The 128 bytes go to device
/// memory, where TMA reads them (a by-value kernel parameter cannot carry them from Rust).
pub fn tensor_map_2d(
    ty: DType,
    addr: u64,
    cols: usize,
    rows: usize,
    ld: usize,
    bx: (u32, u32),
) -> Result<[u64; 16]> {
    tensor_map_2d_of(ty, true, addr, cols, rows, ld, bx)
}

/// [`tensor_map_2d`] for any [`DType`], with 128-byte swizzle (`swizzle128`) or none (for
/// plain row-major staging tiles, e.g. a TMA store's source).
pub fn tensor_map_2d_of(
    elem: DType,
    swizzle128: bool,
    addr: u64,
    cols: usize,
    rows: usize,
    ld: usize,
    bx: (u32, u32),
) -> Result<[u64; 16]> {
    // K = 0: the kernel loads nothing, but the driver wants non-empty dimensions and a non-zero
    // pitch (`encode` raises both).
    let dims = [cols as u64, rows as u64];
    let strides = [(ld * elem.bytes()) as u64];
    encode(elem, swizzle128, addr, &dims, &strides, &[bx.0, bx.1])
        .during(|| format!("encoding a tensor map ({cols} × {rows}, pitch {ld}, box {bx:?})"))
}

/// A 4-D tiled TMA tensor map over a 16-bit tensor (`ty` f16 or bf16) at device address
/// `addr`: `dims` = `(d0, d1, d2, d3)` elements, innermost first (d0 contiguous); `strides` the
/// byte strides of dimensions 1, 2, 3 (multiples of 16); box `bx` (d0 × d1 × d2 × d3), 128-byte
/// swizzle, zeros out of range. Attention's Q, K and V: `(head_dim, seq, heads, batch)`, so a box
/// of rows never runs into the next head.
pub fn tensor_map_4d(
    ty: DType,
    addr: u64,
    dims: [u64; 4],
    strides: [u64; 3],
    bx: [u32; 4],
) -> Result<[u64; 16]> {
    encode(ty, true, addr, &dims, &strides, &bx).during(|| {
        format!("encoding a 4-D tensor map (dims {dims:?}, strides {strides:?}, box {bx:?})")
    })
}

/// A 3-D tiled TMA tensor map over a 16-bit tensor at `addr`: `dims` innermost first,
/// `strides` the byte strides of dimensions 1 and 2 (multiples of 16), box `bx`, 128-byte
/// swizzle, zeros out of range. The convolution's KRSC weights as `(C, R·S, K)`.
pub fn tensor_map_3d(
    ty: DType,
    addr: u64,
    dims: [u64; 3],
    strides: [u64; 2],
    bx: [u32; 3],
) -> Result<[u64; 16]> {
    encode(ty, true, addr, &dims, &strides, &bx).during(|| {
        format!("encoding a 3-D tensor map (dims {dims:?}, strides {strides:?}, box {bx:?})")
    })
}

/// The geometry of an im2col tensor map over an NHWC tensor (`cuTensorMapEncodeIm2col`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Im2col {
    /// `(C, W, H, N)`, innermost first.
    pub dims: [u64; 4],
    /// Bounding-box lower corner `(w, h)` of filter tap (0, 0), relative to the image origin.
    pub lower: [i32; 2],
    /// Bounding-box upper corner `(w, h)`, relative to `(W, H)` (the box is half-open).
    pub upper: [i32; 2],
    /// Traversal strides `(w, h)`: the convolution's stride.
    pub strides: [u32; 2],
    /// Channels each pixel brings (the box's inner size; ≤ 64 with 128-byte swizzle).
    pub channels: u32,
    /// Pixels one load brings.
    pub pixels: u32,
}

/// An im2col TMA tensor map over the dense NHWC 16-bit tensor at `addr`: 128-byte swizzle,
/// zeros out of range (the padding, channels past C, pixels past the last image).
pub fn tensor_map_im2col(ty: DType, addr: u64, g: &Im2col) -> Result<[u64; 16]> {
    use cudarc::driver::sys::{
        self, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
        CUtensorMapL2promotion, CUtensorMapSwizzle,
    };
    let dtype = match ty {
        DType::Bf16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        _ => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    };
    let e = ty.bytes() as u64;
    let [c, w, h, _] = g.dims;
    let strides = [c * e, c * w * e, c * w * h * e];
    let elem_strides = [1, g.strides[0], g.strides[1], 1];
    let mut map = CUtensorMap { opaque: [0; 16] };
    // SAFETY: every pointer argument points to a live array of the length rank 4 implies (4
    // dims and element strides, 3 strides, 2 corners each); the driver only writes `map`.
    let r = unsafe {
        sys::cuTensorMapEncodeIm2col(
            &mut map,
            dtype,
            4,
            addr as *mut _,
            g.dims.as_ptr(),
            strides.as_ptr(),
            g.lower.as_ptr(),
            g.upper.as_ptr(),
            g.channels,
            g.pixels,
            elem_strides.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    r.result()
        .during(|| format!("encoding an im2col tensor map ({g:?})"))?;
    Ok(map.opaque)
}

/// `cuTensorMapEncodeTiled` of rank `dims.len()` (`strides`: one fewer, bytes; `bx`: one per
/// dimension), element strides 1, zeros out of range, 256-byte L2 promotion. Empty dimensions
/// and pitches under 16 bytes are raised to the driver's minimum.
fn encode(
    elem: DType,
    swizzle128: bool,
    addr: u64,
    dims: &[u64],
    strides: &[u64],
    bx: &[u32],
) -> std::result::Result<[u64; 16], cudarc::driver::DriverError> {
    use cudarc::driver::sys::{
        self, CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
        CUtensorMapL2promotion, CUtensorMapSwizzle,
    };
    assert!(dims.len() <= 5 && strides.len() + 1 == dims.len() && bx.len() == dims.len());
    let dtype = match elem {
        DType::F16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        DType::Bf16 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::F32 => CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    };
    let swizzle = if swizzle128 {
        CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B
    } else {
        CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE
    };
    let mut map = CUtensorMap { opaque: [0; 16] };
    let dims: Vec<u64> = dims.iter().map(|&d| d.max(1)).collect();
    let strides: Vec<u64> = strides.iter().map(|&s| s.max(16)).collect();
    let unit = vec![1u32; dims.len()];
    // SAFETY: every pointer argument points to a live buffer of the length the rank implies
    // (checked above: `rank` dims, box sizes and element strides, `rank − 1` strides); the
    // driver only writes `map`.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            dtype,
            dims.len() as u32,
            addr as *mut _,
            dims.as_ptr(),
            strides.as_ptr(),
            bx.as_ptr(),
            unit.as_ptr(),
            CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    r.result()?;
    Ok(map.opaque)
}

/// Uploads tensor maps back to back (128 bytes each) into one device buffer.
pub fn upload_maps(gpu: &Gpu, maps: &[[u64; 16]]) -> Result<CudaSlice<u8>> {
    let mut bytes = Vec::with_capacity(128 * maps.len());
    for word in maps.iter().flatten() {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    gpu.upload(&bytes, "tensor maps")
}
