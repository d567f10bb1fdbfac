// copy_strided_kernel.cuh -- the device half of gr_copy_strided (axis/copy_strided.cu): an n-d strided copy
// with NumPy's value casts.  Device code only, so that NVRTC compiles it too (abi/jit.h: GR_JIT_COPY_STRIDED):
// the casts between hot dtypes are compiled ahead of time, the other pairs on first use.
#pragma once
#include "primitives/types.cuh"

namespace gr {

struct CopyShape {
    int ndim;
    int64_t shape[GR_COPY_MAX_NDIM], in_stride[GR_COPY_MAX_NDIM], out_stride[GR_COPY_MAX_NDIM];
};

// One element per thread step; the index is decomposed in C order (last dimension fastest), so for a
// C-ordered destination neighbouring threads write neighbouring elements.
template <class In, class Out>
__global__ void __launch_bounds__(256) copy_strided_kernel(CopyShape c, int64_t n, const In *in, Out *out) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        int64_t rest = i, src = 0, dst = 0;
        for (int d = c.ndim - 1; d >= 0; d--) {
            const int64_t k = rest % c.shape[d];
            rest /= c.shape[d];
            src += k * c.in_stride[d];
            dst += k * c.out_stride[d];
        }
        out[dst] = convert<Out>(in[src]);
    }
}

}  // namespace gr
