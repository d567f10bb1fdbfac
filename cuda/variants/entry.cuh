// entry.cuh -- turns a variant's typed Policy into the untyped entry point the dispatch table calls:
// picks the C++ types from the dtype enums (only those in the variant's dtype mask are instantiated),
// checks the workspace, handles n == 0 and the final conversion to the result type.
//
// A reduction Policy provides:
//   template <class In, class Acc, class Op> static cudaError_t workspace(int64_t n, int sm_count, size_t *bytes);
//   template <class In, class Acc, class Op> static cudaError_t run(const In *, Acc *out, int64_t n, const Ctx &);
// `run` is called with n >= 1 and writes the reduction of in[0..n) to *out (device memory).
#pragma once
#include "variants/driver.cuh"

namespace gr {

// The masks of cuda/abi/variants.def, readable at compile time.
constexpr unsigned kVariantOps[] = {
#define GR_VARIANT(kind, name, props, ops, dtypes, seed, doc) (ops),
#include "abi/variants.def"
#undef GR_VARIANT
};
constexpr unsigned kVariantDtypes[] = {
#define GR_VARIANT(kind, name, props, ops, dtypes, seed, doc) (dtypes),
#include "abi/variants.def"
#undef GR_VARIANT
};

// Internal signature of every variant's entry: plans (ws_bytes != nullptr: only report the bytes needed)
// or runs.
using impl_fn = gr_status (*)(const gr_args *, size_t *ws_bytes, int *cuda_error);

inline gr_status cuda_status(cudaError_t e, int *cuda_error) {
    if (e == cudaSuccess) return GR_OK;
    if (cuda_error) *cuda_error = static_cast<int>(e);
    return GR_ERR_CUDA;
}

template <class Policy, class In, class Out, class Op>
gr_status reduce_typed(const gr_args *a, size_t *ws_bytes, int *cuda_error) {
    using Acc = typename accumulator<Out>::type;
    constexpr bool kDirect = is_same<Acc, Out>::value;
    const int64_t n = a->n;
    const size_t result_slot = kDirect ? 0 : align_up(sizeof(Acc), GR_WORKSPACE_ALIGN);
    size_t scratch = 0;
    if (n > 0) {
        const cudaError_t e = Policy::template workspace<In, Acc, Op>(n, a->sm_count, &scratch);
        if (e != cudaSuccess) return cuda_status(e, cuda_error);
    }
    const size_t need = GR_WORKSPACE_ZEROED_BYTES + result_slot + scratch;
    if (ws_bytes) {
        *ws_bytes = need;
        return GR_OK;
    }
    if (!a->out || (n > 0 && !a->in) || !a->workspace || a->workspace_bytes < need ||
        reinterpret_cast<uintptr_t>(a->in) % alignof(In) != 0 || reinterpret_cast<uintptr_t>(a->out) % alignof(Out) != 0)
        return GR_ERR_INVALID_ARGUMENT;

    char *ws = static_cast<char *>(a->workspace);
    Acc *result = kDirect ? reinterpret_cast<Acc *>(a->out) : reinterpret_cast<Acc *>(ws + GR_WORKSPACE_ZEROED_BYTES);
    const Ctx c{reinterpret_cast<unsigned *>(ws), ws + GR_WORKSPACE_ZEROED_BYTES + result_slot,
                a->workspace_bytes - GR_WORKSPACE_ZEROED_BYTES - result_slot,
                static_cast<cudaStream_t>(a->stream), a->sm_count};
    cudaError_t e;
    if (n == 0) {
        store_identity_kernel<Acc, Op><<<1, 1, 0, c.stream>>>(result);
        e = cudaGetLastError();
    } else {
        e = Policy::template run<In, Acc, Op>(static_cast<const In *>(a->in), result, n, c);
    }
    if constexpr (!kDirect) {
        if (e == cudaSuccess) {
            convert_one_kernel<Acc, Out><<<1, 1, 0, c.stream>>>(result, static_cast<Out *>(a->out));
            e = cudaGetLastError();
        }
    }
    return cuda_status(e, cuda_error);
}

// A typed entry (reduce_typed, scan_typed) as a class template, so the dispatch below serves both kinds.
template <class Policy, class In, class Out, class Op>
struct ReduceTyped {
    static gr_status call(const gr_args *a, size_t *ws, int *err) { return reduce_typed<Policy, In, Out, Op>(a, ws, err); }
};

// The result type of a whole-array kernel, by the operator's result rule (abi/ops.def): sum and prod give
// NumPy's promoted type (sum_result), min and max keep the input type.  A `flat` operator of another rule
// needs its own line here.
template <gr_result_rule R, class In> struct flat_result;
template <class In> struct flat_result<GR_RESULT_SUM, In> { using type = typename sum_result<In>::type; };
template <class In> struct flat_result<GR_RESULT_SAME, In> { using type = In; };

// The operator -> (functor, result type) rule, in one place for reductions and scans, one case per `flat`
// operator of abi/ops.def.  Only the operators of the variant's mask are instantiated; a caller asking for
// another result type gets GR_ERR_UNSUPPORTED_DTYPE.
template <template <class, class, class, class> class Typed, class Policy, unsigned kOps, class In>
gr_status dispatch_op(const gr_args *a, size_t *ws_bytes, int *cuda_error) {
#define GR_OP_CASE(NAME, RESULT)                                                                              \
    case GR_OP_##NAME:                                                                                       \
        if constexpr ((kOps & GR_OPBIT(GR_OP_##NAME)) != 0) {                                                \
            using Out = typename flat_result<GR_RESULT_##RESULT, In>::type;                                  \
            return a->out_dtype == dtype_of<Out>::value                                                      \
                       ? Typed<Policy, In, Out, typename op_functor<GR_OP_##NAME>::type>::call(a, ws_bytes, \
                                                                                             cuda_error)     \
                       : GR_ERR_UNSUPPORTED_DTYPE;                                                           \
        }                                                                                                    \
        break;
    switch (a->op) {
#define GR_OP(NAME, name, scans, flat, result, ...) GR_IF_##flat(GR_OP_CASE(NAME, result))
#include "abi/ops.def"
#undef GR_OP
    default:
        break;
    }
#undef GR_OP_CASE
    return GR_ERR_UNSUPPORTED_OP;
}

// Instantiates the variant for exactly the dtypes of its mask.
template <template <class, class, class, class> class Typed, class Policy, gr_variant V>
gr_status dispatch_variant(const gr_args *a, size_t *ws_bytes, int *cuda_error) {
    constexpr unsigned kDtypes = kVariantDtypes[V], kOps = kVariantOps[V];
#define GR_CASE(DT)                                                                                         \
    case DT:                                                                                                \
        if constexpr (kDtypes & GR_DTBIT(DT))                                                               \
            return dispatch_op<Typed, Policy, kOps, typename dtype_type<DT>::type>(a, ws_bytes, cuda_error); \
        break;
    switch (a->in_dtype) {
        GR_CASE(GR_INT32)
        GR_CASE(GR_INT64)
        GR_CASE(GR_FLOAT32)
        GR_CASE(GR_FLOAT64)
    default:
        break;
    }
#undef GR_CASE
    return GR_ERR_UNSUPPORTED_DTYPE;
}

}  // namespace gr

// Defines the entry point of reduction variant `name` from its Policy; dispatch.cu finds it by name.
#define GR_REDUCE_VARIANT(name, Policy)                                                                  \
    extern "C" gr_status gr_impl_REDUCE_##name(const gr_args *a, size_t *ws_bytes, int *cuda_error) {    \
        return gr::dispatch_variant<gr::ReduceTyped, Policy, GR_VARIANT_REDUCE_##name>(a, ws_bytes, cuda_error); \
    }
