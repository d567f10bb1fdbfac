// driver.cuh -- device-wide machinery shared by the variants (layer 3 of 3): the launch context, a bump
// allocator over the caller's scratch, and the multi-pass tree driver of the classic kernels.
#pragma once
#include <cuda_runtime.h>
#include <climits>
#include <cstring>
#include <cstdint>
#include "primitives/block.cuh"
#include "abi/gpureduce.h"
#include "primitives/ops.cuh"
#include "primitives/types.cuh"

#define GR_CUDA_TRY(expr)                              \
    do {                                               \
        cudaError_t gr_err_ = (expr);                  \
        if (gr_err_ != cudaSuccess) return gr_err_;    \
    } while (0)

namespace gr {

inline constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline constexpr size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// What a variant's launcher gets besides its data.
struct Ctx {
    unsigned *flags;       // GR_WORKSPACE_ZEROED_BYTES of counters: zero on entry, to be left zero
    char *scratch;         // the rest of the workspace
    size_t scratch_bytes;
    cudaStream_t stream;
    int sm_count;
};

// Hands out aligned pieces of the scratch area in order.  The same sequence of take<T>(count) calls
// with a null base computes the bytes needed, so a variant's sizing and launching code cannot drift.
struct Scratch {
    char *base;
    size_t used = 0;
    explicit Scratch(char *b) : base(b) {}
    template <class T> T *take(int64_t count) {
        T *p = base ? reinterpret_cast<T *>(base + used) : nullptr;
        used += align_up(static_cast<size_t>(count) * sizeof(T), GR_WORKSPACE_ALIGN);
        return p;
    }
};

inline cudaError_t check_grid(int64_t blocks) {
    return (blocks < 1 || blocks > INT_MAX) ? cudaErrorInvalidConfiguration : cudaSuccess;
}

template <class T, class Op>
__global__ void store_identity_kernel(T *out) { *out = Op::template identity<T>(); }

template <class Acc, class Out>
__global__ void convert_one_kernel(const Acc *in, Out *out) { *out = static_cast<Out>(*in); }

// The block of the seeds' reduction kernels (every whole-array reduction variant's, auto's too): 256 threads, as
// the notes use.  Declared once: the variants compile as one translation unit (setup.py: VARIANT_BUNDLES).
constexpr int kBlock = 256;

// ---- multi-pass tree driver (Harris's scheme: launch the per-tile kernel again on the partials) ----
// A Tile policy provides:
//   kBlock, kScratchPerBlock (Acc values of global scratch each block may use, usually 0),
//   static int64_t grid(int64_t n, int sm_count)  -- blocks for n elements; 1 ends the passes
//   template <class In, class Acc, class Op>
//   static void launch(unsigned grid, cudaStream_t, const In *in, Acc *out, int64_t n, Acc *block_scratch)
//     -- writes one partial per block to out[blockIdx.x]
template <class Tile, class Acc>
void multipass_plan(Scratch &s, int64_t n, int sm_count, Acc **ping, Acc **pong, Acc **block_scratch) {
    const int64_t g1 = Tile::grid(n, sm_count);
    const int64_t g2 = g1 > 1 ? Tile::grid(g1, sm_count) : 0;
    *ping = g1 > 1 ? s.template take<Acc>(g1) : nullptr;
    *pong = g2 > 1 ? s.template take<Acc>(g2) : nullptr;
    *block_scratch = Tile::kScratchPerBlock ? s.template take<Acc>(g1 * Tile::kScratchPerBlock) : nullptr;
}

template <class Tile, class In, class Acc, class Op>
size_t multipass_workspace(int64_t n, int sm_count) {
    Scratch s(nullptr);
    Acc *a, *b, *c;
    multipass_plan<Tile, Acc>(s, n, sm_count, &a, &b, &c);
    return s.used;
}

template <class Tile, class In, class Acc, class Op>
cudaError_t multipass_run(const In *in, Acc *out, int64_t n, const Ctx &c) {
    Scratch s(c.scratch);
    Acc *buf[2], *block_scratch;
    multipass_plan<Tile, Acc>(s, n, c.sm_count, &buf[0], &buf[1], &block_scratch);
    int64_t grid = Tile::grid(n, c.sm_count);
    GR_CUDA_TRY(check_grid(grid));
    Tile::template launch<In, Acc, Op>(unsigned(grid), c.stream, in, grid == 1 ? out : buf[0], n, block_scratch);
    GR_CUDA_TRY(cudaGetLastError());
    // Later passes shrink the partials until one block is left; each pass's partials fit in the
    // buffer the previous pass did not write (the second pass's output is the largest such).
    for (int cur = 0; grid > 1; cur ^= 1) {
        const int64_t m = grid;
        grid = Tile::grid(m, c.sm_count);
        Tile::template launch<Acc, Acc, Op>(unsigned(grid), c.stream, buf[cur], grid == 1 ? out : buf[cur ^ 1], m,
                                            block_scratch);
        GR_CUDA_TRY(cudaGetLastError());
    }
    return cudaSuccess;
}

// Adapts a Tile policy to the Policy interface the entry layer expects (see entry.cuh).
template <class Tile>
struct MultiPass {
    template <class In, class Acc, class Op>
    static cudaError_t workspace(int64_t n, int sm_count, size_t *bytes) {
        *bytes = multipass_workspace<Tile, In, Acc, Op>(n, sm_count);
        return cudaSuccess;
    }
    template <class In, class Acc, class Op>
    static cudaError_t run(const In *in, Acc *out, int64_t n, const Ctx &c) {
        return multipass_run<Tile, In, Acc, Op>(in, out, n, c);
    }
};

// Every thread folds a grid-stride slice of in[0..n) serially (coalesced: neighbouring threads read
// neighbouring elements), then the block reduces its threads' values with shuffles and writes one partial.
// The first level of `thread_coarsening` and `two_pass`.
template <int BLOCK, class In, class Acc, class Op>
__global__ void __launch_bounds__(BLOCK) grid_stride_partials_kernel(const In *in, Acc *partials, int64_t n) {
    __shared__ Acc warp_partials[BLOCK / kWarp];
    const int64_t stride = int64_t(gridDim.x) * BLOCK;
    Acc v = Op::template identity<Acc>();
    for (int64_t i = int64_t(blockIdx.x) * BLOCK + threadIdx.x; i < n; i += stride) v = Op()(v, static_cast<Acc>(in[i]));
    v = block_reduce_shfl<Op, BLOCK>(v, warp_partials);
    if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

// Load element i as the accumulator type, or the identity past the end.
template <class Op, class Acc, class In>
__device__ __forceinline__ Acc load_or_identity(const In *in, int64_t i, int64_t n) {
    return i < n ? static_cast<Acc>(in[i]) : Op::template identity<Acc>();
}

}  // namespace gr
