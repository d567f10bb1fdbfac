// scan_auto.cu -- variant `auto` for scans: the fastest correct scan, chosen from measurements.
//
// The default must give the same bits on every run (issue 14: a pytest suite comparing against numpy.cumsum
// flaked).  decoupled_lookback and CUB group a floating prefix by timing, so floating sums and products go to
// ordered_lookback, whose look-back folds window totals in a fixed order; integer sums (exact whatever the
// grouping), min and max take the fastest measured path.
//
// Measured on an H200 (kernel time, cold L2, median of 10; benchmarks/results/scans_h200.md), cumsum, µs:
//                      float32                              float64                   int64
//    n      ordered  two-pass  decoupled   CUB    ordered  two-pass  decoupled   CUB    decoupled   CUB
//    2^14      7.2      9.5       6.4      7.1      7.5      9.4       6.6      8.0       6.5       7.1
//    2^18      8.4      9.8       7.7      8.3      9.6     10.9       8.9      9.8       8.9       9.6
//    2^22     23.6     20.8      20.2     19.8     35.3     35.0      33.0     30.4      33.1      31.6
//    2^24     62.4     63.5      56.4     51.4    108.0    115.8     102.0     91.3     100.0     104.6
//    2^28    828      814       754      688     1558     1608      1464     1308      1461      1527
// (two-pass: reduce_then_scan, deterministic too, reading the input twice.)  Among the deterministic scans
// ordered_lookback is the fastest or within 2% of reduce_then_scan everywhere but float32 around 2^22 (13%
// slower there), so it takes every floating sum and product.  Since the tile status of a 64-bit accumulator is
// one 128-bit word, decoupled_lookback beats CUB for int64 except around 2^22 (5% slower), so it takes every
// other scan but one: widening sums (int32 -> int64 cumsum) from 2^22 elements on are fastest with
// reduce_then_scan, which reads the narrow input twice but writes the wide output once (1186 vs CUB's 1375 µs at
// 2^28, measured before the 128-bit status word).
#include "abi/gpureduce.h"
#include "primitives/types.cuh"

extern "C" gr_status gr_impl_SCAN_decoupled_lookback(const gr_args *, size_t *, int *);
extern "C" gr_status gr_impl_SCAN_reduce_then_scan(const gr_args *, size_t *, int *);
extern "C" gr_status gr_impl_SCAN_ordered_lookback(const gr_args *, size_t *, int *);

namespace {

constexpr int64_t kTwoReadsFrom = int64_t(1) << 22;

// Where the grouping of a prefix changes its bits: a floating sum or product.
bool needs_order(const gr_args *a) {
    return gr::is_inexact_dtype(a->out_dtype) && (a->op == GR_OP_SUM || a->op == GR_OP_PROD);
}

bool widening_sum(const gr_args *a) {
    return a->op == GR_OP_SUM && a->in_dtype == GR_INT32 && a->out_dtype == GR_INT64 && a->n >= kTwoReadsFrom;
}

}  // namespace

extern "C" gr_status gr_impl_SCAN_auto(const gr_args *a, size_t *ws_bytes, int *cuda_error) {
    if (needs_order(a)) return gr_impl_SCAN_ordered_lookback(a, ws_bytes, cuda_error);
    if (widening_sum(a)) return gr_impl_SCAN_reduce_then_scan(a, ws_bytes, cuda_error);
    return gr_impl_SCAN_decoupled_lookback(a, ws_bytes, cuda_error);
}
