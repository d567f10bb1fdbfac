// copy_strided.cu -- gr_copy_strided: an n-d strided copy with NumPy's value casts (gpureduce.h).  The helper
// of the axis machinery for what the segment form cannot say: casting for dtype=, gathering a layout whose
// axes do not merge into a contiguous one, and writing a result into a strided out=.  A cast between two dtypes
// of the hot set (abi/hot_set.def) runs a kernel compiled here; any other pair one compiled on first use
// (abi/jit.h), from the same template (axis/copy_strided_kernel.cuh).
#include <cstdio>
#include "abi/jit.h"
#include "axis/copy_strided_kernel.cuh"
#include "axis/kernel_source.cuh"
#include "axis/segments_dispatch.cuh"

namespace gr {
namespace {

// The first-use kernel of (in, out), by its name in the program.
gr_status jit_copy_kernel(gr_dtype in, gr_dtype out, void **kernel, int *cuda_error) {
    char name[160];
    if (!gr_copy_strided_jit_name(in, out, name, sizeof name)) return GR_ERR_INVALID_ARGUMENT;
    return gr_jit_kernel(GR_JIT_COPY_STRIDED, name, kernel, cuda_error);
}

}  // namespace
}  // namespace gr

extern "C" int gr_copy_strided_jit_name(gr_dtype in, gr_dtype out, char *buf, size_t size) {
    using namespace gr;
    if (in < 0 || in >= GR_DTYPE_COUNT || out < 0 || out >= GR_DTYPE_COUNT || (is_hot_dtype(in) && is_hot_dtype(out))) return 0;
    // a name expression NVRTC instantiates: the template of axis/copy_strided_kernel.cuh at the dtypes' types
    char in_type[48], out_type[48];
    dtype_type_name(in, in_type, sizeof in_type);
    dtype_type_name(out, out_type, sizeof out_type);
    std::snprintf(buf, size, "gr::copy_strided_kernel<%s, %s>", in_type, out_type);
    return 1;
}

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
            const void *kernel = nullptr;
            if constexpr (is_hot_dtype(dtype_of<In>::value) && is_hot_dtype(dtype_of<Out>::value)) {
                kernel = reinterpret_cast<const void *>(&copy_strided_kernel<In, Out>);
            } else {
                void *compiled = nullptr;
                const gr_status st = jit_copy_kernel(in_dtype, out_dtype, &compiled, cuda_error);
                if (st != GR_OK) return st;
                kernel = compiled;
            }
            const int64_t blocks = ceil_div(n, 256), cap = int64_t(sm_count > 0 ? sm_count : 1) * 32;
            const void *src = in;
            void *dst = out;
            void *args[] = {&c, &n, &src, &dst};
            return cuda_status(cudaLaunchKernel(kernel, dim3(unsigned(blocks < cap ? blocks : cap)), dim3(256), args, 0,
                                                static_cast<cudaStream_t>(stream)),
                               cuda_error);
        });
    });
}
