// scan_auto.cu -- variant `auto` for scans: the fastest correct scan, chosen from measurements.
//
// The default must give the same bits on every run (issue 14: a pytest suite comparing against numpy.cumsum
// flaked).  decoupled_lookback and CUB group a floating prefix by timing, so floating sums and products go to
// ordered_lookback or pipelined, which fold window totals in a fixed order; exact scans (integers, min, max) take
// the fastest measured path, pipelined too from 2^23 elements.
//
// Measured on an H200 (kernel time, cold L2, median of 10; benchmarks/results/scans_h200.md), float32 cumsum, µs:
//    n      pipelined  lookahead  ordered  decoupled   CUB
//    2^16        8.4        7.1      7.1       7.2     7.4
//    2^20       12.9       10.1     10.1      10.3    11.3
//    2^22       20.4       20.8     18.8      18.7    20.4
//    2^23       30.0       34.5     31.7      32.3    29.7
//    2^24       51.8       53.2     56.7      54.1    52.0
//    2^26      151.8      176.5    186.4     179.0   180.4
//    2^28      569.6      670.7    716.4     689.5   691.2
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
