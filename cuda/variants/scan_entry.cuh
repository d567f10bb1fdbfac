// scan_entry.cuh -- the scan counterpart of entry.cuh: turns a scan variant's typed Policy into the untyped
// entry point `gr_impl_SCAN_<name>` the dispatch table calls.  The dtype dispatch (only the dtypes of the
// variant's mask are instantiated) and the operator -> result type rule are entry.cuh's, shared as is.
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
#include "variants/entry.cuh"

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

template <class Policy, class In, class Out, class Op>
struct ScanTyped {
    static gr_status call(const gr_args *a, size_t *ws, int *err) { return scan_typed<Policy, In, Out, Op>(a, ws, err); }
};

}  // namespace gr

// Defines the entry point of scan variant `name` from its Policy; dispatch.cu finds it by name.
#define GR_SCAN_VARIANT(name, Policy)                                                                    \
    extern "C" gr_status gr_impl_SCAN_##name(const gr_args *a, size_t *ws_bytes, int *cuda_error) {      \
        return gr::dispatch_variant<gr::ScanTyped, Policy, GR_VARIANT_SCAN_##name>(a, ws_bytes, cuda_error); \
    }
