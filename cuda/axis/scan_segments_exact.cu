// scan_segments_exact.cu -- the scan variant "exact" (issue 41), the host half: the tiles of the axis layout, the
// workspace and the launches of axis/exact_scan_kernels.cuh, whose kernels compile on first use (abi/jit.h:
// GR_JIT_EXACT_SCAN), so the variant adds host code only to the build.  A whole array is one segment
// (variants/scan_exact.cu).
#include "abi/jit.h"
#include "axis/exact_scan_kernels.cuh"
#include "variants/entry.cuh"

namespace gr {
namespace {

// What the launch needs of an input dtype's accumulating type: a tile's elements and a tile's workspace words.
struct ExactScanSizes {
    int64_t tile, words;
};

ExactScanSizes exact_scan_sizes(gr_dtype in) {
    if (in == GR_FLOAT64) return {ExactScanShape<double>::kTile, ExactScanShape<double>::kWords};
    return {ExactScanShape<float>::kTile, ExactScanShape<float>::kWords};
}

gr_status launch(const char *name, int64_t grid, void **args, cudaStream_t stream, int *cuda_error) {
    void *kernel = nullptr;
    const gr_status st = gr_jit_kernel(GR_JIT_EXACT_SCAN, name, &kernel, cuda_error);
    if (st != GR_OK) return st;
    return cuda_status(cudaLaunchKernel(kernel, dim3(unsigned(grid)), dim3(256), args, 0, stream), cuda_error);
}

gr_status scan_segments_exact(const gr_args *a, const gr_segments *s, size_t *ws_bytes, int *cuda_error) {
    const ExactScanSizes sizes = exact_scan_sizes(a->in_dtype);
    ExactScanLayout g{s->count[0], s->count[1], s->in_stride[0], s->in_stride[1], s->reduce_in_stride,
                      s->out_stride[0], s->out_stride[1], s->reduce_out_stride, s->reduce_count, 0,
                      a->exclusive != 0};
    const int64_t segments = g.c0 * g.c1;
    g.tiles = g.R > 0 ? ceil_div(g.R, sizes.tile) : 0;
    // the tiles' words after the counters every call leaves zero (gpureduce.h), which the kernels do not touch
    const size_t words_bytes = g.tiles > 1 ? align_up(size_t(segments * sizes.words * g.tiles) * sizeof(int64_t),
                                                      GR_WORKSPACE_ALIGN)
                                           : 0;
    const size_t need = words_bytes ? GR_WORKSPACE_ZEROED_BYTES + words_bytes : 0;
    if (ws_bytes) {
        *ws_bytes = need;
        return GR_OK;
    }
    if (segments == 0 || g.R == 0) return GR_OK;
    const uintptr_t itemsize = uintptr_t(dtype_itemsize(a->in_dtype));
    if (!a->in || !a->out || reinterpret_cast<uintptr_t>(a->in) % itemsize != 0 ||
        reinterpret_cast<uintptr_t>(a->out) % itemsize != 0 || (need && (!a->workspace || a->workspace_bytes < need)))
        return GR_ERR_INVALID_ARGUMENT;
    const cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
    const int64_t sms = a->sm_count > 0 ? a->sm_count : 1, units = segments * g.tiles, cap = sms * 8;
    const int64_t grid = units < cap ? units : cap;
    const void *in = a->in;
    void *out = a->out;
    int64_t *words = need ? reinterpret_cast<int64_t *>(static_cast<char *>(a->workspace) + GR_WORKSPACE_ZEROED_BYTES)
                          : nullptr;
    char name[128];
    if (words) {  // each tile's sum, then each tile's prefix
        exact_scan_kernel_name(0, a->in_dtype, a->op, name, sizeof name);
        void *totals[] = {&in, &g, &words};
        gr_status st = launch(name, grid, totals, stream, cuda_error);
        if (st != GR_OK) return st;
        exact_scan_kernel_name(1, a->in_dtype, a->op, name, sizeof name);
        void *carries[] = {&words, &g.tiles};
        st = launch(name, segments * sizes.words, carries, stream, cuda_error);
        if (st != GR_OK) return st;
    }
    exact_scan_kernel_name(2, a->in_dtype, a->op, name, sizeof name);
    void *scan[] = {&in, &out, &g, &words};
    return launch(name, grid, scan, stream, cuda_error);
}

}  // namespace
}  // namespace gr

// Whether the exact scan kernels run (op, in, out): a floating cumsum or nancumsum into the input's dtype.
extern "C" int gr_scan_segments_exact_runs(gr_op op, gr_dtype in, gr_dtype out) {
    return op >= 0 && op < GR_OP_COUNT && (GR_OPS_EXACT_SCAN_KERNEL & GR_OPBIT(op)) && in >= 0 && in < GR_DTYPE_COUNT &&
           (GR_DTYPES_EXACT_SUM & GR_DTBIT(in)) && out == in;
}

extern "C" gr_status gr_scan_segments_exact(const gr_args *a, const gr_segments *s, size_t *ws_bytes, int *cuda_error) {
    if (!a || !s || !gr_scan_segments_exact_runs(a->op, a->in_dtype, a->out_dtype) || s->ranges || s->mask ||
        s->second || s->count[0] < 0 || s->count[1] < 0 || s->reduce_count < 0)
        return GR_ERR_UNSUPPORTED_OP;
    return gr::scan_segments_exact(a, s, ws_bytes, cuda_error);
}
