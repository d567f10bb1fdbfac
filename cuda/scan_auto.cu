// scan_auto.cu -- variant `auto` for scans: the fastest correct scan, chosen from measurements.
//
// Measured on an H200 (benchmarks/results/h200.md, cold L2, 2^10..2^28 elements): our single-pass decoupled
// look-back beats cub::DeviceScan when the accumulator is 32 bits wide (one 64-bit word carries a tile's
// status and value); with a 64-bit accumulator (int32 -> int64 cumsum, int64, float64) its status needs a
// separate flag with release/acquire fences, and CUB's 128-bit status word is about 1.5x faster.  So `auto`
// dispatches on the accumulator's width.  Neither is bitwise deterministic for floating sums (see
// scan_decoupled_lookback.cu), which is why `auto` is not flagged deterministic.
#include "gpureduce.h"

extern "C" gr_status gr_impl_SCAN_decoupled_lookback(const gr_args *, size_t *, int *);
extern "C" gr_status gr_impl_SCAN_cub(const gr_args *, size_t *, int *);

namespace {

bool wide_accumulator(gr_dtype out) {
    return out == GR_INT64 || out == GR_UINT64 || out == GR_FLOAT64 || out == GR_COMPLEX64 || out == GR_COMPLEX128;
}

}  // namespace

extern "C" gr_status gr_impl_SCAN_auto(const gr_args *a, size_t *ws_bytes, int *cuda_error) {
    return wide_accumulator(a->out_dtype) ? gr_impl_SCAN_cub(a, ws_bytes, cuda_error)
                                          : gr_impl_SCAN_decoupled_lookback(a, ws_bytes, cuda_error);
}
