// reduce_segments_exact.cu -- variant "exact" along axes (issue 41), the host half: which of the two kernels of
// axis/exact_segments_kernels.cuh reads the layout, how r is cut where few segments cannot fill the GPU, the
// workspace, and the launch.  The kernels compile on first use (abi/jit.h: GR_JIT_EXACT_SEGMENTS), so the variant
// adds host code only to the build.
#include <cstring>
#include <utility>
#include "abi/jit.h"
#include "axis/exact_segments_kernels.cuh"
#include "variants/entry.cuh"

namespace gr {
namespace {

int64_t magnitude(int64_t v) { return v < 0 ? -v : v; }

// What the launch needs of an input dtype's accumulating type (float32's digits for the half formats).
struct ExactShape {
    int64_t block;  // threads a block (ExactLaunch)
    size_t words;   // a segment's words in a chunked launch's workspace (ExactSegmentWords)
};

template <class T>
constexpr ExactShape exact_shape() {
    return {ExactLaunch<T>::kBlock, size_t(ExactSegmentWords<T>::kCount)};
}

// The launch of one call: the layout as the kernels read it, which kernel, its grid, the workspace.  Not a
// template: one copy of the host code for every dtype.
struct ExactPlan {
    ExactSegments g;
    bool columns;
    int64_t grid;
    size_t words_bytes, workspace_bytes;
};

ExactPlan exact_plan(const gr_segments *s, int sm_count, ExactShape shape) {
    ExactPlan p{};
    ExactSegments &g = p.g;
    g = {s->count[0], s->count[1], s->in_stride[0], s->in_stride[1], s->reduce_in_stride,
         s->mask_stride[0], s->mask_stride[1], s->reduce_mask_stride, s->out_stride[0], s->out_stride[1],
         s->reduce_count, 0, 1};
    // i1, which the columns kernel spreads over adjacent threads, is the kept axis of the smaller stride
    if (g.c1 == 1 || (g.c0 > 1 && magnitude(g.is0) < magnitude(g.is1))) {
        std::swap(g.c0, g.c1);
        std::swap(g.is0, g.is1);
        std::swap(g.ms0, g.ms1);
        std::swap(g.os0, g.os1);
    }
    const int64_t segments = g.c0 * g.c1, R = g.R, sms = sm_count > 0 ? sm_count : 1;
    // a thread a segment where a warp's worth of i1's elements are nearer each other than r's (a column sum), or
    // the segments are too short for a warp's rounding to pay (a thread reads its own row then); else a warp a
    // segment, its lanes along r
    p.columns = g.c1 > 1 && ((g.c1 >= 32 && magnitude(g.is1) < magnitude(g.ir)) || R <= 256);
    constexpr size_t kMaxWords = size_t(8) << 20;  // the chunks' workspace, at most (its memset is a pass over it)
    const size_t per_segment = shape.words * sizeof(int64_t) + sizeof(unsigned);
    const bool may_cut = size_t(segments) * per_segment <= kMaxWords;
    if (p.columns) {
        const int64_t wanted = sms * 2048;  // threads: a full SM's each
        if (may_cut && 2 * segments < wanted && R > 256) {
            const int64_t by_length = ceil_div(R, int64_t(128));
            g.chunks = ceil_div(wanted, segments) < by_length ? ceil_div(wanted, segments) : by_length;
        }
        g.chunk = g.chunks > 1 ? ceil_div(R, g.chunks) : R;
        g.chunks = g.chunks > 1 ? ceil_div(R, g.chunk) : 1;
        const int64_t blocks = ceil_div(segments * g.chunks, shape.block), cap = sms * 64;
        p.grid = blocks < cap ? blocks : cap;
    } else {
        // warps: a few per SM's scheduler, each chunk long enough for its rounding and atomics not to show
        const int64_t wanted = sms * 16;
        if (may_cut && 2 * segments < wanted && R > 16384) {
            const int64_t by_length = ceil_div(R, int64_t(8192));
            g.chunks = ceil_div(wanted, segments) < by_length ? ceil_div(wanted, segments) : by_length;
        }
        g.chunk = g.chunks > 1 ? ceil_div(ceil_div(R, g.chunks), int64_t(256)) * 256 : R;  // whole batches of loads
        g.chunks = g.chunks > 1 ? ceil_div(R, g.chunk) : 1;
        const int64_t blocks = ceil_div(segments * g.chunks, shape.block / 32), cap = sms * 32;
        p.grid = blocks < cap ? blocks : cap;
    }
    if (p.grid < 1) p.grid = 1;
    // after the counters every call leaves zero (gpureduce.h), which the kernels do not touch: the chunks' words,
    // then a counter a segment, zeroed by a memset before the kernel and left as they end
    p.words_bytes = g.chunks > 1 ? align_up(size_t(segments) * shape.words * sizeof(int64_t), GR_WORKSPACE_ALIGN) : 0;
    p.workspace_bytes = g.chunks > 1 ? GR_WORKSPACE_ZEROED_BYTES + p.words_bytes +
                                           align_up(size_t(segments) * sizeof(unsigned), GR_WORKSPACE_ALIGN)
                                     : 0;
    return p;
}

gr_status reduce_segments_exact(const gr_args *a, const gr_segments *s, size_t *ws_bytes, int *cuda_error) {
    const ExactShape shape = a->in_dtype == GR_FLOAT64 ? exact_shape<double>() : exact_shape<float>();
    const ExactPlan p = exact_plan(s, a->sm_count, shape);
    if (ws_bytes) {
        *ws_bytes = p.workspace_bytes;
        return GR_OK;
    }
    const int64_t segments = p.g.c0 * p.g.c1;
    if (segments == 0) return GR_OK;
    const uintptr_t itemsize = uintptr_t(dtype_itemsize(a->in_dtype));
    if (!a->out || (p.g.R > 0 && !a->in) || reinterpret_cast<uintptr_t>(a->in) % itemsize != 0 ||
        reinterpret_cast<uintptr_t>(a->out) % itemsize != 0 ||
        (p.workspace_bytes && (!a->workspace || a->workspace_bytes < p.workspace_bytes)))
        return GR_ERR_INVALID_ARGUMENT;
    const cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
    void *kernel = nullptr;
    char name[128];
    exact_segments_kernel_name(p.columns, a->in_dtype, a->op, name, sizeof name);
    const gr_status st = gr_jit_kernel(GR_JIT_EXACT_SEGMENTS, name, &kernel, cuda_error);
    if (st != GR_OK) return st;
    int64_t *words = nullptr;
    unsigned *done = nullptr;
    if (p.workspace_bytes) {  // the chunks' sums start from zero
        char *scratch = static_cast<char *>(a->workspace) + GR_WORKSPACE_ZEROED_BYTES;
        words = reinterpret_cast<int64_t *>(scratch);
        done = reinterpret_cast<unsigned *>(scratch + p.words_bytes);
        const gr_status zeroed = cuda_status(
            cudaMemsetAsync(scratch, 0, p.workspace_bytes - GR_WORKSPACE_ZEROED_BYTES, stream), cuda_error);
        if (zeroed != GR_OK) return zeroed;
    }
    const void *in = a->in;
    const unsigned char *mask = s->mask;
    void *out = a->out;
    ExactSegments g = p.g;
    uint64_t initial = 0;  // the kernel's `In initial` reads its first bytes (little-endian: the value's)
    int has_initial = s->initial != nullptr;
    if (has_initial) std::memcpy(&initial, s->initial, size_t(dtype_itemsize(a->in_dtype)));
    void *args[] = {&in, &mask, &out, &g, &initial, &has_initial, &words, &done};
    return cuda_status(cudaLaunchKernel(kernel, dim3(unsigned(p.grid)), dim3(unsigned(shape.block)), args, 0, stream),
                       cuda_error);
}

}  // namespace
}  // namespace gr

// Whether the exact kernels run (op, in, out) along axes: a floating sum, mean or nan form into the input's dtype.
extern "C" int gr_segments_exact_runs(gr_op op, gr_dtype in, gr_dtype out) {
    return op >= 0 && op < GR_OP_COUNT && in >= 0 && in < GR_DTYPE_COUNT && (GR_OPS_EXACT_KERNEL & GR_OPBIT(op)) &&
           (GR_DTYPES_EXACT_SUM & GR_DTBIT(in)) && out == in;
}

extern "C" gr_status gr_reduce_segments_exact(const gr_args *a, const gr_segments *s, size_t *ws_bytes,
                                              int *cuda_error) {
    if (!gr_segments_exact_runs(a->op, a->in_dtype, a->out_dtype) || s->second || s->ranges)
        return GR_ERR_UNSUPPORTED_OP;
    return gr::reduce_segments_exact(a, s, ws_bytes, cuda_error);
}
