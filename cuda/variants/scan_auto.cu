// scan_auto.cu -- variant `auto` for scans: the fastest correct scan, chosen from measurements.
//
// The default must give the same bits on every run (issue 14: a pytest suite comparing against numpy.cumsum
// flaked).  decoupled_lookback and CUB group a floating prefix by timing, so floating sums and products go to
// ordered_lookback or lookahead, which fold window totals in a fixed order; integer sums (exact whatever the
// grouping), min and max take the fastest measured path.
//
// Measured on an H200 (kernel time, cold L2, median of 10; benchmarks/results/scans_h200.md), cumsum, µs:
//                 float32                        float64                  int64          int32 -> int64
//    n     lookahead ordered   r-t-s  CUB   lookahead ordered  r-t-s  CUB   decoupled  CUB   decoupled r-t-s  CUB
//    2^10      8.0     7.9     5.4    6.7     6.3     6.3     5.1    6.8     6.2     6.6     6.3     5.1    6.5
//    2^14      6.8     6.7     9.1    7.5     7.1     7.2    10.0    8.1     7.1     7.2     7.0     9.1    6.8
//    2^20     10.6    10.0    11.8   11.9    14.0    13.7    16.2   13.4    13.1    13.6    11.6    13.6   12.5
//    2^22     20.8    18.7    20.4   20.3    33.0    30.5    35.5   30.3    30.3    32.2    25.0    27.6   28.4
//    2^24     52.8    54.8    61.9   52.3    93.9    98.1   116.4   92.1    92.1   103.1    77.6    89.7   92.0
//    2^28    669     714     813    690    1319    1349    1609   1309    1310    1530    1107    1184   1372
// (ordered: ordered_lookback; r-t-s: reduce_then_scan, which reads the input twice.)  Floating sums and products
// need a deterministic scan: ordered_lookback, whose tiles fold the earlier windows' sums in order without
// waiting on a chain, is the fastest while most tiles are resident at once (below 2^24 elements: at 2^23
// 31.8 vs 32.9 µs float32, 53.4 vs 53.2 float64), the lookahead scan, whose window prefixes are chained, once
// tiles stream through the device.  Every other scan is
// exact whatever the grouping and takes decoupled_lookback, widening int32 -> int64 sums included (its one
// read of the narrow input beats reduce_then_scan's two at every size above one block).  An input within one tile of
// reduce_then_scan (16 KiB of the wider type) is scanned by its single block, with no look-back at all.
#include "abi/gpureduce.h"
#include "primitives/types.cuh"

extern "C" gr_status gr_impl_SCAN_decoupled_lookback(const gr_args *, size_t *, int *);
extern "C" gr_status gr_impl_SCAN_reduce_then_scan(const gr_args *, size_t *, int *);
extern "C" gr_status gr_impl_SCAN_lookahead(const gr_args *, size_t *, int *);
extern "C" gr_status gr_impl_SCAN_ordered_lookback(const gr_args *, size_t *, int *);

namespace {

constexpr int64_t kLookaheadFrom = int64_t(1) << 24;
constexpr int64_t kOneBlockBytes = 256 * 64;  // one tile of reduce_then_scan: 256 threads x 64 bytes

// Where the grouping of a prefix changes its bits: a floating sum or product.
bool needs_order(const gr_args *a) {
    return gr::is_inexact_dtype(a->out_dtype) && (a->op == GR_OP_SUM || a->op == GR_OP_PROD);
}

bool one_block(const gr_args *a) {
    const int64_t in = gr::dtype_itemsize(a->in_dtype), out = gr::dtype_itemsize(a->out_dtype);
    return a->n * (in > out ? in : out) <= kOneBlockBytes;
}

}  // namespace

extern "C" gr_status gr_impl_SCAN_auto(const gr_args *a, size_t *ws_bytes, int *cuda_error) {
    if (one_block(a)) return gr_impl_SCAN_reduce_then_scan(a, ws_bytes, cuda_error);
    if (needs_order(a))
        return a->n < kLookaheadFrom ? gr_impl_SCAN_ordered_lookback(a, ws_bytes, cuda_error)
                                     : gr_impl_SCAN_lookahead(a, ws_bytes, cuda_error);
    return gr_impl_SCAN_decoupled_lookback(a, ws_bytes, cuda_error);
}
