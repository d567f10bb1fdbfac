// scan_auto.cu -- variant `auto` for scans: the fastest correct scan, chosen from measurements.
//
// Measured on an H200 (benchmarks/results/h200.md, cold L2, 2^10..2^28 elements):
//  * our single-pass decoupled look-back is the fastest for 32-bit accumulators with gpureduce's own
//    operators (min, max, prod, and sums below 2^22 elements: e.g. 7.0 vs 8.1 us at 2^16); for floating sums
//    from 2^22 elements on CUB was faster (689 vs 759 us at 2^28), but neither is deterministic there (below);
//  * with a 64-bit accumulator (int64, float64) the look-back's tile status needs a separate flag with
//    release/acquire fences, and CUB's 128-bit status word is about 1.8x faster at 2^28 (1312 vs 2414 us);
//  * widening sums (int32 -> int64 cumsum) from 2^22 elements on are fastest with reduce_then_scan, which
//    reads the narrow input twice but writes the wide output once (1186 vs CUB's 1375 us at 2^28).
// The default must give the same bits on every run (issue 14: a pytest suite comparing against numpy.cumsum
// flaked).  The look-back and CUB group a floating prefix by timing, so floating sums and products go to a
// deterministic scan; integer sums (exact whatever the grouping), min and max keep the fastest measured path.
// Deterministic floating scans, measured on the H200 (float32 cumsum, kernel time, benchmarks/results/scans_h200.md):
//    n        ordered_lookback  reduce_then_scan  (CUB, not deterministic)
//    2^16          7.0 us            9.7 us            7.6 us
//    2^20         13.8              11.9              11.1
//    2^24         95.7              63.2              51.9
//    2^28       1378               818               679
// ordered_lookback's look-back folds up to 31 predecessors one after another in warp 0, which a lagging prefix
// makes the critical path; reduce_then_scan reads the input twice but its passes run at full bandwidth.  The
// crossover lies between 2^16 and 2^20 (2^18 is the midpoint, not a measured point).
#include "abi/gpureduce.h"
#include "primitives/types.cuh"

extern "C" gr_status gr_impl_SCAN_decoupled_lookback(const gr_args *, size_t *, int *);
extern "C" gr_status gr_impl_SCAN_cub(const gr_args *, size_t *, int *);
extern "C" gr_status gr_impl_SCAN_reduce_then_scan(const gr_args *, size_t *, int *);
extern "C" gr_status gr_impl_SCAN_ordered_lookback(const gr_args *, size_t *, int *);

namespace {

constexpr int64_t kTwoReadsFrom = int64_t(1) << 22;

bool wide_accumulator(gr_dtype out) {
    return out == GR_INT64 || out == GR_UINT64 || out == GR_FLOAT64 || out == GR_COMPLEX64 || out == GR_COMPLEX128;
}

constexpr int64_t kTwoPassOrderedFrom = int64_t(1) << 18;

// Where the grouping of a prefix changes its bits: a floating sum or product.
bool needs_order(const gr_args *a) {
    return gr::is_inexact_dtype(a->out_dtype) && (a->op == GR_OP_SUM || a->op == GR_OP_PROD);
}

bool prefer_cub(const gr_args *a) { return wide_accumulator(a->out_dtype); }

bool widening_sum(const gr_args *a) {
    return a->op == GR_OP_SUM && a->in_dtype == GR_INT32 && a->out_dtype == GR_INT64 && a->n >= kTwoReadsFrom;
}

}  // namespace

extern "C" gr_status gr_impl_SCAN_auto(const gr_args *a, size_t *ws_bytes, int *cuda_error) {
    if (needs_order(a))
        return a->n >= kTwoPassOrderedFrom ? gr_impl_SCAN_reduce_then_scan(a, ws_bytes, cuda_error)
                                           : gr_impl_SCAN_ordered_lookback(a, ws_bytes, cuda_error);
    if (widening_sum(a)) return gr_impl_SCAN_reduce_then_scan(a, ws_bytes, cuda_error);
    return prefer_cub(a) ? gr_impl_SCAN_cub(a, ws_bytes, cuda_error)
                         : gr_impl_SCAN_decoupled_lookback(a, ws_bytes, cuda_error);
}
