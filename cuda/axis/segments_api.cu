// segments_api.cu -- the C ABI of the axis reductions and scans (gpureduce.h, "axis reductions and scans"):
// result dtypes, what is instantiated, and the routing to the per-operator translation units.
#include "axis/segments_dispatch.cuh"

// Every operator of abi/ops.def reduces along axes, those whose `scans` column is YES scan too; each
// (family, operator) whose kernels are its own is its own translation unit, written by setup.py from the list.
#define GR_DECLARE_REDUCE(OP)                                                                              \
    extern "C" gr_status gr_reduce_segments_##OP(const gr_args *, const gr_segments *, size_t *, int *);     \
    extern "C" gr_status gr_reduce_segments_cub_##OP(const gr_args *, const gr_segments *, size_t *, int *);
#define GR_DECLARE_SCAN(OP)                                                                                \
    extern "C" gr_status gr_scan_segments_##OP(const gr_args *, const gr_segments *, size_t *, int *);       \
    extern "C" gr_status gr_scan_segments_cub_##OP(const gr_args *, const gr_segments *, size_t *, int *);
#define GR_OP(NAME, name, scans, flat, result, ...) GR_DECLARE_REDUCE(NAME) GR_IF_##scans(GR_DECLARE_SCAN(NAME))
#include "abi/ops.def"
#undef GR_OP
#undef GR_DECLARE_REDUCE
#undef GR_DECLARE_SCAN
extern "C" int gr_segments_exact_runs(gr_op, gr_dtype, gr_dtype);
extern "C" gr_status gr_reduce_segments_exact(const gr_args *, const gr_segments *, size_t *, int *);
extern "C" int gr_scan_segments_exact_runs(gr_op, gr_dtype, gr_dtype);
extern "C" gr_status gr_scan_segments_exact(const gr_args *, const gr_segments *, size_t *, int *);
extern "C" gr_status gr_reduce_groups_scatter(const gr_args *, const gr_segments *, size_t *, int *);

namespace {

// The variants flagged GR_PROP_AXES run the axis machinery: the baseline among them (cub) through CUB's
// segmented algorithms, the others through gpureduce's kernels.
const gr_variant_info *axis_variant(gr_variant variant, gr_kind kind) {
    int count;
    const gr_variant_info *table = gr_variant_table(&count);
    if (variant < 0 || variant >= count) return nullptr;
    const gr_variant_info *v = &table[variant];
    return v->kind == kind && (v->properties & GR_PROP_AXES) ? v : nullptr;
}

bool is_cub(gr_variant variant, gr_kind kind) { return axis_variant(variant, kind)->properties & GR_PROP_BASELINE; }

// Variant "exact" (GR_PROP_EXACT): its floating sums, means and their nan forms along axes are its own kernels'
// (axis/reduce_segments_exact.cu), as are the scan's floating cumsum and nancumsum (axis/scan_segments_exact.cu);
// what else it takes (integer sums and means, min, max: exact in any order) is the default variant's.

bool is_exact(gr_variant variant, gr_kind kind) {
    int count;
    const gr_variant_info *table = gr_variant_table(&count);
    return variant >= 0 && variant < count && table[variant].kind == kind && (table[variant].properties & GR_PROP_EXACT);
}

gr_variant default_variant(gr_kind kind) {
    int count;
    const gr_variant_info *table = gr_variant_table(&count);
    for (int i = 0; i < count; i++)
        if (table[i].kind == kind && (table[i].properties & GR_PROP_DEFAULT)) return gr_variant(i);
    return gr_variant(0);
}

// The call as the instantiated kernels see it (gr::kernel_types), and whether CUB runs it: empty segments
// (nothing to reduce, only identities to write) go to gpureduce's kernels whatever the variant.
struct Route {
    gr_status status;
    gr_args args;
    bool cub;
};

Route route(const gr_args *a, const gr_segments *s, gr_kind kind) {
    Route r{GR_OK, {}, false};
    if (!a || !s || s->count[0] < 0 || s->count[1] < 0 || s->reduce_count < 0) return {GR_ERR_INVALID_ARGUMENT, {}, false};
    if (!axis_variant(a->variant, kind)) return {GR_ERR_UNKNOWN_VARIANT, {}, false};
    if (a->op < 0 || a->op >= GR_OP_COUNT) return {GR_ERR_UNSUPPORTED_OP, {}, false};
    if (!gr::segments_supported(kind, a->op, a->in_dtype, a->out_dtype)) return {GR_ERR_UNSUPPORTED_DTYPE, {}, false};
    r.args = *a;
    const gr::KernelTypes k = gr::kernel_types(a->op, a->in_dtype, a->out_dtype);
    r.args.in_dtype = k.in;
    r.args.out_dtype = k.out;
    r.cub = is_cub(a->variant, kind) && s->reduce_count > 0;
    // the segmented reductions and scans are gpureduce's (abi/ranges.def's algorithms), CUB's only as a benchmark's peer
    if (s->ranges && is_cub(a->variant, kind)) return {GR_ERR_UNKNOWN_VARIANT, {}, false};
    if (!gr::instantiated(r.cub, kind, a->op, k.in, k.out)) r.status = GR_ERR_UNSUPPORTED_DTYPE;
    return r;
}

gr_status reduce_route(const gr_args *a, const gr_segments *s, size_t *ws, int *err) {
    // grouped sums over ids: their own kernels (axis/reduce_groups_scatter.cu), whatever the variant
    if (a && s && s->ranges && s->ranges->form == GR_RANGES_GROUP_IDS) return gr_reduce_groups_scatter(a, s, ws, err);
    if (a && s && is_exact(a->variant, GR_KIND_REDUCE)) {
        if (gr_segments_exact_runs(a->op, a->in_dtype, a->out_dtype)) return gr_reduce_segments_exact(a, s, ws, err);
        gr_args as_default = *a;
        as_default.variant = default_variant(GR_KIND_REDUCE);
        return reduce_route(&as_default, s, ws, err);
    }
    const Route r = route(a, s, GR_KIND_REDUCE);
    if (r.status != GR_OK) return r.status;
    switch (r.args.op) {
// an operator runs the entry of the operator whose kernels run it (ops.def's `kernels` column: std var's),
// which tells the two apart by gr_args::op
#define GR_CASE(OP, KERNELS)                                                                               \
    case GR_OP_##OP:                                                                                       \
        return r.cub ? gr_reduce_segments_cub_##KERNELS(&r.args, s, ws, err)                               \
                     : gr_reduce_segments_##KERNELS(&r.args, s, ws, err);
#define GR_OP(NAME, name, scans, flat, result, exact, operands, keywords, identity, ufunc, zero_d_axis, param, \
              reference, bound, kernels, ...)                                                                  \
    GR_CASE(NAME, kernels)
#include "abi/ops.def"
#undef GR_OP
#undef GR_CASE
    default: return GR_ERR_UNSUPPORTED_OP;
    }
}

gr_status scan_route(const gr_args *a, const gr_segments *s, size_t *ws, int *err) {
    if (a && s && !s->ranges && is_exact(a->variant, GR_KIND_SCAN)) {
        if (gr_scan_segments_exact_runs(a->op, a->in_dtype, a->out_dtype)) return gr_scan_segments_exact(a, s, ws, err);
        gr_args as_default = *a;
        as_default.variant = default_variant(GR_KIND_SCAN);
        return scan_route(&as_default, s, ws, err);
    }
    const Route r = route(a, s, GR_KIND_SCAN);
    if (r.status != GR_OK) return r.status;
    switch (r.args.op) {
#define GR_CASE(OP, KERNELS)                                                                               \
    case GR_OP_##OP:                                                                                       \
        return r.cub ? gr_scan_segments_cub_##KERNELS(&r.args, s, ws, err)                                 \
                     : gr_scan_segments_##KERNELS(&r.args, s, ws, err);
#define GR_OP(NAME, name, scans, flat, result, exact, operands, keywords, identity, ufunc, zero_d_axis, param, \
              reference, bound, kernels, ...)                                                                  \
    GR_IF_##scans(GR_CASE(NAME, kernels))
#include "abi/ops.def"
#undef GR_OP
#undef GR_CASE
    default: return GR_ERR_UNSUPPORTED_OP;
    }
}

}  // namespace

extern "C" int gr_segments_supported(gr_kind kind, gr_variant variant, gr_op op, gr_dtype in, gr_dtype out) {
    if (is_exact(variant, kind)) {  // exact's own operators and dtypes: into `in` only
        if (kind == GR_KIND_REDUCE ? gr_segments_exact_runs(op, in, in) : gr_scan_segments_exact_runs(op, in, in))
            return out == in;
        variant = default_variant(kind);
    }
    if (!axis_variant(variant, kind) || op < 0 || op >= GR_OP_COUNT || !gr::segments_supported(kind, op, in, out)) return 0;
    const gr::KernelTypes k = gr::kernel_types(op, in, out);
    return gr::instantiated(is_cub(variant, kind), kind, op, k.in, k.out) ? 1 : 0;
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
