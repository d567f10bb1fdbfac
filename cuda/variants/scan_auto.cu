// scan_auto.cu -- variant `auto` for scans: the fastest correct scan, chosen from measurements.
//
// The default must give the same bits on every run (issue 14: a pytest suite comparing against numpy.cumsum
// flaked).  decoupled_lookback and CUB group a floating prefix by timing, so floating sums and products go to
// ordered_lookback or pipelined, which fold window totals in a fixed order; exact scans (integers, min, max) take
// the fastest measured path, pipelined too from 2^23 elements.
//
// Measured on an H200 (kernel time, cold L2, median of 10; benchmarks/results/scans_h200.md and its history),
// cumsum, µs:
//                     float32                               float64
//    n      pipelined ordered decoupled  CUB     pipelined ordered decoupled  CUB
//    2^18      15.4      7.8      8.1     8.9      14.0      8.9      8.8     9.4
//    2^20      23.3     10.2     10.2    11.3      13.5     13.1     12.9    12.6
//    2^22      18.5     18.7     18.5    20.0      31.2     30.6     30.7    30.2
//    2^23      28.5     32.3     32.9    30.9      46.0     53.7     52.4    50.1
//    2^24      49.5     55.7     53.2    52.0      83.2     96.7     94.3    90.4
//    2^26     171.8    185.1    178.8   176.7     275.8    346.9    334.3   329.3
//    2^28     523      705      673     676      1064     1338     1296    1295
// (float64 from 2^20 re-measured at 7d40fcd, with pipelined's prefix warp.  The look-back tiles' status words
// now carry a tag of their launch instead of being cleared by a memset before it (tile_status.cuh), 2.4 us less a
// call: `auto` float64 11.5 us at 2^20 (CUB 12.9) and 28.8 at 2^22 (CUB 29.3); 0.73-0.98x CUB at every size from
// 2^10 to 2^24 in float32, float64, int32 and int64.)
// (int64 and int32 -> int64 sums: pipelined from 2^23 too, 0.70-0.87x and 0.59-0.77x CUB.)
// pipelined keeps one block per SM, so it pays off once there are several tiles per SM (from 2^23); below that
// ordered_lookback (floating sums and products) and decoupled_lookback (the rest), whose tiles are all resident
// at once, are the fastest.  Where pipelined's bulk copies cannot run (before Hopper, an output on another 16-byte
// grid than the input), it runs lookahead.  An input within one tile of reduce_then_scan (16 KiB of the wider
// type) is scanned by its single block, with no look-back at all.
#include "abi/gpureduce.h"
#include "primitives/types.cuh"

extern "C" gr_status gr_impl_SCAN_decoupled_lookback(const gr_args *, size_t *, int *);
extern "C" gr_status gr_impl_SCAN_reduce_then_scan(const gr_args *, size_t *, int *);
extern "C" gr_status gr_impl_SCAN_pipelined(const gr_args *, size_t *, int *);
extern "C" gr_status gr_impl_SCAN_ordered_lookback(const gr_args *, size_t *, int *);

namespace {

constexpr int64_t kPipelinedFrom = int64_t(1) << 23;
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
    if (a->n >= kPipelinedFrom) return gr_impl_SCAN_pipelined(a, ws_bytes, cuda_error);
    if (needs_order(a)) return gr_impl_SCAN_ordered_lookback(a, ws_bytes, cuda_error);
    return gr_impl_SCAN_decoupled_lookback(a, ws_bytes, cuda_error);
}
