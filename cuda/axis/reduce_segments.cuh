// reduce_segments.cuh -- the typed entry of the axis reductions for one operator; each reduce_segments_<op>.cu
// instantiates it for its operator, so the operators compile in parallel.  Only the hot set's kernels are
// compiled there (abi/hot_set.def); the rest of an operator's (input, result) pairs are its host half, whose
// kernels compile on first use.
#pragma once
#include "axis/ranges.cuh"
#include "axis/segments.cuh"
#include "axis/segments_dispatch.cuh"

namespace gr {

// The problem as Red's kernels see it; its parameter, if it reads one, from the initial value.
template <class Red>
SegProblem seg_problem(const gr_args *a, const gr_segments *s) {
    return SegProblem{s->count[0], s->count[1], s->in_stride[0], s->in_stride[1], s->reduce_in_stride,
                      s->mask_stride[0], s->mask_stride[1], s->reduce_mask_stride, s->out_stride[0], s->out_stride[1],
                      s->reduce_count, a->in, s->mask, s->second, a->out, param_of<Red>(a->op, s->initial)};
}

// Plans (ws_bytes != nullptr) or runs the segmented reduction of s->ranges (axis/ranges.cuh) with Reducer Red,
// whose kernels always compile on first use.
template <gr_op OP, class Red, class In, class Out>
gr_status reduce_ranges(const gr_args *a, const gr_segments *s, const SegProblem &p, int alternative,
                        size_t *ws_bytes, int *cuda_error) {
    if constexpr (takes_second<Red>::value) {
        return GR_ERR_UNSUPPORTED_OP;  // dot: no segmented form
    } else {
        if (!ranges_ok(s, ws_bytes != nullptr)) return GR_ERR_INVALID_ARGUMENT;
        const gr_ranges &g = *s->ranges;
        using V = typename Red::V;
        const size_t need = range_workspace(p, g, sizeof(V), a->sm_count);
        if (ws_bytes) {
            *ws_bytes = need;
            return GR_OK;
        }
        const bool writes = p.c0 * p.c1 * g.count > 0;
        if (!segment_args_ok<In, typename Red::Result>(a, writes, writes && p.R > 0, need))
            return GR_ERR_INVALID_ARGUMENT;
        const V init = Red::from_initial(s->initial);
        return range_run(p, g, s->reduce_out_stride, &init, static_cast<char *>(a->workspace),
                         a->sm_count, static_cast<cudaStream_t>(a->stream),
                         JitRangeKernels(OP, dtype_of<In>::value, dtype_of<Out>::value, alternative), cuda_error);
    }
}

// Plans (ws_bytes != nullptr) or runs the reduction `OP` described by a and s.
template <gr_op OP>
gr_status reduce_segments_op(const gr_args *a, const gr_segments *s, size_t *ws_bytes, int *cuda_error) {
    return with_segment_types<false, GR_KIND_REDUCE, OP>(a->in_dtype, a->out_dtype, [&](auto in_tag, auto out_tag) -> gr_status {
        using In = tag_type<decltype(in_tag)>;
        using Out = tag_type<decltype(out_tag)>;
        // the Reducer of this call (vector_norm's depends on its order, logsumexp's on b, dot's on vdot)
        return visit_reducer<OP, In, Out>(s, [&](auto red, int alternative) -> gr_status {
            using Red = decltype(red);
            const SegProblem p = seg_problem<Red>(a, s);
            if (s->ranges) return reduce_ranges<OP, Red, In, Out>(a, s, p, alternative, ws_bytes, cuda_error);
            constexpr SegTypes types = seg_types<Red, In>();
            const size_t need = seg_workspace(p, a->sm_count, types);
            if (ws_bytes) {
                *ws_bytes = need;
                return GR_OK;
            }
            const bool writes = p.c0 * p.c1 > 0;
            if (!segment_args_ok<In, typename Red::Result>(a, writes, writes && p.R > 0, need))
                return GR_ERR_INVALID_ARGUMENT;
            char *scratch = static_cast<char *>(a->workspace) + GR_WORKSPACE_ZEROED_BYTES;
            const cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
            unsigned *flags = static_cast<unsigned *>(a->workspace);
            // the hot set's kernels are compiled here; the others on first use (their host half only is here)
            const typename Red::V init = Red::from_initial(s->initial);
            if constexpr (is_hot_kernel(GR_KIND_REDUCE, OP, dtype_of<In>::value, dtype_of<Out>::value)) {
                return seg_run(p, types, &init, flags, scratch, a->sm_count, stream, AotSegKernels<Red, In>{},
                               cuda_error);
            } else {
                const JitSegKernels kernels(OP, dtype_of<In>::value, dtype_of<Out>::value, alternative);
                return seg_run(p, types, &init, flags, scratch, a->sm_count, stream, kernels, cuda_error);
            }
        });
    });
}

}  // namespace gr

#define GR_REDUCE_SEGMENTS_OP(OP)                                                                            \
    extern "C" gr_status gr_reduce_segments_##OP(const gr_args *a, const gr_segments *s, size_t *ws, int *err) { \
        return gr::reduce_segments_op<GR_OP_##OP>(a, s, ws, err);                                            \
    }
