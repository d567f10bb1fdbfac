// scan_segments.cuh -- scans along an axis: many independent scans ("segments") in one launch
// (gpureduce.h, gr_segments; the axes were merged by gpureduce/_layout.py).
//
// Layout decides the kernel, as for the axis reductions (segments.cuh):
//   * rows     r is the fastest dimension: a warp per (segment, chunk), 32 elements per step, a shuffle scan
//              of the step plus the carry from the steps before.
//   * columns  i1 is the fastest: a thread per (segment, chunk), neighbouring threads on neighbouring i1, so
//              every step's loads and stores are coalesced; each thread walks its chunk serially.
// When the segments alone cannot fill the GPU, r is cut into chunks and the scan runs in three launches
// (reduce-then-scan): fold every chunk, scan the chunk totals of each segment, rescan every chunk seeded with
// its prefix.  Deterministic: the order of operations depends only on the shape.
#pragma once
#include <cstdint>
#include <cstring>
#include "variants/driver.cuh"
#include "primitives/scan_block.cuh"
#include "axis/segments.cuh"
#include "axis/segments_dispatch.cuh"

namespace gr {

struct ScanProblem {
    int64_t c0, c1;
    int64_t is0, is1, ir;
    int64_t os0, os1, orr;
    int64_t R;
    const void *in;
    void *out;
};

template <class V>
__device__ __forceinline__ V shfl_up_any(const V &v, int delta) {
    return shfl_words(v, [=](int w) { return __shfl_up_sync(kFullMask, w, delta); });
}

template <class V>
__device__ __forceinline__ V shfl_idx_any(const V &v, int src) {
    return shfl_words(v, [=](int w) { return __shfl_sync(kFullMask, w, src); });
}

// kWrite = false: fold each chunk into totals[item]; true: scan each chunk starting from carries[item]
// (nullptr: from the neutral element) and write the outputs.
template <class Op, class In, class Out, bool kWrite>
__global__ void __launch_bounds__(256) scan_rows_kernel(ScanProblem p, int64_t chunks, int64_t L, bool exclusive,
                                                        typename accumulator<Out>::type *totals) {
    using Acc = typename accumulator<Out>::type;
    const int lane = threadIdx.x % kWarp;
    const int64_t items = p.c0 * p.c1 * chunks, warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
    for (int64_t item = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; item < items; item += warps) {
        const int64_t s = item / chunks, chunk = item - s * chunks;
        const int64_t i0 = s / p.c1, i1 = s - i0 * p.c1;
        const In *in = static_cast<const In *>(p.in) + i0 * p.is0 + i1 * p.is1;
        Out *out = static_cast<Out *>(p.out) + i0 * p.os0 + i1 * p.os1;
        const int64_t r0 = chunk * L, r1 = r0 + L < p.R ? r0 + L : p.R;
        Acc carry = (kWrite && totals && chunks > 1) ? totals[item] : scan_neutral<Op, Acc>();
        for (int64_t base = r0; base < r1; base += kWarp) {
            const int64_t r = base + lane;
            Acc x = r < r1 ? scan_element<Op, Acc>(in[r * p.ir]) : scan_neutral<Op, Acc>();
            // Kogge-Stone across the warp, earlier operand on the left
#pragma unroll
            for (int offset = 1; offset < kWarp; offset <<= 1) {
                const Acc below = shfl_up_any(x, offset);
                if (lane >= offset) x = Op()(below, x);
            }
            if constexpr (kWrite) {
                const Acc up = shfl_up_any(x, 1);  // every lane shuffles, then only the live ones store
                if (r < r1) {
                    const Acc before = lane == 0 ? carry : Op()(carry, up);
                    const Acc value = exclusive ? (r == 0 ? Op::template identity<Acc>() : before) : Op()(carry, x);
                    out[r * p.orr] = convert<Out>(value);
                }
            }
            carry = Op()(carry, shfl_idx_any(x, kWarp - 1));
        }
        if constexpr (!kWrite) {
            if (lane == 0) totals[item] = carry;
        }
    }
}

// One thread per (segment, chunk), i1 fastest across threads.
template <class Op, class In, class Out, bool kWrite>
__global__ void __launch_bounds__(256) scan_columns_kernel(ScanProblem p, int64_t chunks, int64_t L, bool exclusive,
                                                           typename accumulator<Out>::type *totals) {
    using Acc = typename accumulator<Out>::type;
    const int64_t items = p.c0 * p.c1 * chunks;
    for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < items; t += int64_t(gridDim.x) * blockDim.x) {
        // t = (chunk * c0 + i0) * c1 + i1
        const int64_t i1 = t % p.c1, rest = t / p.c1, i0 = rest % p.c0, chunk = rest / p.c0;
        const int64_t item = (i0 * p.c1 + i1) * chunks + chunk;  // the totals are laid out [segment][chunk]
        const In *in = static_cast<const In *>(p.in) + i0 * p.is0 + i1 * p.is1;
        Out *out = static_cast<Out *>(p.out) + i0 * p.os0 + i1 * p.os1;
        const int64_t r0 = chunk * L, r1 = r0 + L < p.R ? r0 + L : p.R;
        Acc acc = (kWrite && totals && chunks > 1) ? totals[item] : scan_neutral<Op, Acc>();
        for (int64_t r = r0; r < r1; r++) {
            const Acc x = scan_element<Op, Acc>(in[r * p.ir]);
            if constexpr (kWrite) {
                if (exclusive) out[r * p.orr] = convert<Out>(r == 0 ? Op::template identity<Acc>() : acc);
                acc = Op()(acc, x);
                if (!exclusive) out[r * p.orr] = convert<Out>(acc);
            } else {
                acc = Op()(acc, x);
            }
        }
        if constexpr (!kWrite) totals[item] = acc;
    }
}

// Chunk totals [segment][chunk] -> the exclusive prefix of each chunk within its segment, in place.
template <class Op, class Acc>
__global__ void scan_chunk_totals_kernel(Acc *totals, int64_t segments, int64_t chunks) {
    for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s < segments; s += int64_t(gridDim.x) * blockDim.x) {
        Acc acc = scan_neutral<Op, Acc>();
        for (int64_t c = 0; c < chunks; c++) {
            const Acc t = totals[s * chunks + c];
            totals[s * chunks + c] = acc;
            acc = Op()(acc, t);
        }
    }
}

struct ScanPlan {
    bool columns = false;
    int64_t chunks = 1, L = 0, grid = 1;
};

inline ScanPlan scan_plan(const ScanProblem &p, int sm_count) {
    ScanPlan plan;
    const int64_t S = p.c0 * p.c1, R = p.R;
    const int64_t ir = p.ir < 0 ? -p.ir : p.ir, is1 = p.is1 < 0 ? -p.is1 : p.is1;
    plan.columns = p.c1 > 1 && is1 < ir;
    // enough independent work items to fill the GPU: threads for columns, warps for rows
    const int64_t want = plan.columns ? int64_t(sm_count) * 2048 : int64_t(sm_count) * 64;
    const int64_t min_len = plan.columns ? 64 : 2048;
    int64_t chunks = S >= want ? 1 : ceil_div(want, S);
    const int64_t max_chunks = R / min_len > 1 ? R / min_len : 1;
    chunks = chunks > max_chunks ? max_chunks : chunks;
    plan.L = ceil_div(R, chunks);
    plan.chunks = ceil_div(R, plan.L);
    const int64_t threads = plan.columns ? S * plan.chunks : S * plan.chunks * kWarp;
    const int64_t blocks = ceil_div(threads, 256);
    plan.grid = blocks < int64_t(sm_count) * 32 ? blocks : int64_t(sm_count) * 32;
    return plan;
}

template <class Op, class Out>
size_t scan_segments_workspace(const ScanProblem &p, int sm_count) {
    if (p.c0 * p.c1 == 0 || p.R == 0) return 0;
    const ScanPlan plan = scan_plan(p, sm_count);
    using Acc = typename accumulator<Out>::type;
    return plan.chunks > 1 ? align_up(size_t(p.c0 * p.c1 * plan.chunks) * sizeof(Acc), GR_WORKSPACE_ALIGN) : 0;
}

template <class Op, class In, class Out>
cudaError_t scan_segments_run(const ScanProblem &p, bool exclusive, char *scratch, int sm_count, cudaStream_t stream) {
    using Acc = typename accumulator<Out>::type;
    const int64_t S = p.c0 * p.c1;
    if (S == 0 || p.R == 0) return cudaSuccess;
    const ScanPlan plan = scan_plan(p, sm_count);
    Acc *totals = plan.chunks > 1 ? reinterpret_cast<Acc *>(scratch) : nullptr;
    const unsigned grid = unsigned(plan.grid);
    if (totals) {
        if (plan.columns) scan_columns_kernel<Op, In, Out, false><<<grid, 256, 0, stream>>>(p, plan.chunks, plan.L, exclusive, totals);
        else scan_rows_kernel<Op, In, Out, false><<<grid, 256, 0, stream>>>(p, plan.chunks, plan.L, exclusive, totals);
        GR_CUDA_TRY(cudaGetLastError());
        const int64_t blocks = ceil_div(S, 256);
        scan_chunk_totals_kernel<Op, Acc><<<unsigned(blocks < 4096 ? blocks : 4096), 256, 0, stream>>>(totals, S, plan.chunks);
        GR_CUDA_TRY(cudaGetLastError());
    }
    if (plan.columns) scan_columns_kernel<Op, In, Out, true><<<grid, 256, 0, stream>>>(p, plan.chunks, plan.L, exclusive, totals);
    else scan_rows_kernel<Op, In, Out, true><<<grid, 256, 0, stream>>>(p, plan.chunks, plan.L, exclusive, totals);
    return cudaGetLastError();
}


inline ScanProblem scan_problem(const gr_args *a, const gr_segments *s) {
    return ScanProblem{s->count[0], s->count[1], s->in_stride[0], s->in_stride[1], s->reduce_in_stride,
                       s->out_stride[0], s->out_stride[1], s->reduce_out_stride, s->reduce_count, a->in, a->out};
}

template <gr_op OP>
gr_status scan_segments_op(const gr_args *a, const gr_segments *s, size_t *ws_bytes, int *cuda_error) {
    return with_segment_types<false, GR_KIND_SCAN, OP>(a->in_dtype, a->out_dtype, [&](auto in_tag, auto out_tag) -> gr_status {
        using In = tag_type<decltype(in_tag)>;
        using Out = tag_type<decltype(out_tag)>;
        using Op = typename op_functor<OP>::type;
        const ScanProblem p = scan_problem(a, s);
        const size_t need = GR_WORKSPACE_ZEROED_BYTES + scan_segments_workspace<Op, Out>(p, a->sm_count);
        if (ws_bytes) {
            *ws_bytes = need;
            return GR_OK;
        }
        const bool moves = p.c0 * p.c1 * p.R > 0;
        if (!segment_args_ok<In, Out>(a, moves, moves, need)) return GR_ERR_INVALID_ARGUMENT;
        char *scratch = static_cast<char *>(a->workspace) + GR_WORKSPACE_ZEROED_BYTES;
        return cuda_status(scan_segments_run<Op, In, Out>(p, a->exclusive != 0, scratch, a->sm_count,
                                                          static_cast<cudaStream_t>(a->stream)),
                           cuda_error);
    });
}

}  // namespace gr

#define GR_SCAN_SEGMENTS_OP(OP)                                                                              \
    extern "C" gr_status gr_scan_segments_##OP(const gr_args *a, const gr_segments *s, size_t *ws, int *err) { \
        return gr::scan_segments_op<GR_OP_##OP>(a, s, ws, err);                                              \
    }
