// hot_set.cuh -- the hot set of abi/hot_set.def as constexpr questions: which dtypes and operators are hot
// (axis/segments_dispatch.cuh: is_hot_kernel and is_hot_cub_kernel, which axis kernels are compiled ahead of
// time).
#pragma once
#include "abi/gpureduce.h"

namespace gr {

constexpr bool is_hot_dtype(gr_dtype d) {
#define GR_HOT_DTYPE(CODE) \
    if (d == CODE) return true;
#define GR_HOT_REDUCE(NAME)
#define GR_HOT_SCAN(NAME)
#define GR_HOT_CUB(KIND, NAME, CODE)
#include "abi/hot_set.def"
#undef GR_HOT_DTYPE
#undef GR_HOT_REDUCE
#undef GR_HOT_SCAN
#undef GR_HOT_CUB
    return false;
}

constexpr bool is_hot_op(gr_kind kind, gr_op op) {
#define GR_HOT_DTYPE(CODE)
#define GR_HOT_REDUCE(NAME) \
    if (kind == GR_KIND_REDUCE && op == GR_OP_##NAME) return true;
#define GR_HOT_SCAN(NAME) \
    if (kind == GR_KIND_SCAN && op == GR_OP_##NAME) return true;
#define GR_HOT_CUB(KIND, NAME, CODE)
#include "abi/hot_set.def"
#undef GR_HOT_DTYPE
#undef GR_HOT_REDUCE
#undef GR_HOT_SCAN
#undef GR_HOT_CUB
    return false;
}

// Whether CUB's baseline of (kind, op) on the caller's dtype d is compiled ahead of time (a GR_HOT_CUB line).
constexpr bool is_hot_cub_call(gr_kind kind, gr_op op, gr_dtype d) {
#define GR_HOT_DTYPE(CODE)
#define GR_HOT_REDUCE(NAME)
#define GR_HOT_SCAN(NAME)
#define GR_HOT_CUB(KIND, NAME, CODE) \
    if (kind == GR_KIND_##KIND && op == GR_OP_##NAME && d == CODE) return true;
#include "abi/hot_set.def"
#undef GR_HOT_DTYPE
#undef GR_HOT_REDUCE
#undef GR_HOT_SCAN
#undef GR_HOT_CUB
    return false;
}

}  // namespace gr
