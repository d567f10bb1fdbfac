// scan_exact.cu -- the scan variant `exact` (issue 41) of a whole array: its floating cumsum and nancumsum are one
// segment of the axis kernels (axis/scan_segments_exact.cu), every element its exact prefix sum rounded once; an
// integer cumsum, a cummin and a cummax are exact in any order: auto's kernels, its whole-array ones where they take
// the dtype, else its axis kernels over one segment (a float16 or bfloat16 cummax: auto's flat kernels are
// GR_DTYPES_CORE's only).
#include "variants/scan_entry.cuh"

extern "C" int gr_scan_segments_exact_runs(gr_op, gr_dtype, gr_dtype);
extern "C" gr_status gr_scan_segments_workspace(const gr_args *, const gr_segments *, size_t *, int *);
extern "C" gr_status gr_scan_segments(const gr_args *, const gr_segments *, int *);
extern "C" gr_status gr_impl_SCAN_auto(const gr_args *, size_t *, int *);

extern "C" gr_status gr_impl_SCAN_exact(const gr_args *a, size_t *ws_bytes, int *cuda_error) {
    // dispatch.cu checked the operator and the input dtype against variants.def's masks
    const bool own = gr_scan_segments_exact_runs(a->op, a->in_dtype, a->out_dtype) != 0;
    if (!own && (GR_DTYPES_CORE & GR_DTBIT(a->in_dtype))) return gr_impl_SCAN_auto(a, ws_bytes, cuda_error);
    // one dense segment; segments_api.cu routes it to the exact kernels, or the variant's other operators to auto's
    gr_segments s{};
    s.count[0] = s.count[1] = 1;
    s.reduce_count = a->n;
    s.reduce_in_stride = s.reduce_out_stride = 1;
    size_t need = 0;
    gr_status st = gr_scan_segments_workspace(a, &s, &need, cuda_error);
    if (st != GR_OK) return st;
    if (need < GR_WORKSPACE_ZEROED_BYTES) need = GR_WORKSPACE_ZEROED_BYTES;  // what every flat call is given
    if (ws_bytes) {
        *ws_bytes = need;
        return GR_OK;
    }
    if (!a->workspace || a->workspace_bytes < need) return GR_ERR_INVALID_ARGUMENT;
    return gr_scan_segments(a, &s, cuda_error);
}
