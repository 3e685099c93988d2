//! Cluster launches (sm_90): `cuLaunchKernelEx` with a cluster dimension, and how many clusters
//! of a kernel the device holds at once (`cuOccupancyMaxActiveClusters`). cudarc's launch
//! builder has no cluster attribute, so these go to the driver directly.

use cudarc::driver::sys;
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig};

use super::{Arg, RawParams};
use crate::error::{DriverContext, Result};

/// The launch configuration with one attribute: clusters of `(cluster, 1, 1)` blocks. `attr`
/// must outlive the returned configuration's use.
fn config(
    cfg: &LaunchConfig,
    stream: &CudaStream,
    attr: &mut sys::CUlaunchAttribute,
) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: attr,
        numAttrs: 1,
    }
}

/// The attribute asking for clusters of `(cluster, 1, 1)` blocks.
fn cluster_attr(cluster: u32) -> sys::CUlaunchAttribute {
    // SAFETY: a plain C union of integers and structs of integers: all zeros is a valid value
    // of every member.
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 {
        x: cluster,
        y: 1,
        z: 1,
    };
    sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        pad: [0; 4],
        value,
    }
}

/// Clusters of `(cluster, 1, 1)` blocks of `f` with `block` threads and `shared` dynamic bytes
/// that the device runs at once (0: none fits; the dynamic shared limit must already be raised).
pub fn max_active_clusters(
    f: &CudaFunction,
    stream: &CudaStream,
    block: (u32, u32, u32),
    shared: u32,
    cluster: u32,
) -> Result<u32> {
    let cfg = LaunchConfig {
        grid_dim: (cluster, 1, 1),
        block_dim: block,
        shared_mem_bytes: shared,
    };
    let mut attr = cluster_attr(cluster);
    let c = config(&cfg, stream, &mut attr);
    let mut n: std::ffi::c_int = 0;
    stream
        .context()
        .bind_to_thread()
        .during(|| "binding the context".into())?;
    // SAFETY: `c` and the attribute it points to live for the call; `f` is a live function.
    unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, f.cu_function(), &c) }
        .result()
        .during(|| format!("the clusters of {cluster} blocks the device holds at once"))?;
    Ok(n.max(0) as u32)
}

/// Enqueues `f` on `stream` with `cfg`, in clusters of `(cluster, 1, 1)` blocks, with `args`.
///
/// # Safety
/// As for [`super::LaunchPlan::enqueue`]: the arguments are the kernel's parameters in order
/// and width, every pointer a live allocation holding what the kernel touches; the grid's x is
/// a multiple of `cluster`.
pub unsafe fn launch(
    f: &CudaFunction,
    stream: &CudaStream,
    cfg: LaunchConfig,
    cluster: u32,
    args: &[Arg],
) -> Result<()> {
    let mut values = RawParams::new(args);
    let mut params = values.pointers();
    let mut attr = cluster_attr(cluster);
    let c = config(&cfg, stream, &mut attr);
    stream
        .context()
        .bind_to_thread()
        .during(|| "binding the context".into())?;
    // SAFETY: the caller's contract; `params` points at values alive for the call, one per
    // kernel parameter; `c` and its attribute live for the call.
    unsafe {
        sys::cuLaunchKernelEx(
            &c,
            f.cu_function(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
    .during(|| format!("launching in clusters of {cluster}"))
}
