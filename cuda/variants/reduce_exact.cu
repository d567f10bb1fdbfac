// reduce_exact.cu -- variant `exact` (issue 41): the correctly rounded sum, mean, nansum and nanmean of a whole
// float16, bfloat16, float32 or float64 array, the same bits whatever the launch, the device or the order of the
// elements.  Its kernel (variants/exact_sum_kernels.cuh) compiles on first use (abi/jit.h: GR_JIT_EXACT_SUM), so the
// variant adds host code only to the build; this file sizes the grid and launches it.
#include "abi/jit.h"
#include "variants/entry.cuh"
#include "variants/exact_sum_kernels.cuh"

namespace gr {
namespace {

// In: the element type (float16 and bfloat16 summed in float32's digits, rounded to their own format at the end).
template <class In>
gr_status reduce_exact_typed(const gr_args *a, size_t *ws_bytes, int *cuda_error) {
    using T = typename ExactInput<In>::Acc;
    const size_t need = GR_WORKSPACE_ZEROED_BYTES + align_up((ExactFormat<T>::kDigits + 2) * sizeof(int64_t),
                                                             GR_WORKSPACE_ALIGN);
    if (ws_bytes) {
        *ws_bytes = need;
        return GR_OK;
    }
    if (a->out_dtype != a->in_dtype) return GR_ERR_UNSUPPORTED_DTYPE;
    if (!a->out || (a->n > 0 && !a->in) || !a->workspace || a->workspace_bytes < need ||
        reinterpret_cast<uintptr_t>(a->in) % sizeof(In) != 0 || reinterpret_cast<uintptr_t>(a->out) % sizeof(In) != 0)
        return GR_ERR_INVALID_ARGUMENT;
    const cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
    const gr_op op = gr_op(a->op);
    if (a->n == 0 && (op == GR_OP_SUM || op == GR_OP_NANSUM))  // +0.0 (an empty mean: the kernel's NaN, one block)
        return cuda_status(cudaMemsetAsync(a->out, 0, sizeof(In), stream), cuda_error);
    void *kernel = nullptr;
    char name[128];
    exact_sum_kernel_name(dtype_of<In>::value, op, name, sizeof name);
    const gr_status st = gr_jit_kernel(GR_JIT_EXACT_SUM, name, &kernel, cuda_error);
    if (st != GR_OK) return st;

    const In *in = static_cast<const In *>(a->in);
    int64_t n = a->n;
    const int64_t misalign = int64_t(reinterpret_cast<uintptr_t>(in) % 16);
    int64_t head = misalign ? (16 - misalign) / int64_t(sizeof(In)) : 0;
    if (head > n) head = n;
    using L = ExactLaunch<T>;
    const int64_t per_block = int64_t(L::kBlock) * ExactVector<In>::kLanes * L::kVectorsInFlight;
    const int64_t want = ceil_div(n, per_block), cap = int64_t(a->sm_count > 0 ? a->sm_count : 1) * L::kBlocksPerSm;
    const int blocks = int(want < 1 ? 1 : want < cap ? want : cap);
    char *ws = static_cast<char *>(a->workspace);
    int64_t *grid_digits = reinterpret_cast<int64_t *>(ws + GR_WORKSPACE_ZEROED_BYTES);
    unsigned *counters = reinterpret_cast<unsigned *>(ws);
    In *out = static_cast<In *>(a->out);
    void *args[] = {&in, &n, &head, &grid_digits, &counters, &out};
    return cuda_status(cudaLaunchKernel(kernel, dim3(blocks), dim3(L::kBlock), args, 0, stream), cuda_error);
}

// Input dtype D's exact sum where GR_DTYPES_EXACT_SUM lists D (a template, so that no other dtype instantiates the
// typed launcher).
template <gr_dtype D>
gr_status reduce_exact_of(const gr_args *a, size_t *ws_bytes, int *cuda_error) {
    if constexpr ((GR_DTYPES_EXACT_SUM & GR_DTBIT(D)) != 0)
        return reduce_exact_typed<typename dtype_type<D>::type>(a, ws_bytes, cuda_error);
    else
        return GR_ERR_UNSUPPORTED_DTYPE;
}

}  // namespace
}  // namespace gr

extern "C" gr_status gr_impl_REDUCE_auto(const gr_args *, size_t *, int *);

extern "C" gr_status gr_impl_REDUCE_exact(const gr_args *a, size_t *ws_bytes, int *cuda_error) {
    // dispatch.cu checked the operator and the input dtype against variants.def's masks.  Floating sums, means and
    // their nan forms are this file's (GR_OPS_EXACT_KERNEL); an integer sum (wrapping as NumPy's), a min and a max
    // are exact in any order: auto's kernels (the planner runs integer means on auto's axis kernels: NumPy's answer).
    if ((GR_OPS_EXACT_KERNEL & GR_OPBIT(a->op)) && (GR_DTYPES_EXACT_SUM & GR_DTBIT(a->in_dtype))) {
        switch (a->in_dtype) {
#define GR_DTYPE(NAME, ...) \
    case GR_##NAME: return gr::reduce_exact_of<GR_##NAME>(a, ws_bytes, cuda_error);
#include "abi/dtypes.def"
#undef GR_DTYPE
        default: break;
        }
    }
    return gr_impl_REDUCE_auto(a, ws_bytes, cuda_error);
}
