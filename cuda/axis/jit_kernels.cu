// jit_kernels.cu -- the list of every kernel compiled on first use (abi/jit.h: gr_jit_each_kernel), which
// `python -m gpureduce warm` compiles: the casts between dtypes outside the hot set, and the axis reductions' and
// scans' kernels of every instantiated (operator, input, result) outside it, each kernel its plans may launch,
// CUB's baselines of the axis reductions and scans outside it, and every segmented reduction's and scan's kernels.
// Host code only: the names come from the same kernel sets the runs use (JitSegKernels, JitScanKernels,
// JitCubSegKernels, JitCubScanKernels, JitRangeKernels, JitScanRangeKernels).
#include <set>
#include <string>
#include <utility>
#include "abi/jit.h"
#include "axis/reduce_segments.cuh"
#include "axis/ranges.cuh"
#include "axis/reduce_segments_cub.cuh"
#include "axis/scan_segments.cuh"
#include "axis/scan_segments_cub.cuh"
#include "axis/exact_scan_kernels.cuh"
#include "axis/exact_segments_kernels.cuh"

extern "C" int gr_scan_segments_exact_runs(gr_op, gr_dtype, gr_dtype);  // axis/scan_segments_exact.cu
#include "axis/group_scatter_kernels.cuh"

namespace gr {
namespace {

using Each = int (*)(void *, gr_jit_program, const char *);

// f(alternative number, tag<Red>{}) for every Reducer alternative of (OP, In, Out) from I on (reducers.cuh:
// reducer_alternative), until one returns nonzero; that value.
template <gr_op OP, class In, class Out, int I = 0, class F>
int each_alternative(F &&f) {
    if constexpr (I < reducer_choice<OP, In, Out>::kCount) {
        if (const int stop = f(I, tag<typename reducer_alternative<OP, In, Out, I>::type>{})) return stop;
        return each_alternative<OP, In, Out, I + 1>(f);
    } else {
        return 0;
    }
}

// Every kernel of a kernel set (JitRangeKernels, JitCubSegKernels, JitScanKernels, JitCubScanKernels), named into
// PROGRAM.
template <gr_jit_program PROGRAM, class Kind, class Kernels>
int each_name(const Kernels &kernels, Each each, void *context) {
    for (int k = 0; k < int(Kind::COUNT); k++) {
        char name[2048];  // CUB's kernels name their Reducer five times
        kernels.name(Kind(k), name, sizeof name);
        if (const int stop = each(context, PROGRAM, name)) return stop;
    }
    return 0;
}

// The axis reductions' kernels of every Reducer alternative, those seg_run may ask for (segments.cuh).
template <gr_op OP, class In, class Out>
int each_reduce_alternative(Each each, void *context) {
    return each_alternative<OP, In, Out>([&](int alternative, auto red) {
        const JitSegKernels kernels(OP, dtype_of<In>::value, dtype_of<Out>::value, alternative);
        for (int k = 0; k < int(SegKernel::COUNT); k++) {
            const SegKernel which = SegKernel(k);
            if (!seg_types<tag_type<decltype(red)>, In>().uses(which)) continue;
            char name[640];
            kernels.name(which, name, sizeof name);
            if (const int stop = each(context, GR_JIT_REDUCE_SEGMENTS, name)) return stop;
        }
        return 0;
    });
}

// The segmented reductions' kernels of every Reducer alternative (never ahead of time; no operator of two
// operands: dot has no segmented form).
template <gr_op OP, class In, class Out>
int each_range_alternative(Each each, void *context) {
    return each_alternative<OP, In, Out>([&](int alternative, auto red) {
        if constexpr (takes_second<tag_type<decltype(red)>>::value) return 0;
        else return each_name<GR_JIT_REDUCE_RANGES, RangeKernel>(
            JitRangeKernels(OP, dtype_of<In>::value, dtype_of<Out>::value, alternative), each, context);
    });
}

// CUB's kernels of every Reducer alternative.
template <gr_op OP, class In, class Out>
int each_cub_alternative(Each each, void *context) {
    return each_alternative<OP, In, Out>([&](int alternative, auto) {
        return each_name<GR_JIT_REDUCE_SEGMENTS_CUB, CubSegKernel>(
            JitCubSegKernels(OP, dtype_of<In>::value, dtype_of<Out>::value, alternative), each, context);
    });
}

template <gr_kind KIND, gr_op OP>
int each_cub_kernel(Each each, void *context) {
    return each_segment_types<true, KIND, OP>([&](auto in_tag, auto out_tag) {
        using In = tag_type<decltype(in_tag)>;
        using Out = tag_type<decltype(out_tag)>;
        int stop = 0;
        if constexpr (!is_hot_cub_kernel(KIND, OP, dtype_of<In>::value, dtype_of<Out>::value)) {
            if constexpr (KIND == GR_KIND_REDUCE)
                stop = each_cub_alternative<OP, In, Out>(each, context);
            else
                stop = each_name<GR_JIT_SCAN_SEGMENTS_CUB, CubScanKernel>(
                    JitCubScanKernels(OP, dtype_of<In>::value, dtype_of<Out>::value), each, context);
        }
        return stop;
    });
}

template <gr_kind KIND, gr_op OP>
int each_segments_kernel(Each each, void *context) {
    return each_segment_types<false, KIND, OP>([&](auto in_tag, auto out_tag) {
        using In = tag_type<decltype(in_tag)>;
        using Out = tag_type<decltype(out_tag)>;
        int stop = 0;
        if constexpr (!is_hot_kernel(KIND, OP, dtype_of<In>::value, dtype_of<Out>::value)) {
            if constexpr (KIND == GR_KIND_REDUCE)
                stop = each_reduce_alternative<OP, In, Out>(each, context);
            else
                stop = each_name<GR_JIT_SCAN_SEGMENTS, ScanSegKernel>(
                    JitScanKernels(OP, dtype_of<In>::value, dtype_of<Out>::value), each, context);
        }
        return stop;
    });
}

template <gr_op OP>
int each_range_kernel(Each each, void *context) {
    return each_segment_types<false, GR_KIND_REDUCE, OP>([&](auto in_tag, auto out_tag) {
        return each_range_alternative<OP, tag_type<decltype(in_tag)>, tag_type<decltype(out_tag)>>(each, context);
    });
}

// The segmented scans' kernels of every (operator, input, result) the axis scans instantiate (never ahead of time;
// named at run time, so each pair adds a call, not a copy of the loop).
int each_scan_range_name(gr_op op, gr_dtype in, gr_dtype out, Each each, void *context) {
    return each_name<GR_JIT_SCAN_RANGES, ScanRangeKernel>(JitScanRangeKernels(op, in, out), each, context);
}

template <gr_op OP>
int each_scan_range_kernel(Each each, void *context) {
    return each_segment_types<false, GR_KIND_SCAN, OP>([&](auto in_tag, auto out_tag) {
        return each_scan_range_name(OP, dtype_of<tag_type<decltype(in_tag)>>::value,
                                    dtype_of<tag_type<decltype(out_tag)>>::value, each, context);
    });
}

// Each kernel once: the kernels of several (operator, input, result) may be one (CUB's scan-by-key has an init
// kernel per accumulator).
struct Once {
    Each each;
    void *context;
    std::set<std::pair<int, std::string>> seen;
    static int call(void *self, gr_jit_program program, const char *name) {
        Once &o = *static_cast<Once *>(self);
        return o.seen.emplace(int(program), name).second ? o.each(o.context, program, name) : 0;
    }
};

}  // namespace
}  // namespace gr

extern "C" int gr_jit_each_kernel(int (*each_listed)(void *, gr_jit_program, const char *), void *context_listed) {
    using namespace gr;
    Once once{each_listed, context_listed, {}};
    const Each each = &Once::call;
    void *const context = &once;
    int stop = 0;
    char name[256];
    for (int a = 0; a < GR_DTYPE_COUNT && !stop; a++)
        for (int b = 0; b < GR_DTYPE_COUNT && !stop; b++)
            if (gr_copy_strided_jit_name(gr_dtype(a), gr_dtype(b), name, sizeof name))
                stop = each(context, GR_JIT_COPY_STRIDED, name);
#define GR_EACH_REDUCE(OP)                                                               \
    if (!stop) stop = each_segments_kernel<GR_KIND_REDUCE, GR_OP_##OP>(each, context);     \
    if (!stop) stop = each_cub_kernel<GR_KIND_REDUCE, GR_OP_##OP>(each, context);        \
    if (!stop) stop = each_range_kernel<GR_OP_##OP>(each, context);
#define GR_EACH_SCAN(OP)                                                                 \
    if (!stop) stop = each_segments_kernel<GR_KIND_SCAN, GR_OP_##OP>(each, context);       \
    if (!stop) stop = each_cub_kernel<GR_KIND_SCAN, GR_OP_##OP>(each, context);          \
    if (!stop) stop = each_scan_range_kernel<GR_OP_##OP>(each, context);
// an operator whose kernels are another's (ops.def's `kernels` column) runs that one's: nothing of its own
#define GR_OP(NAME, name, scans, flat, result, ...) \
    if (kKernelsOf[GR_OP_##NAME] == GR_OP_##NAME) { GR_EACH_REDUCE(NAME) GR_IF_##scans(GR_EACH_SCAN(NAME)) }
#include "abi/ops.def"
#undef GR_OP
#undef GR_EACH_REDUCE
#undef GR_EACH_SCAN
    for (int d = 0; d < GR_DTYPE_COUNT && !stop; d++)  // variant "exact": each of its operators, whole and along axes
        for (int op = 0; op < GR_OP_COUNT && !stop; op++)
            if ((GR_DTYPES_EXACT_SUM & GR_DTBIT(d)) && (GR_OPS_EXACT_KERNEL & GR_OPBIT(op))) {
                exact_sum_kernel_name(gr_dtype(d), gr_op(op), name, sizeof name);
                stop = each(context, GR_JIT_EXACT_SUM, name);
                for (int columns = 0; columns < 2 && !stop; columns++) {
                    exact_segments_kernel_name(columns, gr_dtype(d), gr_op(op), name, sizeof name);
                    stop = each(context, GR_JIT_EXACT_SEGMENTS, name);
                }
            }
    for (int d = 0; d < GR_DTYPE_COUNT && !stop; d++)  // the exact scan: cumsum and nancumsum (carries: once a type)
        for (int op = 0; op < GR_OP_COUNT && !stop; op++)
            for (int which = 0; which < 3 && !stop && gr_scan_segments_exact_runs(gr_op(op), gr_dtype(d), gr_dtype(d));
                 which++) {
                exact_scan_kernel_name(which, gr_dtype(d), gr_op(op), name, sizeof name);
                stop = each(context, GR_JIT_EXACT_SCAN, name);  // (Once drops the carries' repeats)
            }
    for (int d = 0; d < GR_DTYPE_COUNT && !stop; d++)  // the grouped scatter over ids in any order: each pair it runs
        for (int op = 0; op < GR_OP_COUNT && !stop; op++)
            for (const gr_dtype out : {gr_dtype(d), kDtypeRows[d].sum_as}) {  // into the input's dtype or its sum's
                for (int finish = 0; finish < 2 && !stop && gr_groups_scatter_runs(gr_op(op), gr_dtype(d), out, 0, 0);
                     finish++) {
                    group_scatter_kernel_name(finish, gr_dtype(d), out, gr_op(op), name, sizeof name);
                    stop = each(context, GR_JIT_GROUP_SCATTER, name);
                }
            }
    return stop;
}
