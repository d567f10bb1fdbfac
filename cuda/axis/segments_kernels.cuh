// segments_kernels.cuh -- reductions along axes: many independent reductions ("segments") in one launch.
//
// The caller (gpureduce/_planning/layout.py) has merged the array's axes into two kept dimensions (i0, i1) and one
// reduced dimension r with element strides (gpureduce.h, gr_segments).  Which kernel runs depends on which
// dimension is fastest in memory:
//   * rows_kernel     r is the fastest (a C-ordered row sum): a group of G = 1..32 lanes per segment, G the
//                     row length rounded up to a power of two (so a warp reads 32 consecutive elements even
//                     for rows of 2), shuffles within the group.  Also the second pass over partials.
//   * block_rows_kernel  long rows, few of them: a whole block per (segment, chunk of the row).
//   * columns_kernel  i1 is the fastest (a column sum, a Fortran-ordered row sum): lanes along i1 so loads are
//                     coalesced across segments, threads of a block also split r; a block reduces its
//                     threads' values through shared memory.
// When a segment alone cannot fill the GPU (a few long rows or columns), r is cut into chunks: each chunk
// leaves a partial V in the workspace and rows_kernel folds each segment's partials in a second launch.
// Everything is deterministic: the tree shape depends only on the problem's shape.
//
// The device half: kernels only, no host code, so that NVRTC compiles it too (abi/jit.h: GR_JIT_REDUCE_SEGMENTS).
// The launch plan and the launches are the host half, axis/segments.cuh.
#pragma once
#include <cstdint>
#include <cstring>
#include "primitives/block.cuh"
#include "primitives/reducers.cuh"

namespace gr {

// The problem as the kernels see it (gr_segments, typed pointers erased).
struct SegProblem {
    int64_t c0, c1;        // kept extents: segment s = i0 * c1 + i1
    int64_t is0, is1, ir;  // input strides
    int64_t ms0, ms1, mr;  // mask strides
    int64_t os0, os1;      // output strides
    int64_t R;             // reduced extent
    const void *in;
    const unsigned char *mask;
    const void *second;    // a binary operator's second operand (dot): In elements at the mask's strides
    void *out;
    double param;          // the operator's parameter, for a Reducer that reads one (reducers.cuh: element_of)
};

// Any trivially copyable V through a 32-bit shuffle `shfl(word)`, one word at a time.
template <class V, class Shfl>
__device__ __forceinline__ V shfl_words(const V &v, Shfl shfl) {
    constexpr int kWords = (sizeof(V) + 3) / 4;
    int w[kWords] = {};
    memcpy(w, &v, sizeof(V));
#pragma unroll
    for (int i = 0; i < kWords; i++) w[i] = shfl(w[i]);
    V r;
    memcpy(&r, w, sizeof(V));
    return r;
}

template <class V>
__device__ __forceinline__ V shfl_xor_any(const V &v, int lane_mask) {
    return shfl_words(v, [=](int w) { return __shfl_xor_sync(kFullMask, w, lane_mask); });
}

// Folds the values of each group of `width` adjacent lanes (a power of two up to the warp) into every lane of
// the group, in place, by a butterfly of shuffles.  Every lane of the warp must call it.
template <class Red>
__device__ __forceinline__ void fold_lanes(typename Red::V &v, int width) {
    for (int offset = width / 2; offset > 0; offset >>= 1) v = Red::combine(v, shfl_xor_any(v, offset));
}

// Element r of the segment whose input/mask offsets are `base`/`mbase`, or the identity if masked out; for a
// binary operator, the pair of elements of the two operands.
template <class Red, class In>
__host__ __device__ __forceinline__ typename Red::V seg_load(const SegProblem &p, int64_t base, int64_t mbase, int64_t r) {
    const In &x = static_cast<const In *>(p.in)[base + r * p.ir];
    if constexpr (takes_second<Red>::value) {
        return Red::element(x, static_cast<const In *>(p.second)[mbase + r * p.mr], r);
    } else {
        if (p.mask && !p.mask[mbase + r * p.mr]) return Red::identity();
        return element_of<Red>(x, r, p.param);
    }
}

// Whether every element is read from `in` alone (no mask, no second operand): the vectorised paths.
__host__ __device__ __forceinline__ bool reads_in_alone(const SegProblem &p) { return !p.mask && !p.second; }

// The second operand's row at `base` (its strides are in's where fold_contiguous reads it), or none.
template <class In>
__device__ __forceinline__ const In *second_row(const SegProblem &p, int64_t base) {
    return p.second ? static_cast<const In *>(p.second) + base : nullptr;
}

// Whether unit-stride rows can be read as 16-byte vectors by fold_contiguous: no mask, and a second operand, if
// any, laid out as `in` (same strides) and aligned as it, so both rows reach a 16-byte boundary together.
template <class In>
__host__ __device__ __forceinline__ bool reads_vectors(const SegProblem &p) {
    if (p.mask || p.ir != 1) return false;
    if (!p.second) return true;
    const intptr_t apart = reinterpret_cast<const char *>(p.second) - static_cast<const char *>(p.in);
    return p.mr == 1 && p.ms0 == p.is0 && p.ms1 == p.is1 && apart % 16 == 0;
}

// (i0, i1) of segment s, without a 64-bit division in the common one-kept-dimension cases.
__host__ __device__ __forceinline__ void seg_split(const SegProblem &p, int64_t s, int64_t &i0, int64_t &i1) {
    if (p.c0 == 1) { i0 = 0; i1 = s; }
    else if (p.c1 == 1) { i0 = s; i1 = 0; }
    else { i0 = s / p.c1; i1 = s - i0 * p.c1; }
}

// Folds row[r0 .. r1) (unit stride, no mask) with kLanes cooperating threads, this one being `lane`: a scalar
// head up to 16-byte alignment, then 16-byte vector loads, kUnroll in flight per thread, then a scalar tail.  A
// Reducer of two operands reads the pairs (row[r], row2[r]), row2 aligned as row (reads_vectors).
// The association order depends only on (r0, r1, the row's alignment, kLanes).
template <class Red, class In, int kUnroll, int kLanes>
__device__ __forceinline__ typename Red::V fold_contiguous(const In *row, int64_t r0, int64_t r1, int lane,
                                                           double param, typename Red::V v,
                                                           const In *row2 = nullptr) {
    using Vec = Vec16<In>;
    constexpr int K = Vec::kLanes;
    constexpr bool kPairs = takes_second<Red>::value;
    auto fold = [&](const typename Red::V &acc, const In &x, const In &y, int64_t r) {
        if constexpr (kPairs) return Red::combine(acc, Red::element(x, y, r));
        else return fold_element<Red>(acc, x, r, param);
    };
    const int64_t n = r1 - r0;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(row + r0);
    int64_t head = int64_t((16 - addr % 16) % 16) / int64_t(sizeof(In));
    if (head > n) head = n;
    const In *other = kPairs ? row2 : row;  // what the second element of a pair is read from
    for (int64_t i = lane; i < head; i += kLanes) v = fold(v, row[r0 + i], other[r0 + i], r0 + i);
    const Vec *vec = reinterpret_cast<const Vec *>(row + r0 + head);
    const Vec *vec2 = reinterpret_cast<const Vec *>(other + r0 + head);
    const int64_t nv = (n - head) / K;
    auto fold_vec = [&](const Vec &x, const Vec &y, int64_t j) {
        const int64_t r = r0 + head + j * K;
#pragma unroll
        for (int k = 0; k < K; k++) v = fold(v, x.lane[k], y.lane[k], r + k);
    };
    int64_t j = lane;
    for (; j + (kUnroll - 1) * kLanes < nv; j += kUnroll * kLanes) {  // kUnroll vectors in flight per thread
        Vec x[kUnroll], y[kPairs ? kUnroll : 1];
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            x[u] = vec[j + u * kLanes];
            if constexpr (kPairs) y[u] = vec2[j + u * kLanes];
        }
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            if constexpr (kPairs) fold_vec(x[u], y[u], j + u * kLanes);
            else fold_vec(x[u], x[u], j + u * kLanes);
        }
    }
    for (; j < nv; j += kLanes) fold_vec(vec[j], kPairs ? vec2[j] : vec[j], j);
    for (int64_t i = head + nv * K + lane; i < n; i += kLanes)
        v = fold(v, row[r0 + i], other[r0 + i], r0 + i);
    return v;
}

template <class In>
constexpr bool kVectorizable = 16 % sizeof(In) == 0;
// Several elements per 16-byte vector: what the packed-rows/columns kernels need (never a 16-byte complex128).
template <class In>
constexpr bool kPackable = kVectorizable<In> && sizeof(In) < 16;

// Folds elements r, r + step, ... < r1 of the segment at `base`/`mbase` into v: kUnroll loads in flight per
// thread, each group folded as a pairwise tree (a fixed order, so results are deterministic), or one by one
// where the Reducer folds single elements more cheaply than it combines values (folds_elements).
template <class Red, class In, int kUnroll>
__device__ __forceinline__ typename Red::V fold_strided(const SegProblem &p, int64_t base, int64_t mbase, int64_t r,
                                                        int64_t r1, int64_t step, typename Red::V v) {
    using V = typename Red::V;
    if constexpr (folds_elements<Red>::value) {
        if (reads_in_alone(p)) {  // the elements themselves in flight, folded in one by one (fold_element)
            const In *in = static_cast<const In *>(p.in) + base;
            for (; r + (kUnroll - 1) * step < r1; r += kUnroll * step) {
                In x[kUnroll];
#pragma unroll
                for (int k = 0; k < kUnroll; k++) x[k] = in[(r + k * step) * p.ir];
#pragma unroll
                for (int k = 0; k < kUnroll; k++) v = fold_element<Red>(v, x[k], r + k * step, p.param);
            }
            for (; r < r1; r += step) v = fold_element<Red>(v, in[r * p.ir], r, p.param);
            return v;
        }
    }
    for (; r + (kUnroll - 1) * step < r1; r += kUnroll * step) {
        V x[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; k++) x[k] = seg_load<Red, In>(p, base, mbase, r + k * step);
#pragma unroll
        for (int h = 1; h < kUnroll; h *= 2)
#pragma unroll
            for (int k = 0; k + h < kUnroll; k += 2 * h) x[k] = Red::combine(x[k], x[k + h]);
        v = Red::combine(v, x[0]);
    }
    for (; r < r1; r += step) v = Red::combine(v, seg_load<Red, In>(p, base, mbase, r));
    return v;
}

// Writes a segment's result: the finished value to out, or (partials != nullptr) the V to its chunk slot.
template <class Red>
__host__ __device__ __forceinline__ void seg_store(const SegProblem &p, int64_t s, int64_t chunk, int64_t chunks,
                                          typename Red::V v, typename Red::V *partials, const typename Red::V &init) {
    if (partials) {
        partials[s * chunks + chunk] = v;
        return;
    }
    int64_t i0, i1;
    seg_split(p, s, i0, i1);
    static_cast<typename Red::Result *>(p.out)[i0 * p.os0 + i1 * p.os1] =
        finish_of<Red>(Red::combine(v, init), p.param);
}

// Where a thread stands among the groups of `group` lanes (a power of two dividing the warp) that take one work
// item each: shifts, not divisions (a 64-bit division per warp cost more than reading a row of 1024 float32
// elements on the H200).
struct LaneGroups {
    int sub;            // lane within the group
    int group_in_warp;  // the group's place in its warp
    int64_t first;      // the thread's first work item
    int64_t per_grid;   // groups in the grid: the step between a group's work items
    __device__ explicit LaneGroups(int group) {
        const int log_group = __ffs(group) - 1, lane = threadIdx.x % kWarp;
        sub = lane & (group - 1);
        group_in_warp = lane >> log_group;
        per_grid = int64_t(gridDim.x) * (blockDim.x >> log_group);
        first = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> log_group;
    }
};

// Aligned unit-stride rows of at most `group` whole vectors, read from `in` alone (SegPlan::vec_rows): one
// vector per lane, kItems rows per step, all loads issued before any is used.  Its own kernel: inside
// rows_kernel its registers pushed the long-row path into local memory (a 48-byte stack; (2^14, 2^10) float32
// row sums 29 against 24.6 us on the H200).  Two rows per step for 8- and 16-bit elements, whose 8 or 16 lanes
// per vector spilled with four (int8 sums of (2^20, 64): 78.6 against 53.0 us; float16 of (2^20, 32): 40.2
// against 35.7).
template <class Red, class In>
__global__ void __launch_bounds__(256, 4) vector_rows_kernel(SegProblem p, int group, typename Red::V init) {
    using V = typename Red::V;
    using Vec = Vec16<In>;
    constexpr int kItems = sizeof(In) <= 2 ? 2 : 4, K = Vec::kLanes;
    const LaneGroups g(group);
    const int64_t items = p.c0 * p.c1, nv = p.R / K;
    for (int64_t item0 = g.first; item0 - g.group_in_warp < items; item0 += kItems * g.per_grid) {
        Vec x[kItems];
        int64_t base[kItems];  // may be negative (a reversed view): `live` says which items exist
        bool live[kItems];
#pragma unroll
        for (int u = 0; u < kItems; u++) {
            const int64_t s = item0 + u * g.per_grid;
            base[u] = 0;
            live[u] = s < items;
            if (live[u]) {
                int64_t i0, i1;
                seg_split(p, s, i0, i1);
                base[u] = i0 * p.is0 + i1 * p.is1;
                const Vec *row = reinterpret_cast<const Vec *>(static_cast<const In *>(p.in) + base[u]);
                if (g.sub < nv) x[u] = row[g.sub];
            }
        }
#pragma unroll
        for (int u = 0; u < kItems; u++) {
            V v = Red::identity();
            if (live[u]) {
                if (g.sub < nv) {
#pragma unroll
                    for (int k = 0; k < K; k++) v = fold_element<Red>(v, x[u].lane[k], g.sub * K + k, p.param);
                }
                for (int64_t r = nv * K + g.sub; r < p.R; r += group)
                    v = fold_element<Red>(v, static_cast<const In *>(p.in)[base[u] + r], r, p.param);
            }
            fold_lanes<Red>(v, group);
            if (live[u] && g.sub == 0) seg_store<Red>(p, item0 + u * g.per_grid, 0, 1, v, nullptr, init);
        }
    }
}

// G lanes per work item (segment, chunk); a work item covers r in [chunk * L, min(R, (chunk + 1) * L)).
// kFromPartials: the input is the previous pass's partials, V values laid out [segment][R] contiguously.
// Rows of at most G elements (one per lane) take kItems work items per step, so every lane has kItems
// independent loads in flight: a 2-element row is 8 bytes, and latency, not bandwidth, would bound it.
template <class Red, class In, bool kFromPartials>
__global__ void __launch_bounds__(256, 4) rows_kernel(SegProblem p, int group, int64_t chunks, int64_t L,
                                                      typename Red::V *partials, typename Red::V init) {
    using V = typename Red::V;
    constexpr int kItems = 4;
    const LaneGroups g(group);
    const int sub = g.sub, group_in_warp = g.group_in_warp;
    const int64_t items = p.c0 * p.c1 * chunks, groups_per_grid = g.per_grid, first = g.first;
    // long unit-stride rows: each lane folds 16-byte vectors (fold_contiguous handles any alignment)
    const bool vector_rows = !kFromPartials && kVectorizable<In> && reads_vectors<In>(p) && group == kWarp && L >= 256;
    if constexpr (!kFromPartials) if (chunks == 1 && p.R <= group) {
        // one element per lane: kItems rows per step
        for (int64_t item0 = first; item0 - group_in_warp < items; item0 += kItems * groups_per_grid) {
            V v[kItems];
#pragma unroll
            for (int u = 0; u < kItems; u++) {
                const int64_t s = item0 + u * groups_per_grid;
                v[u] = Red::identity();
                if (s < items && sub < p.R) {
                    int64_t i0, i1;
                    seg_split(p, s, i0, i1);
                    v[u] = seg_load<Red, In>(p, i0 * p.is0 + i1 * p.is1, i0 * p.ms0 + i1 * p.ms1, sub);
                }
            }
#pragma unroll
            for (int u = 0; u < kItems; u++) {
                fold_lanes<Red>(v[u], group);
                const int64_t s = item0 + u * groups_per_grid;
                if (s < items && sub == 0) seg_store<Red>(p, s, 0, 1, v[u], partials, init);
            }
        }
        return;
    }
    for (int64_t item = first; item - group_in_warp < items; item += groups_per_grid) {
        // Every lane of the warp stays in the loop until the whole warp is done, for the shuffles.
        const bool live = item < items;
        V v = Red::identity();
        int64_t s = 0, chunk = 0;
        if (live) {
            s = chunks == 1 ? item : item / chunks;
            chunk = item - s * chunks;
            const int64_t r0 = chunk * L, r1 = r0 + L < p.R ? r0 + L : p.R;
            if constexpr (kFromPartials) {
                const V *src = static_cast<const V *>(p.in) + s * p.R;
                for (int64_t r = r0 + sub; r < r1; r += group) v = Red::combine(v, src[r]);
            } else {
                int64_t i0, i1;
                seg_split(p, s, i0, i1);
                const int64_t base = i0 * p.is0 + i1 * p.is1, mbase = i0 * p.ms0 + i1 * p.ms1;
                if (vector_rows) {
                    if constexpr (kVectorizable<In>)
                        v = fold_contiguous<Red, In, 8, kWarp>(static_cast<const In *>(p.in) + base, r0, r1, sub,
                                                               p.param, v, second_row<In>(p, base));
                } else {
                    v = fold_strided<Red, In, 4>(p, base, mbase, r0 + sub, r1, group, v);
                }
            }
        }
        fold_lanes<Red>(v, group);
        if (live && sub == 0) seg_store<Red>(p, s, chunk, chunks, v, partials, init);
    }
}

constexpr int kSegBlock = 256;

// Rows packed back to back, several per 16-byte vector (R * sizeof(In) divides 16, e.g. pairs of float32):
// a thread loads one whole vector and finishes the rows inside it; no shuffles.  Many blocks with few
// registers hide the latency by parallelism (measured on the H200: one vector per thread beat two or four).
// The row length kR is a compile-time constant (R is a power of two below the vector's lanes): with a runtime R
// the vector went through local memory and the divisions by R cost more than the loads (9.3 against 7.5 us for
// (2^20, 2) float32 on the H200, .probe-measured).
template <int kR, class Red, class In>
__device__ __forceinline__ void packed_rows(const SegProblem &p, const typename Red::V &init) {
    using V = typename Red::V;
    using Vec = Vec16<In>;
    using Result = typename Red::Result;
    constexpr int K = Vec::kLanes, kPer = K / kR;  // rows per vector
    const int64_t S = p.c1, nvec = S / kPer;       // c0 == 1 here
    const Vec *vec = static_cast<const Vec *>(p.in);
    Result *out = static_cast<Result *>(p.out);
    const int64_t stride = int64_t(gridDim.x) * blockDim.x, t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    auto finish_row = [&](auto element) {  // element(k): the row's element k
        V v = Red::identity();
#pragma unroll
        for (int k = 0; k < kR; k++) v = fold_element<Red>(v, element(k), k, p.param);
        return finish_of<Red>(Red::combine(v, init), p.param);
    };
    // a vector's results into a unit-stride output as one store, where they fit one (a warp writes one span)
    struct alignas(kPer * sizeof(Result) <= 16 ? kPer * sizeof(Result) : alignof(Result)) Results { Result r[kPer]; };
    const bool one_store = kPer * sizeof(Result) <= 16 && p.os1 == 1 &&
                           reinterpret_cast<uintptr_t>(out) % alignof(Results) == 0;
    for (int64_t j = t; j < nvec; j += stride) {
        const Vec x = vec[j];
        Results r;
#pragma unroll
        for (int q = 0; q < kPer; q++) r.r[q] = finish_row([&](int k) { return x.lane[q * kR + k]; });
        if (one_store) {
            reinterpret_cast<Results *>(out)[j] = r;
        } else {
#pragma unroll
            for (int q = 0; q < kPer; q++) out[(j * kPer + q) * p.os1] = r.r[q];
        }
    }
    for (int64_t s = nvec * kPer + t; s < S; s += stride) {  // rows after the last whole vector
        const In *row = static_cast<const In *>(p.in) + s * kR;
        out[s * p.os1] = finish_row([&](int k) { return row[k]; });
    }
}

// packed_rows for the row length p.R: 1, 2, 4, ... below the vector's lanes.
template <int kR, class Red, class In>
__device__ __forceinline__ void packed_rows_of_length(const SegProblem &p, const typename Red::V &init) {
    if constexpr (kR < Vec16<In>::kLanes) {
        if (p.R == kR) packed_rows<kR, Red, In>(p, init);
        else packed_rows_of_length<2 * kR, Red, In>(p, init);
    }
}

template <class Red, class In>
__global__ void __launch_bounds__(kSegBlock, 8) packed_rows_kernel(SegProblem p, typename Red::V init) {
    packed_rows_of_length<1, Red, In>(p, init);
}

// Reduces the kSegBlock values of a block through shared memory (raw storage: V need not be
// default-constructible there), `lanes` independent reductions side by side (columns_kernel): value (y, x) at
// y*lanes + x, each column x reduced over y; threads with y == 0 get their column's result.
template <class Red>
__device__ __forceinline__ typename Red::V block_fold(typename Red::V v, int lanes) {
    using V = typename Red::V;
    __shared__ alignas(16) unsigned char raw[kSegBlock * sizeof(V)];
    V *smem = reinterpret_cast<V *>(raw);
    smem[threadIdx.x] = v;
    __syncthreads();
    for (int rows = kSegBlock / lanes; rows > 1; rows /= 2) {
        const int half = rows / 2;
        if (int(threadIdx.x) < half * lanes) smem[threadIdx.x] = Red::combine(smem[threadIdx.x], smem[threadIdx.x + half * lanes]);
        __syncthreads();
    }
    return smem[threadIdx.x];
}

// Reduces the kBlock values of a block to one, which thread 0 gets: shuffles within each warp, then thread 0
// folds the warps' values in order (one barrier, where block_fold takes one per halving).  block_reduce_shfl
// (primitives/block.cuh) does the same for an Op on values a shuffle moves; this one takes a Reducer's V of any
// type, and its second stage is sequential: a second shuffle tree took block_rows_kernel from 32 to 40 registers.
template <class Red, int kBlock>
__device__ __forceinline__ typename Red::V block_fold_warps(typename Red::V v) {
    using V = typename Red::V;
    constexpr int kWarps = kBlock / kWarp;
    __shared__ alignas(16) unsigned char raw[kWarps * sizeof(V)];
    V *smem = reinterpret_cast<V *>(raw);
    fold_lanes<Red>(v, kWarp);
    if (threadIdx.x % kWarp == 0) smem[threadIdx.x / kWarp] = v;
    __syncthreads();
    if (threadIdx.x == 0)
        for (int w = 1; w < kWarps; w++) v = Red::combine(v, smem[w]);
    return v;
}

// Threads of block_rows_kernel.  Its rows are long and few (one wave of blocks); measured on the H200, (2^10,
// 2^16) float32 row sums 72.6 us with 512 threads and a shuffle fold, 73.0 with 256, 73.2 with 256 and block_fold.
constexpr int kBlockRowsThreads = 512;

// One block per work item (segment, chunk).
template <class Red, class In>
__global__ void __launch_bounds__(kBlockRowsThreads) block_rows_kernel(SegProblem p, int64_t chunks, int64_t L,
                                                                       typename Red::V *partials,
                                                                       typename Red::V init) {
    using V = typename Red::V;
    const int64_t item = blockIdx.x, s = chunks == 1 ? item : item / chunks, chunk = item - s * chunks;
    int64_t i0, i1;
    seg_split(p, s, i0, i1);
    const int64_t base = i0 * p.is0 + i1 * p.is1, mbase = i0 * p.ms0 + i1 * p.ms1;
    const int64_t r0 = chunk * L, r1 = r0 + L < p.R ? r0 + L : p.R;
    V v = Red::identity();
    if constexpr (kVectorizable<In>) {
        if (reads_vectors<In>(p)) {
            v = fold_contiguous<Red, In, 4, kBlockRowsThreads>(static_cast<const In *>(p.in) + base, r0, r1,
                                                               threadIdx.x, p.param, v, second_row<In>(p, base));
            v = block_fold_warps<Red, kBlockRowsThreads>(v);
            if (threadIdx.x == 0) seg_store<Red>(p, s, chunk, chunks, v, partials, init);
            return;
        }
    }
    v = fold_strided<Red, In, 4>(p, base, mbase, r0 + threadIdx.x, r1, kBlockRowsThreads, v);
    v = block_fold_warps<Red, kBlockRowsThreads>(v);
    if (threadIdx.x == 0) seg_store<Red>(p, s, chunk, chunks, v, partials, init);
}

// A few columns packed in 16-byte vectors (rows back to back, c1 * sizeof(In) dividing 16, e.g. the two
// columns of an (n, 2) float32 array): each thread folds whole vectors with one accumulator per vector lane,
// merges the lanes of each column, and the block reduces each column into one partial per block
// (partials[column * gridDim.x + block]); the last block to finish folds them into the results.
template <class Red, class In>
__global__ void __launch_bounds__(kSegBlock) packed_columns_kernel(SegProblem p, typename Red::V *partials,
                                                                   unsigned *ticket, typename Red::V init) {
    using V = typename Red::V;
    using Vec = Vec16<In>;
    constexpr int K = Vec::kLanes;
    const int C = int(p.c1), log_c = __ffs(C) - 1;  // C: a power of two dividing K
    const int64_t total = p.R * C, nvec = total / K;
    const Vec *vec = static_cast<const Vec *>(p.in);
    V acc[K];
#pragma unroll
    for (int k = 0; k < K; k++) acc[k] = Red::identity();
    auto fold_vec = [&](const Vec &x, int64_t j) {
#pragma unroll
        for (int k = 0; k < K; k++) acc[k] = fold_element<Red>(acc[k], x.lane[k], (j * K + k) >> log_c, p.param);
    };
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; j + 3 * stride < nvec; j += 4 * stride) {  // four vectors in flight per thread
        const Vec a = vec[j], b = vec[j + stride], c = vec[j + 2 * stride], d = vec[j + 3 * stride];
        fold_vec(a, j);
        fold_vec(b, j + stride);
        fold_vec(c, j + 2 * stride);
        fold_vec(d, j + 3 * stride);
    }
    for (; j < nvec; j += stride) fold_vec(vec[j], j);
    // lane k + h holds the same column as lane k while h >= C; a loop of a fixed trip count, so that it unrolls
    // and acc stays in registers (halving h in the loop header left acc in local memory)
    constexpr int kHalvings = K >= 16 ? 4 : K >= 8 ? 3 : K >= 4 ? 2 : K >= 2 ? 1 : 0;
#pragma unroll
    for (int step = 0; step < kHalvings; step++) {
        const int h = (K / 2) >> step;
        if (h >= C) {
#pragma unroll
            for (int k = 0; k < K / 2; k++)
                if (k < h) acc[k] = Red::combine(acc[k], acc[k + h]);
        }
    }
    const int64_t tail = nvec * K + threadIdx.x;  // block 0: an element after the last whole vector, if any
    for (int c = 0; c < C; c++) {
        V column = acc[0];  // acc[c], chosen with constant indices so that acc stays in registers
#pragma unroll
        for (int k = 1; k < K; k++)
            if (k == c) column = acc[k];
        if (blockIdx.x == 0 && tail < total && int(tail % C) == c) {
            const In x = static_cast<const In *>(p.in)[tail];
            column = fold_element<Red>(column, x, tail >> log_c, p.param);
        }
        const V v = block_fold_warps<Red, kSegBlock>(column);
        if (threadIdx.x == 0) partials[c * gridDim.x + blockIdx.x] = v;
        __syncthreads();
    }
    // The last block to finish folds every block's partials (one launch; deterministic: a fixed order).
    __shared__ bool last;
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int c = 0; c < C; c++) {
        V v = Red::identity();
        for (int b = threadIdx.x; b < int(gridDim.x); b += kSegBlock)
            v = Red::combine(v, load_cg(partials + c * gridDim.x + b));
        v = block_fold_warps<Red, kSegBlock>(v);
        if (threadIdx.x == 0) seg_store<Red>(p, c, 0, 1, v, nullptr, init);
        __syncthreads();
    }
    if (threadIdx.x == 0) *ticket = 0;  // the workspace's counters are left zero
}

// kPack adjacent elements read as one load (kPack * sizeof(In) bytes, at most 16).
template <class In, int kPack>
struct alignas(kPack * sizeof(In)) ElementPack {
    In e[kPack];
};

// Lanes along i1 (x: `lanes` of them), the rest of the block along r (y).  grid.x covers i1, grid.y the
// chunks of r, grid.z (strided) i0.  kPack > 1 (narrow elements, unit stride along i1: SegPlan::pack): each lane
// reads kPack adjacent columns as one load and keeps one accumulator per column.
template <class Red, class In, int kPack>
__global__ void __launch_bounds__(kSegBlock) columns_kernel(SegProblem p, int lanes, int64_t chunks, int64_t L,
                                                            typename Red::V *partials, typename Red::V init) {
    using V = typename Red::V;
    using Pack = ElementPack<In, kPack>;
    const int x = threadIdx.x % lanes, y = threadIdx.x / lanes, rows = kSegBlock / lanes;
    const int64_t i1 = (int64_t(blockIdx.x) * lanes + x) * kPack, chunk = blockIdx.y;
    const int64_t r0 = chunk * L, r1 = r0 + L < p.R ? r0 + L : p.R;
    for (int64_t i0 = blockIdx.z; i0 < p.c0; i0 += gridDim.z) {
        V v[kPack];
#pragma unroll
        for (int j = 0; j < kPack; j++) v[j] = Red::identity();
        if (i1 < p.c1) {
            const int64_t base = i0 * p.is0 + i1 * p.is1, mbase = i0 * p.ms0 + i1 * p.ms1;
            if constexpr (kPack == 1) {
                v[0] = fold_strided<Red, In, 8>(p, base, mbase, r0 + y, r1, rows, v[0]);
            } else {  // unit stride along i1, no mask or second operand (SegPlan::pack)
                const Pack *col = reinterpret_cast<const Pack *>(static_cast<const In *>(p.in) + base);
                const int64_t step = p.ir / kPack;  // rows apart, in packs
                constexpr int kUnroll = 4;
                int64_t r = r0 + y;
                for (; r + (kUnroll - 1) * rows < r1; r += kUnroll * rows) {
                    Pack xs[kUnroll];
#pragma unroll
                    for (int u = 0; u < kUnroll; u++) xs[u] = col[(r + u * rows) * step];
#pragma unroll
                    for (int u = 0; u < kUnroll; u++)
#pragma unroll
                        for (int j = 0; j < kPack; j++)
                            v[j] = fold_element<Red>(v[j], xs[u].e[j], r + u * rows, p.param);
                }
                for (; r < r1; r += rows) {
                    const Pack xs = col[r * step];
#pragma unroll
                    for (int j = 0; j < kPack; j++) v[j] = fold_element<Red>(v[j], xs.e[j], r, p.param);
                }
            }
        }
#pragma unroll
        for (int j = 0; j < kPack; j++) {
            const V w = block_fold<Red>(v[j], lanes);
            if (y == 0 && i1 < p.c1) seg_store<Red>(p, i0 * p.c1 + i1 + j, chunk, chunks, w, partials, init);
            __syncthreads();  // block_fold's shared memory is reused by the next column and the next i0
        }
    }
}

// Second pass for segments with many chunk partials (p.in: V values [segment][p.R]): a block per segment.
template <class Red>
__global__ void __launch_bounds__(kSegBlock) partials_block_kernel(SegProblem p, typename Red::V init) {
    using V = typename Red::V;
    const V *src = static_cast<const V *>(p.in) + int64_t(blockIdx.x) * p.R;
    V v = Red::identity();
    for (int64_t r = threadIdx.x; r < p.R; r += kSegBlock) v = Red::combine(v, src[r]);
    v = block_fold_warps<Red, kSegBlock>(v);
    if (threadIdx.x == 0) seg_store<Red>(p, blockIdx.x, 0, 1, v, nullptr, init);
}

// COLUMNS of narrow elements (bool, 8- and 16-bit) that lie side by side (unit stride along i1), read from `in`
// alone: each lane reads kColumnPack adjacent columns as one load of up to 16 bytes, so a warp reads a row in loads
// as wide as a float32 warp's or wider, and keeps one accumulator per column (at most 64 bytes of them).
constexpr int pow2_at_most(size_t n) { return n >= 16 ? 16 : n >= 8 ? 8 : n >= 4 ? 4 : n >= 2 ? 2 : 1; }
template <class In, class V>
constexpr int kColumnPack = sizeof(In) <= 2 ? pow2_at_most(16 / sizeof(In) < 64 / sizeof(V) ? 16 / sizeof(In)
                                                                                              : 64 / sizeof(V)) : 1;


// Needs no element of the input: instantiated per Red::Partials, shared by every input type.
template <class Red>
__global__ void fill_identity_kernel(SegProblem p, typename Red::V init) {
    const int64_t S = p.c0 * p.c1;
    for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s < S; s += int64_t(gridDim.x) * blockDim.x)
        seg_store<Red>(p, s, 0, 1, Red::identity(), nullptr, init);
}

}  // namespace gr
