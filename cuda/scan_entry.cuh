// scan_entry.cuh -- the scan counterpart of entry.cuh: turns a scan variant's typed Policy into the untyped
// entry point `gr_impl_SCAN_<name>` the dispatch table calls.  The dtype dispatch (only the dtypes of the
// variant's mask are instantiated) is entry.cuh's, reused as is.
//
// A scan Policy provides:
//   template <class In, class Out, class Op> static cudaError_t workspace(int64_t n, int sm_count, size_t *bytes);
//   template <class In, class Out, class Op>
//   static cudaError_t run(const In *in, Out *out, int64_t n, bool exclusive, const Ctx &c);
// `run` is called with n >= 1 and writes out[i] = op(in[0..i]) (inclusive) or out[0] = identity,
// out[i] = op(in[0..i-1]) (exclusive), accumulating in accumulator<Out>.  in == out (exactly) is allowed:
// every variant reads an element before anything writes it; any other overlap is not.
//
// Result types follow NumPy's cumsum/cumprod/maximum.accumulate: sum and prod give sum_result<In>
// (int32 -> int64), min and max keep the input type.
#pragma once
#include "entry.cuh"

namespace gr {

template <class Policy, class In, class Out, class Op>
gr_status scan_typed(const gr_args *a, size_t *ws_bytes, int *cuda_error) {
    const int64_t n = a->n;
    size_t scratch = 0;
    if (n > 0) {
        const cudaError_t e = Policy::template workspace<In, Out, Op>(n, a->sm_count, &scratch);
        if (e != cudaSuccess) return cuda_status(e, cuda_error);
    }
    const size_t need = GR_WORKSPACE_ZEROED_BYTES + scratch;
    if (ws_bytes) {
        *ws_bytes = need;
        return GR_OK;
    }
    if ((n > 0 && (!a->in || !a->out)) || !a->workspace || a->workspace_bytes < need ||
        reinterpret_cast<uintptr_t>(a->in) % alignof(In) != 0 || reinterpret_cast<uintptr_t>(a->out) % alignof(Out) != 0)
        return GR_ERR_INVALID_ARGUMENT;
    if (n == 0) return GR_OK;  // nothing to write

    char *ws = static_cast<char *>(a->workspace);
    const Ctx c{reinterpret_cast<unsigned *>(ws), ws + GR_WORKSPACE_ZEROED_BYTES,
                a->workspace_bytes - GR_WORKSPACE_ZEROED_BYTES, static_cast<cudaStream_t>(a->stream), a->sm_count};
    const cudaError_t e = Policy::template run<In, Out, Op>(static_cast<const In *>(a->in), static_cast<Out *>(a->out),
                                                            n, a->exclusive != 0, c);
    return cuda_status(e, cuda_error);
}

template <class Policy, unsigned kOps, class In>
gr_status scan_with_input(const gr_args *a, size_t *ws_bytes, int *cuda_error) {
    using SumOut = typename sum_result<In>::type;
    const gr_dtype same = dtype_of<In>::value, promoted = dtype_of<SumOut>::value;
    switch (a->op) {
    case GR_OP_SUM:
        if constexpr (kOps & GR_OPBIT(GR_OP_SUM))
            return a->out_dtype == promoted ? scan_typed<Policy, In, SumOut, Sum>(a, ws_bytes, cuda_error)
                                            : GR_ERR_UNSUPPORTED_DTYPE;
        break;
    case GR_OP_PROD:
        if constexpr (kOps & GR_OPBIT(GR_OP_PROD))
            return a->out_dtype == promoted ? scan_typed<Policy, In, SumOut, Prod>(a, ws_bytes, cuda_error)
                                            : GR_ERR_UNSUPPORTED_DTYPE;
        break;
    case GR_OP_MIN:
        if constexpr (kOps & GR_OPBIT(GR_OP_MIN))
            return a->out_dtype == same ? scan_typed<Policy, In, In, Min>(a, ws_bytes, cuda_error)
                                        : GR_ERR_UNSUPPORTED_DTYPE;
        break;
    case GR_OP_MAX:
        if constexpr (kOps & GR_OPBIT(GR_OP_MAX))
            return a->out_dtype == same ? scan_typed<Policy, In, In, Max>(a, ws_bytes, cuda_error)
                                        : GR_ERR_UNSUPPORTED_DTYPE;
        break;
    default:
        break;
    }
    return GR_ERR_UNSUPPORTED_OP;
}

template <class In, unsigned kOps>
struct ScanWithInput {
    template <class Policy>
    static gr_status call(const gr_args *a, size_t *ws, int *err) { return scan_with_input<Policy, kOps, In>(a, ws, err); }
};

}  // namespace gr

// Defines the entry point of scan variant `name` from its Policy; dispatch.cu finds it by name.
#define GR_SCAN_VARIANT(name, Policy)                                                                    \
    extern "C" gr_status gr_impl_SCAN_##name(const gr_args *a, size_t *ws_bytes, int *cuda_error) {      \
        return gr::dispatch_input_dtype<gr::ScanWithInput, Policy, GR_VARIANT_SCAN_##name>(a, ws_bytes,   \
                                                                                          cuda_error);    \
    }
