// dispatch.cu -- the C ABI: the variant table and the dispatch, both generated from cuda/abi/variants.def.
#include "variants/entry.cuh"

#define GR_VARIANT(kind, name, props, ops, dtypes, seed, doc) \
    extern "C" gr_status gr_impl_##kind##_##name(const gr_args *, size_t *, int *);
#include "abi/variants.def"
#undef GR_VARIANT

namespace {

const gr_variant_info kTable[] = {
#define GR_VARIANT(kind, name, props, ops, dtypes, seed, doc) {GR_KIND_##kind, #name, props, ops, dtypes, seed, doc},
#include "abi/variants.def"
#undef GR_VARIANT
};

const gr::impl_fn kImpl[] = {
#define GR_VARIANT(kind, name, props, ops, dtypes, seed, doc) gr_impl_##kind##_##name,
#include "abi/variants.def"
#undef GR_VARIANT
};

static_assert(sizeof(kTable) / sizeof(kTable[0]) == GR_VARIANT_COUNT, "table and enum out of step");

gr_status check(const gr_args *a, gr_kind kind) {
    if (!a || a->n < 0) return GR_ERR_INVALID_ARGUMENT;
    if (a->variant < 0 || a->variant >= GR_VARIANT_COUNT || kTable[a->variant].kind != kind)
        return GR_ERR_UNKNOWN_VARIANT;
    if (a->op < 0 || a->op >= GR_OP_COUNT || !(kTable[a->variant].ops & GR_OPBIT(a->op))) return GR_ERR_UNSUPPORTED_OP;
    if (a->in_dtype < 0 || a->in_dtype >= GR_DTYPE_COUNT || !(kTable[a->variant].dtypes & GR_DTBIT(a->in_dtype)))
        return GR_ERR_UNSUPPORTED_DTYPE;
    return GR_OK;
}

}  // namespace

extern "C" const gr_variant_info *gr_variant_table(int *count) {
    if (count) *count = GR_VARIANT_COUNT;
    return kTable;
}

extern "C" gr_dtype gr_default_result_dtype(gr_kind kind, gr_op op, gr_dtype in) {
    (void)kind;  // reductions and scans promote alike
    if (in < 0 || in >= GR_DTYPE_COUNT || op < 0 || op >= GR_OP_COUNT) return GR_DTYPE_COUNT;
    return gr::result_dtype(op, in);  // one rule for flat and axis calls (types.cuh)
}

extern "C" gr_status gr_workspace_size(const gr_args *a, size_t *bytes, int *cuda_error) {
    if (!bytes) return GR_ERR_INVALID_ARGUMENT;
    const gr_kind kind = (a && a->variant >= 0 && a->variant < GR_VARIANT_COUNT) ? kTable[a->variant].kind : GR_KIND_REDUCE;
    gr_status st = check(a, kind);
    if (st != GR_OK) return st;
    return kImpl[a->variant](a, bytes, cuda_error);
}

extern "C" gr_status gr_reduce(const gr_args *a, int *cuda_error) {
    gr_status st = check(a, GR_KIND_REDUCE);
    return st != GR_OK ? st : kImpl[a->variant](a, nullptr, cuda_error);
}

extern "C" gr_status gr_scan(const gr_args *a, int *cuda_error) {
    gr_status st = check(a, GR_KIND_SCAN);
    return st != GR_OK ? st : kImpl[a->variant](a, nullptr, cuda_error);
}
