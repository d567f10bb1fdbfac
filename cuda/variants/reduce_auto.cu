// reduce_auto.cu -- variant `auto`, the default: what the progression leads to on a modern GPU.
//
// * 16-byte vector loads, kUnroll of them issued before any is used, so every thread keeps 64 bytes in
//   flight (a scalar head and tail take care of pointers that are not 16-byte aligned and odd lengths);
// * a grid sized to the device (kBlocksPerSm blocks per SM), each block striding over 16 KB tiles
//   (thread coarsening);
// * one accumulator per loaded lane: short dependency chains, and a sum whose error stays close to a
//   tree's instead of growing with the per-thread element count;
// * the shuffle block reduction, then "last block finishes" (CUDA sample threadFenceReduction): every
//   block stores its partial, fences, takes a ticket; the block holding the last ticket reduces the
//   partials in a fixed order.  One launch at every size, and deterministic: the partition depends on n,
//   the grid and the pointer's alignment only, never on timing.
#include "primitives/block.cuh"
#include "variants/entry.cuh"

namespace gr {
namespace {

constexpr int kUnroll = 4;
constexpr int kBlocksPerSm = 4;  // 1024 threads x 64 B in flight per SM: well past Little's law on H200

template <class In, class Acc, class Op>
__global__ void __launch_bounds__(kBlock) auto_reduce_kernel(const In *__restrict__ in, int64_t n, int64_t head,
                                                             Acc *partials, unsigned *ticket, Acc *out) {
    using V = Vec16<In>;
    constexpr int kLanes = V::kLanes;
    __shared__ Acc warp_partials[kBlock / kWarp];
    __shared__ Acc warp_partials_last[kBlock / kWarp];
    __shared__ bool is_last;

    const int64_t gtid = int64_t(blockIdx.x) * kBlock + threadIdx.x;
    const int64_t stride = int64_t(gridDim.x) * kBlock;
    const int64_t nvec = (n - head) / kLanes;
    const V *vin = reinterpret_cast<const V *>(in + head);

    Acc acc[kUnroll][kLanes];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int k = 0; k < kLanes; ++k) acc[u][k] = Op::template identity<Acc>();

    // A block reads kUnroll * kBlock consecutive vectors (16 KB) per step, like a CUB tile, then jumps a
    // grid's worth of tiles ahead: DRAM sees long contiguous runs rather than the whole grid's threads
    // interleaved vector by vector.
    constexpr int64_t kTileVecs = int64_t(kUnroll) * kBlock;
    const int64_t full_tiles = nvec / kTileVecs;
    for (int64_t t = blockIdx.x; t < full_tiles; t += gridDim.x) {
        const V *p = vin + t * kTileVecs + threadIdx.x;
        V x[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) x[u] = p[u * kBlock];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
            for (int k = 0; k < kLanes; ++k) acc[u][k] = Op()(acc[u][k], static_cast<Acc>(x[u].lane[k]));
    }
    // the vectors after the last whole tile (fewer than one tile)
    for (int64_t i = full_tiles * kTileVecs + gtid; i < nvec; i += stride) {
        const V x = vin[i];
#pragma unroll
        for (int k = 0; k < kLanes; ++k) acc[0][k] = Op()(acc[0][k], static_cast<Acc>(x.lane[k]));
    }
    // The scalar elements before the first 16-byte boundary and after the last whole vector.
    const int64_t tail_start = head + nvec * kLanes;
    if (gtid < head) acc[1 % kUnroll][0] = Op()(acc[1 % kUnroll][0], static_cast<Acc>(in[gtid]));
    if (gtid < n - tail_start) acc[2 % kUnroll][0] = Op()(acc[2 % kUnroll][0], static_cast<Acc>(in[tail_start + gtid]));

    // Fold the accumulators pairwise.
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int w = kLanes / 2; w > 0; w >>= 1)
#pragma unroll
            for (int k = 0; k < w; ++k) acc[u][k] = Op()(acc[u][k], acc[u][k + w]);
#pragma unroll
    for (int w = kUnroll / 2; w > 0; w >>= 1)
#pragma unroll
        for (int u = 0; u < w; ++u) acc[u][0] = Op()(acc[u][0], acc[u + w][0]);

    Acc v = block_reduce_shfl<Op, kBlock>(acc[0][0], warp_partials);
    if (gridDim.x == 1) {
        if (threadIdx.x == 0) *out = v;
        return;
    }
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = v;
        __threadfence();  // the partial is visible device-wide before the ticket is taken
        is_last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!is_last) return;
    Acc w = Op::template identity<Acc>();
    for (unsigned j = threadIdx.x; j < gridDim.x; j += kBlock) w = Op()(w, load_cg(partials + j));
    w = block_reduce_shfl<Op, kBlock>(w, warp_partials_last);
    if (threadIdx.x == 0) {
        *out = w;
        *ticket = 0;  // leave the workspace counters zero for the next call
    }
}

struct Plan {
    int64_t head;  // scalar elements before the first 16-byte boundary
    int blocks;
};

template <class In>
Plan plan(const In *in, int64_t n, int sm_count) {
    constexpr int kLanes = Vec16<In>::kLanes;
    const int64_t misalign = int64_t(reinterpret_cast<uintptr_t>(in) % 16);
    int64_t head = misalign ? (16 - misalign) / int64_t(sizeof(In)) : 0;
    if (head > n) head = n;
    const int64_t want = ceil_div(n, int64_t(kBlock) * kLanes * kUnroll);
    const int64_t cap = int64_t(sm_count > 0 ? sm_count : 1) * kBlocksPerSm;
    return Plan{head, int(want < cap ? want : cap)};
}

struct Auto {
    template <class In, class Acc, class Op>
    static cudaError_t workspace(int64_t n, int sm_count, size_t *bytes) {
        Scratch s(nullptr);
        // the partial count does not depend on the pointer; plan with an aligned one
        s.take<Acc>(plan(static_cast<const In *>(nullptr), n, sm_count).blocks);
        *bytes = s.used;
        return cudaSuccess;
    }
    template <class In, class Acc, class Op>
    static cudaError_t run(const In *in, Acc *out, int64_t n, const Ctx &c) {
        const Plan p = plan(in, n, c.sm_count);
        Scratch s(c.scratch);
        Acc *partials = s.take<Acc>(p.blocks);
        auto_reduce_kernel<In, Acc, Op><<<p.blocks, kBlock, 0, c.stream>>>(in, n, p.head, partials, c.flags, out);
        return cudaGetLastError();
    }
};

}  // namespace
}  // namespace gr

GR_REDUCE_VARIANT(auto, gr::Auto)
