// segments_api.cu -- the C ABI of the axis reductions and scans (gpureduce.h, "axis reductions and scans"):
// result dtypes, what is instantiated, and the routing to the per-operator translation units.
#include "segments_dispatch.cuh"

#define GR_SEGMENT_OPS(X) X(SUM) X(PROD) X(MIN) X(MAX) X(MEAN) X(ARGMIN) X(ARGMAX)
#define GR_DECLARE(OP)                                                                                     \
    extern "C" gr_status gr_reduce_segments_##OP(const gr_args *, const gr_segments *, size_t *, int *);     \
    extern "C" gr_status gr_reduce_segments_cub_##OP(const gr_args *, const gr_segments *, size_t *, int *);
GR_SEGMENT_OPS(GR_DECLARE)
#undef GR_DECLARE
#define GR_SCAN_OPS(X) X(SUM) X(PROD) X(MIN) X(MAX)
#define GR_DECLARE(OP)                                                                                     \
    extern "C" gr_status gr_scan_segments_##OP(const gr_args *, const gr_segments *, size_t *, int *);       \
    extern "C" gr_status gr_scan_segments_cub_##OP(const gr_args *, const gr_segments *, size_t *, int *);
GR_SCAN_OPS(GR_DECLARE)
#undef GR_DECLARE

namespace {

// The variants flagged GR_PROP_AXES run the axis machinery: the baseline among them (cub) through CUB's
// segmented algorithms, the others through gpureduce's kernels.
const gr_variant_info *axis_variant(const gr_args *a, gr_kind kind) {
    int count;
    const gr_variant_info *table = gr_variant_table(&count);
    if (a->variant < 0 || a->variant >= count) return nullptr;
    const gr_variant_info *v = &table[a->variant];
    return v->kind == kind && (v->properties & GR_PROP_AXES) ? v : nullptr;
}

bool is_cub(const gr_args *a, gr_kind kind) { return axis_variant(a, kind)->properties & GR_PROP_BASELINE; }

gr_status check(const gr_args *a, const gr_segments *s, gr_kind kind) {
    if (!a || !s || s->count[0] < 0 || s->count[1] < 0 || s->reduce_count < 0) return GR_ERR_INVALID_ARGUMENT;
    if (!axis_variant(a, kind)) return GR_ERR_UNKNOWN_VARIANT;
    if (a->op < 0 || a->op >= GR_OP_COUNT) return GR_ERR_UNSUPPORTED_OP;
    if (!gr::segments_supported(kind, a->op, a->in_dtype, a->out_dtype)) return GR_ERR_UNSUPPORTED_DTYPE;
    return GR_OK;
}

gr_status reduce_route(const gr_args *a, const gr_segments *s, size_t *ws, int *err) {
    gr_status st = check(a, s, GR_KIND_REDUCE);
    if (st != GR_OK) return st;
    switch (a->op) {
#define GR_CASE(OP)                                                                                        \
    case GR_OP_##OP:                                                                                       \
        return is_cub(a, GR_KIND_REDUCE) ? gr_reduce_segments_cub_##OP(a, s, ws, err) : gr_reduce_segments_##OP(a, s, ws, err);
        GR_SEGMENT_OPS(GR_CASE)
#undef GR_CASE
    default: return GR_ERR_UNSUPPORTED_OP;
    }
}

gr_status scan_route(const gr_args *a, const gr_segments *s, size_t *ws, int *err) {
    gr_status st = check(a, s, GR_KIND_SCAN);
    if (st != GR_OK) return st;
    switch (a->op) {
#define GR_CASE(OP)                                                                                        \
    case GR_OP_##OP:                                                                                       \
        return is_cub(a, GR_KIND_SCAN) ? gr_scan_segments_cub_##OP(a, s, ws, err) : gr_scan_segments_##OP(a, s, ws, err);
        GR_SCAN_OPS(GR_CASE)
#undef GR_CASE
    default: return GR_ERR_UNSUPPORTED_OP;
    }
}

}  // namespace

extern "C" int gr_segments_supported(gr_kind kind, gr_op op, gr_dtype in, gr_dtype out) {
    return gr::segments_supported(kind, op, in, out) ? 1 : 0;
}

extern "C" gr_status gr_reduce_segments_workspace(const gr_args *a, const gr_segments *s, size_t *bytes, int *err) {
    if (!bytes) return GR_ERR_INVALID_ARGUMENT;
    return reduce_route(a, s, bytes, err);
}

extern "C" gr_status gr_reduce_segments(const gr_args *a, const gr_segments *s, int *err) {
    return reduce_route(a, s, nullptr, err);
}

extern "C" gr_status gr_scan_segments_workspace(const gr_args *a, const gr_segments *s, size_t *bytes, int *err) {
    if (!bytes) return GR_ERR_INVALID_ARGUMENT;
    return scan_route(a, s, bytes, err);
}

extern "C" gr_status gr_scan_segments(const gr_args *a, const gr_segments *s, int *err) {
    return scan_route(a, s, nullptr, err);
}
