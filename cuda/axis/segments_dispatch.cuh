// segments_dispatch.cuh -- dtype dispatch of the axis reductions and scans: which (op, input, result) triples
// are instantiated, and the switch from the runtime enums to the typed code.
//
// Instantiated: the NumPy default result (gr_default_result_dtype), the input type itself for sum/prod
// (dtype=a.dtype, wrapping like NumPy) and mean of inexact types, and the widening float pairs.  Any other
// dtype= is served by casting the input first (gr_copy_strided), as NumPy's buffered casts do.
#pragma once
#include <utility>  // std::index_sequence: host dispatch, which nvcc alone compiles
#include "variants/entry.cuh"
#include "primitives/reducers.cuh"
#include "axis/hot_set.cuh"

namespace gr {

template <class T> struct tag { using type = T; };
// The type a (possibly referenced) tag names.
template <class Tag> using tag_type = typename remove_reference_t<Tag>::type;

// Calls f(tag<T>{}) for the C++ type of `d`.
template <class F>
gr_status with_dtype(gr_dtype d, F &&f) {
    switch (d) {
#define GR_DTYPE(NAME, name, device_type, ...) \
    case GR_##NAME: return f(tag<device_type>{});
#include "abi/dtypes.def"
#undef GR_DTYPE
    default: return GR_ERR_UNSUPPORTED_DTYPE;
    }
}

constexpr bool is_widening(gr_dtype in, gr_dtype out) {
    return ((in == GR_FLOAT16 || in == GR_BFLOAT16) && (out == GR_FLOAT32 || out == GR_FLOAT64)) ||
           (in == GR_FLOAT32 && out == GR_FLOAT64) ||
           (in == GR_COMPLEX64 && out == GR_COMPLEX128);
}

// Which operators scan, the `scans` column of abi/ops.def.
constexpr bool kScans[GR_OP_COUNT] = {
#define GR_OP(NAME, name, scans, flat, result, ...) false GR_IF_##scans(|| true),
#include "abi/ops.def"
#undef GR_OP
};

// The (input, result) pairs an operator runs along axes, by its result rule: NumPy's result dtype, and for
// sums, products and means also dtype= of the input's own type or a wider float (accumulated in the result).
constexpr bool segments_supported(gr_kind kind, gr_op op, gr_dtype in, gr_dtype out) {
    if (in < 0 || in >= GR_DTYPE_COUNT || out < 0 || out >= GR_DTYPE_COUNT) return false;
    if (op < 0 || op >= GR_OP_COUNT) return false;
    if (kind == GR_KIND_SCAN && !kScans[op]) return false;
    if (!is_inexact_dtype(in) && kExactAs[op] != op) return false;  // another operator serves it (nansum: sum)
    switch (kResultRule[op]) {
    case GR_RESULT_SUM: return out == default_sum_dtype(in) || out == in || is_widening(in, out);
    case GR_RESULT_SAME: return out == in;
    case GR_RESULT_MEAN: return out == result_dtype(op, in) || is_widening(in, out);
    case GR_RESULT_INDEX: return out == GR_INT64;
    case GR_RESULT_BOOL: return out == GR_BOOL;
    case GR_RESULT_COUNT: return out == GR_INT64;
    case GR_RESULT_VAR:  // NumPy's, or dtype= a wider float; complex inputs give their real dtype
        return out == result_dtype(op, in) || is_widening(real_dtype(in), out);
    // floating (and for NORM complex) inputs only: bool and integers are cast to float64 first, as NumPy's and
    // SciPy's functions do (LOG's result_dtype is GR_DTYPE_COUNT, none, for complex inputs)
    case GR_RESULT_LOG:
    case GR_RESULT_NORM: return is_inexact_dtype(in) && out == result_dtype(op, in);
    }
    return false;
}

// Which kernels exist.  Two economies keep the build small without changing a result:
//  * one kernel serves dtypes whose bits give the same answer: sums and products (result rule SUM) that keep
//    an unsigned type wrap exactly as the signed type of that width, and what only asks whether an element is nonzero
//    (rules BOOL and COUNT: any, all, count_nonzero) reads bool and unsigned integers as the signed integer
//    of their width.  kernel_types() maps a call onto the types whose kernels run it.
//  * the CUB baseline is instantiated for inputs already in the result type (and arg reductions of any
//    input); the caller casts any other input to the result type first, as NumPy's buffered casts do
//    (to bool for any, all and count_nonzero, whose question is only "nonzero?").
struct KernelTypes {
    gr_dtype in, out;
};

constexpr gr_dtype signed_twin(gr_dtype d) {
    switch (d) {
    case GR_UINT8: return GR_INT8;
    case GR_UINT16: return GR_INT16;
    case GR_UINT32: return GR_INT32;
    case GR_UINT64: return GR_INT64;
    default: return d;
    }
}

constexpr KernelTypes kernel_types(gr_op op, gr_dtype in, gr_dtype out) {
    const gr_result_rule rule = op >= 0 && op < GR_OP_COUNT ? kResultRule[op] : GR_RESULT_MEAN;
    if (rule == GR_RESULT_SUM && in == out) return {signed_twin(in), signed_twin(out)};
    // (bool's min, max, argmin, argmax and dot keep their own kernels: uint8's compare the stored bytes, where NumPy
    // takes every nonzero byte for True -- argmax of the bytes [1, 2] is 0 -- and a dot of bools is an OR of ANDs,
    // which uint8's sum of products is not: it wrapped to False at 256 true pairs)
    if (rule == GR_RESULT_BOOL || rule == GR_RESULT_COUNT) return {in == GR_BOOL ? GR_INT8 : signed_twin(in), out};
    return {in, out};
}

// Whether gpureduce's kernels of (kind, op) for the kernel types (in, out) are compiled ahead of time: a hot
// operator on a hot dtype with NumPy's result dtype runs them (bool's any runs int8's kernel, which is then hot
// too, where any is hot).  A dtype= other than NumPy's (float16 summed in float32, int32 in int32) compiles on
// first use.
constexpr bool is_hot_kernel(gr_kind kind, gr_op op, gr_dtype in, gr_dtype out) {
    // op's kernels are hot when an operator they run is (ops.def's `kernels` column: var's serve std too)
    bool hot = false;
    for (int x = 0; x < GR_OP_COUNT; x++) hot = hot || (kKernelsOf[x] == op && is_hot_op(kind, gr_op(x)));
    if (!hot) return false;
    for (int a = 0; a < GR_DTYPE_COUNT; a++) {
        const gr_dtype caller = gr_dtype(a), result = result_dtype(op, caller);
        if (!is_hot_dtype(caller) || !is_hot_dtype(result) || !segments_supported(kind, op, caller, result)) continue;
        const KernelTypes k = kernel_types(op, caller, result);
        if (k.in == in && k.out == out) return true;
    }
    return false;
}

// Whether CUB's kernels of (kind, op) for the kernel types (in, out) are compiled ahead of time: a GR_HOT_CUB
// call runs them (CUB takes its input in the result dtype, so the call's kernel types are its result's).
constexpr bool is_hot_cub_kernel(gr_kind kind, gr_op op, gr_dtype in, gr_dtype out) {
    for (int a = 0; a < GR_DTYPE_COUNT; a++) {
        const gr_dtype caller = gr_dtype(a), result = result_dtype(op, caller);
        if (!is_hot_cub_call(kind, op, caller) || !segments_supported(kind, op, caller, result)) continue;
        const KernelTypes k = kernel_types(op, result, result);
        if (k.in == in && k.out == out) return true;
    }
    return false;
}

// Whether kernels of this variant family (kCub: CUB's, else gpureduce's) exist for exactly (op, in, out).
constexpr bool instantiated(bool cub, gr_kind kind, gr_op op, gr_dtype in, gr_dtype out) {
    if (!segments_supported(kind, op, in, out)) return false;
    const KernelTypes k = kernel_types(op, in, out);
    if (k.in != in || k.out != out) return false;  // served by its twin's kernels
    const gr_result_rule rule = kResultRule[op];
    return !cub || in == out || rule == GR_RESULT_INDEX ||
           ((rule == GR_RESULT_BOOL || rule == GR_RESULT_COUNT) && in == GR_INT8) ||
           ((rule == GR_RESULT_VAR || rule == GR_RESULT_NORM) && real_dtype(in) == out);
}

// The instantiated (input, result) pairs of operator OP's KIND family (kCub: CUB's, else gpureduce's), a table
// computed at compile time: the dispatch below instantiates its callee for these pairs only (a switch over the
// input and then the result type would instantiate a lambda for each of the 15 x 15, the host compiler's time in
// the units that serve many operators).
template <bool kCub, gr_kind KIND, gr_op OP>
struct PairTable {
    static constexpr int count() {
        int n = 0;
        for (int a = 0; a < GR_DTYPE_COUNT; a++)
            for (int b = 0; b < GR_DTYPE_COUNT; b++) n += instantiated(kCub, KIND, OP, gr_dtype(a), gr_dtype(b));
        return n;
    }
    static constexpr int kCount = count();
    struct Table {
        KernelTypes at[kCount > 0 ? kCount : 1];
    };
    static constexpr Table table() {
        Table t{};
        int n = 0;
        for (int a = 0; a < GR_DTYPE_COUNT; a++)
            for (int b = 0; b < GR_DTYPE_COUNT; b++)
                if (instantiated(kCub, KIND, OP, gr_dtype(a), gr_dtype(b))) t.at[n++] = {gr_dtype(a), gr_dtype(b)};
        return t;
    }
    static constexpr Table kTable = table();
    template <int K> using In = typename dtype_type<kTable.at[K].in>::type;
    template <int K> using Out = typename dtype_type<kTable.at[K].out>::type;
};

template <class Pairs, class F, size_t... K>
gr_status with_listed_pair(gr_dtype in, gr_dtype out, F &f, std::index_sequence<K...>) {
    gr_status status = GR_ERR_UNSUPPORTED_DTYPE;
    (void)((Pairs::kTable.at[K].in == in && Pairs::kTable.at[K].out == out
                ? (status = f(tag<typename Pairs::template In<K>>{}, tag<typename Pairs::template Out<K>>{}), true)
                : false) ||
           ...);
    return status;
}

// Calls f(tag<In>{}, tag<Out>{}) for an instantiated (op, in, out) triple of `kind`, instantiating only those.
template <bool kCub, gr_kind KIND, gr_op OP, class F>
gr_status with_segment_types(gr_dtype in, gr_dtype out, F &&f) {
    using Pairs = PairTable<kCub, KIND, OP>;
    return with_listed_pair<Pairs>(in, out, f, std::make_index_sequence<Pairs::kCount>{});
}

// f(tag<In>{}, tag<Out>{}) for every instantiated (op, in, out) triple of `kind` in turn, until one returns
// nonzero; that value (`python -m gpureduce warm`'s list, axis/jit_kernels.cu).
template <bool kCub, gr_kind KIND, gr_op OP, class F, size_t... K>
int each_listed_pair(F &f, std::index_sequence<K...>) {
    using Pairs = PairTable<kCub, KIND, OP>;
    int stop = 0;
    ((stop = stop ? stop : f(tag<typename Pairs::template In<K>>{}, tag<typename Pairs::template Out<K>>{})), ...);
    return stop;
}
template <bool kCub, gr_kind KIND, gr_op OP, class F>
int each_segment_types(F &&f) {
    return each_listed_pair<kCub, KIND, OP>(f, std::make_index_sequence<PairTable<kCub, KIND, OP>::kCount>{});
}

// The check every axis entry makes before it runs: data pointers where data moves, enough workspace, pointers
// aligned for their element types (by alignment: host code written once for every type passes them).
inline bool segment_args_ok(const gr_args *a, bool writes, bool reads, size_t need, size_t in_align,
                            size_t out_align) {
    return !((writes && !a->out) || (reads && !a->in) || (need && !a->workspace) || a->workspace_bytes < need ||
             reinterpret_cast<uintptr_t>(a->in) % in_align != 0 || reinterpret_cast<uintptr_t>(a->out) % out_align != 0);
}
template <class In, class Out>
bool segment_args_ok(const gr_args *a, bool writes, bool reads, size_t need) {
    return segment_args_ok(a, writes, reads, need, alignof(In), alignof(Out));
}

}  // namespace gr
