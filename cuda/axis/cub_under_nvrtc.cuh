// cub_under_nvrtc.cuh -- included before any CUB header by the device halves NVRTC compiles (CUB's baselines:
// axis/reduce_segments_cub_kernels.cuh, axis/scan_segments_cub_kernels.cuh).  CUB's tuning headers also declare
// the wrappers its host dispatch reads policies through, as host functions, which NVRTC refuses: here they are
// device functions nothing calls, without the sub-policy getters.  Both macros are CUB's own customization points
// (#ifndef-guarded); the policies themselves are CUB's.  Under nvcc this file defines nothing.
#pragma once
#ifdef __CUDACC_RTC__
#define CUB_RUNTIME_FUNCTION __device__
#define CUB_DEFINE_SUB_POLICY_GETTER(name)
#endif
