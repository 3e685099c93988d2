//! The bench's baselines, in the same process: cuDNN's fused convolution + bias + activation
//! (`cudnnConvolutionBiasActivationForward`, its fastest algorithm found by timing) and its
//! convolution alone (`cudnnConvolutionForward`, likewise). They write the bench's y.

use crate::error::Result;
use crate::gpu::Gpu;

use super::bench::BaselineFn;
use super::cudnn::{CudnnConv, DevBuf};
use super::{Addrs, Problem};

/// The baselines for `p` on `gpu` with the bench's f32 `bias` (rounded to the type cuDNN's
/// fused op takes), each a launch on the bench's buffers: `cudnn fused <algo>` and `cudnn
/// conv <algo>`.
pub fn baselines<'a>(
    gpu: &'a Gpu,
    p: &Problem,
    bias: Option<&[f32]>,
) -> Result<Vec<(String, BaselineFn<'a>)>> {
    let conv = std::rc::Rc::new(CudnnConv::new(gpu, p)?);
    let bias_buf: Option<std::rc::Rc<DevBuf>> = match bias {
        Some(b) => Some(std::rc::Rc::new(conv.bias_from_f32(gpu, b)?)),
        None => None,
    };
    let (c1, c2) = (conv.clone(), conv.clone());
    let stream = gpu.stream().clone();
    let fused: BaselineFn<'a> = Box::new(move |a: &Addrs| {
        let a = Addrs {
            bias: bias_buf.as_ref().map_or(0, |b| b.addr(&stream)),
            ..*a
        };
        // SAFETY: the bench's buffers hold p's lengths and outlive its timing loop; the bias
        // buffer lives in this closure.
        unsafe { c1.run_fused(&a) }
    });
    let alone: BaselineFn<'a> = Box::new(move |a: &Addrs| {
        // SAFETY: as above.
        unsafe { c2.run_conv_only(a) }
    });
    Ok(vec![
        (format!("cudnn fused {}", conv.fused().name()), fused),
        (format!("cudnn conv {}", conv.conv_only().name()), alone),
    ])
}
