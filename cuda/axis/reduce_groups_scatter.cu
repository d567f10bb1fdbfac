// reduce_groups_scatter.cu -- grouped sums, means, min and max over ids in any order (gr_ranges form
// GR_RANGES_GROUP_IDS, issue 40),
// the host half: which operators and dtypes scatter, the accumulators' workspace, whether a block's accumulators
// fit in shared memory, and the two launches of axis/group_scatter_kernels.cuh (compiled on first use: abi/jit.h's
// GR_JIT_GROUP_SCATTER, so the grouped sums add host code only to the build).
#include "abi/jit.h"
#include "axis/group_scatter_kernels.cuh"
#include "variants/entry.cuh"

namespace gr {
namespace {

// The accumulators' workspace, at most: beyond it (many groups of a wide array) the grouped call sorts instead.
constexpr size_t kGroupScatterMaxBytes = size_t(64) << 20;
// A group's words absorb 2^31 pieces (a float64 digit's are below 2^32, a float32 word's below 2^31) before one could
// overflow: a sum along an axis longer than this is the sort path's (gr_groups_scatter_runs says so).
constexpr int64_t kGroupScatterMaxLength = (int64_t(1) << 31) - 1;
// A block's accumulators in shared memory up to this size: two blocks an SM (228 KB, 1 KB of it the system's a
// block); above 48 KB the kernel's limit is raised first.  float32: 414 groups, float64: 201.
constexpr size_t kGroupSharedMaxBytes = size_t(110) << 10;
constexpr size_t kDefaultSharedBytes = size_t(48) << 10;

// Words an accumulator of (op, in) holds (GroupWords<In, kOp>::kStride of its kernels).
int64_t group_stride(gr_op op, gr_dtype in) {
    if (kGroupExtremeOps & GR_OPBIT(op)) return GroupWords<float, GR_OP_MAX>::kStride;
    if (in == GR_FLOAT64) return GroupWords<double, GR_OP_SUM>::kStride;
    if (GR_DTYPES_EXACT_SUM & GR_DTBIT(in)) return GroupWords<float, GR_OP_SUM>::kStride;
    return GroupWords<int64_t, GR_OP_SUM>::kStride;
}

// The floating sums, means and nan forms into the input's dtype; integer and bool sums into NumPy's sum dtype;
// min, max and their nan forms of the floating, integer and bool dtypes into the input's.
bool scatter_runs(gr_op op, gr_dtype in, gr_dtype out) {
    if (op < 0 || op >= GR_OP_COUNT || in < 0 || in >= GR_DTYPE_COUNT || out < 0 || out >= GR_DTYPE_COUNT) return false;
    const bool floating = GR_DTYPES_EXACT_SUM & GR_DTBIT(in);
    const dtype_kind kind = kDtypeRows[in].kind;
    const bool integral = kind == dtype_kind::BOOL || kind == dtype_kind::INT || kind == dtype_kind::UINT;
    if (kGroupExtremeOps & GR_OPBIT(op)) return (floating || integral) && out == in;
    if (floating) return (GR_OPS_EXACT_KERNEL & GR_OPBIT(op)) && out == in;
    return integral && op == GR_OP_SUM && out == kDtypeRows[in].sum_as;
}

int64_t magnitude(int64_t v) { return v < 0 ? -v : v; }

struct ScatterPlan {
    GroupLayout g;
    int64_t accumulators, grid, finish_grid;
    size_t acc_bytes, shared_bytes;
};

ScatterPlan scatter_plan(const gr_args *a, const gr_segments *s) {
    ScatterPlan p{};
    GroupLayout &g = p.g;
    g.c0 = s->count[0];
    g.c1 = s->count[1];
    g.is0 = s->in_stride[0];
    g.is1 = s->in_stride[1];
    g.ir = s->reduce_in_stride;
    g.R = s->reduce_count;
    g.os0 = s->out_stride[0];
    g.os1 = s->out_stride[1];
    g.ok = s->reduce_out_stride;
    g.groups = s->ranges->count;
    g.total = g.c0 * g.c1 * g.R;
    g.by_r = Divisor::of(uint64_t(g.R > 0 ? g.R : 1));
    g.by_c1 = Divisor::of(uint64_t(g.c1 > 0 ? g.c1 : 1));
    g.columns = g.c1 > 1 && magnitude(g.is1) < magnitude(g.ir);  // neighbouring threads, neighbouring i1
    const size_t pack = size_t(dtype_itemsize(a->in_dtype)) * kGroupLoads;
    g.packed = g.c0 * g.c1 == 1 && (g.ir == 1 || g.R <= 1) && reinterpret_cast<uintptr_t>(a->in) % pack == 0 &&
               reinterpret_cast<uintptr_t>(s->ranges->bounds) % (sizeof(int64_t) * kGroupLoads) == 0;
    p.accumulators = g.c0 * g.c1 * g.groups;
    p.acc_bytes = size_t(p.accumulators) * size_t(group_stride(a->op, a->in_dtype)) * sizeof(int64_t);
    g.shared = p.acc_bytes <= kGroupSharedMaxBytes;
    p.shared_bytes = g.shared ? p.acc_bytes : 0;  // each word as two 32-bit halves
    const int64_t sms = a->sm_count > 0 ? a->sm_count : 1;
    constexpr int64_t kTile = int64_t(kGroupBlock) * kGroupLoads;
    // a full SM's threads each; with shared accumulators, the blocks that fit an SM's 228 KB
    int64_t per_sm = 2048 / kGroupBlock;
    if (g.shared) {
        const int64_t fit = int64_t((size_t(228) << 10) / (p.shared_bytes + 1024));
        per_sm = fit < per_sm ? (fit > 1 ? fit : 1) : per_sm;
    }
    const int64_t tiles = ceil_div(g.total, kTile), cap = sms * per_sm;
    p.grid = tiles < cap ? (tiles > 0 ? tiles : 1) : cap;
    const int64_t finish = ceil_div(p.accumulators, int64_t(kGroupBlock)), finish_cap = sms * 32;
    p.finish_grid = finish < finish_cap ? (finish > 0 ? finish : 1) : finish_cap;
    return p;
}

gr_status launch(const char *name, dim3 grid, size_t shared, cudaStream_t stream, void **args, int *cuda_error) {
    void *kernel = nullptr;
    const gr_status st = gr_jit_kernel(GR_JIT_GROUP_SCATTER, name, &kernel, cuda_error);
    if (st != GR_OK) return st;
    if (shared > kDefaultSharedBytes) {  // a first-use kernel is a cudaKernel_t: its limit is set per device
        int device = 0;
        cudaError_t e = cudaGetDevice(&device);
        if (e == cudaSuccess)
            e = cudaKernelSetAttributeForDevice(static_cast<cudaKernel_t>(kernel),
                                                cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared), device);
        if (e != cudaSuccess) return cuda_status(e, cuda_error);
    }
    return cuda_status(cudaLaunchKernel(kernel, grid, dim3(kGroupBlock), args, shared, stream), cuda_error);
}

gr_status reduce_groups_scatter(const gr_args *a, const gr_segments *s, size_t *ws_bytes, int *cuda_error) {
    const ScatterPlan p = scatter_plan(a, s);
    const size_t workspace = p.accumulators ? GR_WORKSPACE_ZEROED_BYTES + align_up(p.acc_bytes, GR_WORKSPACE_ALIGN) : 0;
    if (ws_bytes) {
        *ws_bytes = workspace;
        return GR_OK;
    }
    if (p.accumulators == 0) return GR_OK;
    const uintptr_t in_size = uintptr_t(dtype_itemsize(a->in_dtype));
    const uintptr_t out_size = uintptr_t(dtype_itemsize(a->out_dtype));
    if (!a->out || (p.g.total > 0 && (!a->in || !s->ranges->bounds)) || reinterpret_cast<uintptr_t>(a->in) % in_size ||
        reinterpret_cast<uintptr_t>(a->out) % out_size || !a->workspace || a->workspace_bytes < workspace)
        return GR_ERR_INVALID_ARGUMENT;
    const cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
    int64_t *acc = reinterpret_cast<int64_t *>(static_cast<char *>(a->workspace) + GR_WORKSPACE_ZEROED_BYTES);
    gr_status st = cuda_status(cudaMemsetAsync(acc, 0, p.acc_bytes, stream), cuda_error);  // the sums start at 0
    if (st != GR_OK) return st;
    GroupLayout g = p.g;
    const void *in = a->in;
    const int64_t *ids = s->ranges->bounds;
    long long *bad_ids = reinterpret_cast<long long *>(s->ranges->id_notes);
    void *out = a->out;
    char name[160];
    if (g.total > 0) {
        group_scatter_kernel_name(false, a->in_dtype, a->out_dtype, a->op, name, sizeof name);
        void *args[] = {&in, &ids, &g, &acc, &bad_ids};
        st = launch(name, dim3(unsigned(p.grid)), p.shared_bytes, stream, args, cuda_error);
        if (st != GR_OK) return st;
    }
    group_scatter_kernel_name(true, a->in_dtype, a->out_dtype, a->op, name, sizeof name);
    void *args[] = {&acc, &g, &out};
    return launch(name, dim3(unsigned(p.finish_grid)), 0, stream, args, cuda_error);
}

}  // namespace
}  // namespace gr

extern "C" int gr_groups_scatter_runs(gr_op op, gr_dtype in, gr_dtype out, int64_t length, int64_t accumulators) {
    return gr::scatter_runs(op, in, out) && accumulators >= 0 && length >= 0 &&
           ((gr::kGroupExtremeOps & GR_OPBIT(op)) || length <= gr::kGroupScatterMaxLength) &&
           uint64_t(accumulators) <= gr::kGroupScatterMaxBytes / (sizeof(int64_t) * uint64_t(gr::group_stride(op, in)));
}

extern "C" gr_status gr_reduce_groups_scatter(const gr_args *a, const gr_segments *s, size_t *ws_bytes,
                                              int *cuda_error) {
    if (!a || !s || !s->ranges || s->ranges->form != GR_RANGES_GROUP_IDS || s->mask || s->second || s->initial ||
        s->count[0] < 0 || s->count[1] < 0 || s->reduce_count < 0 || s->ranges->count < 0)
        return GR_ERR_INVALID_ARGUMENT;
    if (!gr::scatter_runs(a->op, a->in_dtype, a->out_dtype)) return GR_ERR_UNSUPPORTED_OP;
    if (!(gr::kGroupExtremeOps & GR_OPBIT(a->op)) && s->reduce_count > gr::kGroupScatterMaxLength)
        return GR_ERR_INVALID_ARGUMENT;
    return gr::reduce_groups_scatter(a, s, ws_bytes, cuda_error);
}
