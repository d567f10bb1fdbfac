// copy_strided.cu -- gr_copy_strided: an n-d strided copy with NumPy's value casts (gpureduce.h).  The helper
// of the axis machinery for what the segment form cannot say: casting for dtype=, gathering a layout whose
// axes do not merge into a contiguous one, and writing a result into a strided out=.
#include "axis/segments_dispatch.cuh"

namespace gr {
namespace {

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

}  // namespace
}  // namespace gr

extern "C" gr_status gr_copy_strided(gr_dtype in_dtype, gr_dtype out_dtype, int ndim, const int64_t *shape,
                                     const int64_t *in_strides, const int64_t *out_strides, const void *in, void *out,
                                     int sm_count, void *stream, int *cuda_error) {
    using namespace gr;
    if (ndim < 0 || ndim > GR_COPY_MAX_NDIM || (ndim > 0 && (!shape || !in_strides || !out_strides)))
        return GR_ERR_INVALID_ARGUMENT;
    CopyShape c{};
    c.ndim = ndim;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) return GR_ERR_INVALID_ARGUMENT;
        c.shape[d] = shape[d];
        c.in_stride[d] = in_strides[d];
        c.out_stride[d] = out_strides[d];
        n *= shape[d];
    }
    if (n == 0) return GR_OK;
    if (!in || !out) return GR_ERR_INVALID_ARGUMENT;
    return with_dtype(in_dtype, [&](auto in_tag) {
        using In = tag_type<decltype(in_tag)>;
        return with_dtype(out_dtype, [&](auto out_tag) -> gr_status {
            using Out = tag_type<decltype(out_tag)>;
            if (reinterpret_cast<uintptr_t>(in) % alignof(In) || reinterpret_cast<uintptr_t>(out) % alignof(Out))
                return GR_ERR_INVALID_ARGUMENT;
            const int64_t blocks = ceil_div(n, 256), cap = int64_t(sm_count > 0 ? sm_count : 1) * 32;
            copy_strided_kernel<In, Out><<<unsigned(blocks < cap ? blocks : cap), 256, 0, static_cast<cudaStream_t>(stream)>>>(
                c, n, static_cast<const In *>(in), static_cast<Out *>(out));
            return cuda_status(cudaGetLastError(), cuda_error);
        });
    });
}
