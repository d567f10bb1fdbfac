// scan_segments.cuh -- scans along an axis, the host half: the launch plan (which kernel of
// axis/scan_segments_kernels.cuh, how r is cut into chunks, the workspace) and the launches, through a kernel set
// that hands out each kernel compiled ahead of time (the hot set) or on first use.
#pragma once
#include <cstdint>
#include <cstring>
#include "variants/driver.cuh"
#include "variants/entry.cuh"
#include "axis/kernel_source.cuh"
#include "axis/scan_ranges.cuh"
#include "axis/scan_segments_kernels.cuh"
#include "axis/segments_dispatch.cuh"

namespace gr {

constexpr int64_t kPackedRowsMax = 1024;
constexpr int kChunkTotalsBlock = 256;  // threads per segment for the chunk totals of few, long segments

enum class ScanKernel { rows, columns, packed, interleaved };

struct ScanPlan {
    ScanKernel kernel = ScanKernel::rows;
    int64_t chunks = 1, L = 0, grid = 1, rows_per_warp = 1;
};

// Row i0 * c1 + i1 starts at element (i0 * c1 + i1) * R of both arrays, and r steps by 1.
inline bool rows_back_to_back(const ScanProblem &p) {
    return p.ir == 1 && p.orr == 1 && (p.c1 == 1 || (p.is1 == p.R && p.os1 == p.R)) &&
           (p.c0 == 1 || (p.is0 == p.c1 * p.R && p.os0 == p.c1 * p.R));
}

// Within each block i0, element (r, i1) is element r * c1 + i1, in the input and in the output.
inline bool columns_interleaved(const ScanProblem &p) {
    return p.c1 > 1 && kWarp % p.c1 == 0 && p.is1 == 1 && p.os1 == 1 && p.ir == p.c1 && p.orr == p.c1;
}

inline ScanPlan scan_plan(const ScanProblem &p, int sm_count) {
    ScanPlan plan;
    const int64_t S = p.c0 * p.c1, R = p.R;
    const int64_t resident_warps = int64_t(sm_count) * 64;  // 2048 threads per SM
    if (R <= kPackedRowsMax && rows_back_to_back(p)) {
        // enough warps to fill the GPU, each with 256 to 2048 elements (whole rows)
        int64_t per_warp = ceil_div(S * R, resident_warps);
        per_warp = per_warp < 256 ? 256 : per_warp > 2048 ? 2048 : per_warp;
        plan.kernel = ScanKernel::packed;
        plan.rows_per_warp = per_warp / R > 1 ? per_warp / R : 1;
        plan.grid = grid_for(ceil_div(S, plan.rows_per_warp) * kWarp, sm_count);
        return plan;
    }
    if (columns_interleaved(p)) {
        // warps of at least a few batches each (L * c1 a multiple of a batch), enough of them to fill the GPU
        const int64_t batch_rows = kWarp * kScanBatch / p.c1;
        int64_t L = ceil_div(ceil_div(R, ceil_div(resident_warps, p.c0)), batch_rows) * batch_rows;
        if (L < 2 * batch_rows) L = 2 * batch_rows;
        plan.kernel = ScanKernel::interleaved;
        plan.L = L;
        plan.chunks = ceil_div(R, L);
        plan.grid = grid_for(p.c0 * plan.chunks * kWarp, sm_count);
        return plan;
    }
    const int64_t ir = p.ir < 0 ? -p.ir : p.ir, is1 = p.is1 < 0 ? -p.is1 : p.is1;
    const bool columns = p.c1 > 1 && is1 < ir;
    plan.kernel = columns ? ScanKernel::columns : ScanKernel::rows;
    // enough independent work items to fill the GPU: threads for columns, warps for rows
    const int64_t want = columns ? resident_warps * kWarp : resident_warps;
    const int64_t min_len = columns ? 64 : 2048;
    int64_t chunks = S >= want ? 1 : ceil_div(want, S);
    const int64_t max_chunks = R / min_len > 1 ? R / min_len : 1;
    chunks = chunks > max_chunks ? max_chunks : chunks;
    plan.L = ceil_div(R, chunks);
    plan.chunks = ceil_div(R, plan.L);
    plan.grid = grid_for(columns ? S * plan.chunks : S * plan.chunks * kWarp, sm_count);
    return plan;
}

// acc_size: sizeof the accumulator of the result type (a chunk's total)
inline size_t scan_segments_workspace(const ScanProblem &p, int sm_count, size_t acc_size) {
    if (p.c0 * p.c1 == 0 || p.R == 0) return 0;
    const ScanPlan plan = scan_plan(p, sm_count);
    // the chunks' totals after the (unread) counters; none for a one-pass plan, so a captured call is its kernel
    return plan.chunks > 1
               ? GR_WORKSPACE_ZEROED_BYTES + align_up(size_t(p.c0 * p.c1 * plan.chunks) * acc_size, GR_WORKSPACE_ALIGN)
               : 0;
}

// The kernels of axis/scan_segments_kernels.cuh that one (operator, input, result) launches, and their signatures
// (scan_segments_run launches them with arguments of exactly these types).
enum class ScanSegKernel {
    ROWS_TOTALS, ROWS, COLUMNS_TOTALS, COLUMNS, INTERLEAVED_TOTALS, INTERLEAVED,  // a pass: fold chunks or write
    CHUNK_TOTALS_BLOCK, CHUNK_TOTALS_WARP, PACKED_ROWS,
    COUNT
};
template <class In, class Out>
struct ScanSignatures {
    using Acc = typename accumulator<Out>::type;
    using Pass = void (*)(ScanProblem, int64_t, int64_t, bool, Acc *);
    using ChunkTotals = void (*)(Acc *, int64_t, int64_t);
    using PackedRows = void (*)(const In *, Out *, int64_t, int64_t, int64_t, bool);
};

// The kernels compiled here, for a hot (operator, input, result): their addresses (instantiating them).
template <class Op, class In, class Out>
struct AotScanKernels {
    gr_status get(ScanSegKernel k, const void **kernel, int *) const {
        using S = ScanSignatures<In, Out>;
        using Acc = typename S::Acc;
        switch (k) {
        case ScanSegKernel::ROWS_TOTALS: return aot_kernel<typename S::Pass>(kernel, &scan_rows_kernel<Op, In, Out, false>);
        case ScanSegKernel::ROWS: return aot_kernel<typename S::Pass>(kernel, &scan_rows_kernel<Op, In, Out, true>);
        case ScanSegKernel::COLUMNS_TOTALS:
            return aot_kernel<typename S::Pass>(kernel, &scan_columns_kernel<Op, In, Out, false>);
        case ScanSegKernel::COLUMNS: return aot_kernel<typename S::Pass>(kernel, &scan_columns_kernel<Op, In, Out, true>);
        case ScanSegKernel::INTERLEAVED_TOTALS:
            return aot_kernel<typename S::Pass>(kernel, &scan_interleaved_kernel<Op, In, Out, false>);
        case ScanSegKernel::INTERLEAVED:
            return aot_kernel<typename S::Pass>(kernel, &scan_interleaved_kernel<Op, In, Out, true>);
        case ScanSegKernel::CHUNK_TOTALS_BLOCK:
            return aot_kernel<typename S::ChunkTotals>(kernel, &scan_chunk_totals_kernel<Op, Acc, kChunkTotalsBlock>);
        case ScanSegKernel::CHUNK_TOTALS_WARP:
            return aot_kernel<typename S::ChunkTotals>(kernel, &scan_chunk_totals_kernel<Op, Acc, kWarp>);
        case ScanSegKernel::PACKED_ROWS: return aot_kernel<typename S::PackedRows>(kernel, &scan_packed_rows_kernel<Op, In, Out>);
        case ScanSegKernel::COUNT: break;
        }
        return GR_ERR_INVALID_ARGUMENT;
    }

};

// The kernels compiled on first use (abi/jit.h: GR_JIT_SCAN_SEGMENTS) outside the hot set: the same templates,
// named by the operator and the kernel types.  Host code only.
struct JitScanKernels : ScanNames {
    using ScanNames::ScanNames;
    void name(ScanSegKernel k, char *buf, size_t size) const {
        const char *pass = k == ScanSegKernel::ROWS_TOTALS || k == ScanSegKernel::ROWS ? "scan_rows_kernel"
                           : k == ScanSegKernel::COLUMNS_TOTALS || k == ScanSegKernel::COLUMNS ? "scan_columns_kernel"
                                                                                                 : "scan_interleaved_kernel";
        const bool writes = k == ScanSegKernel::ROWS || k == ScanSegKernel::COLUMNS || k == ScanSegKernel::INTERLEAVED;
        switch (k) {
        case ScanSegKernel::ROWS_TOTALS:
        case ScanSegKernel::ROWS:
        case ScanSegKernel::COLUMNS_TOTALS:
        case ScanSegKernel::COLUMNS:
        case ScanSegKernel::INTERLEAVED_TOTALS:
        case ScanSegKernel::INTERLEAVED:
            std::snprintf(buf, size, "gr::%s<%s, %s, %s, %s>", pass, op, in, out, writes ? "true" : "false");
            return;
        case ScanSegKernel::CHUNK_TOTALS_BLOCK:
        case ScanSegKernel::CHUNK_TOTALS_WARP:
            std::snprintf(buf, size, "gr::scan_chunk_totals_kernel<%s, gr::accumulator<%s>::type, %d>", op, out,
                          k == ScanSegKernel::CHUNK_TOTALS_BLOCK ? kChunkTotalsBlock : kWarp);
            return;
        case ScanSegKernel::PACKED_ROWS:
            std::snprintf(buf, size, "gr::scan_packed_rows_kernel<%s, %s, %s>", op, in, out);
            return;
        case ScanSegKernel::COUNT: break;
        }
        if (size) buf[0] = '\0';
    }
    gr_status get(ScanSegKernel k, const void **kernel, int *cuda_error) const {
        return jit_kernel<GR_JIT_SCAN_SEGMENTS>(*this, k, kernel, cuda_error);
    }
};

// Runs the plan of p with the kernels of `kernels` (AotScanKernels or JitScanKernels).  Written once for every
// (operator, input, result): the types reach the kernels only, so the arguments go by address (kernel_source.cuh)
// and the chunks' totals as bytes.
template <class Kernels>
gr_status scan_segments_run(const ScanProblem &p, bool exclusive, char *scratch, int sm_count, cudaStream_t stream,
                            const Kernels &kernels, int *cuda_error) {
    const int64_t segments = p.c0 * p.c1;
    if (segments == 0 || p.R == 0) return GR_OK;
    auto launch = [&](ScanSegKernel which, dim3 grid, dim3 block, std::initializer_list<const void *> args) {
        const void *k = nullptr;
        const gr_status st = kernels.get(which, &k, cuda_error);
        if (st != GR_OK) return st;
        const cudaError_t e = launch_by_address(k, grid, block, stream, args);
        return e == cudaSuccess ? GR_OK : cuda_status(e, cuda_error);
    };
    const ScanPlan plan = scan_plan(p, sm_count);
    if (plan.kernel == ScanKernel::packed)  // ScanSignatures::PackedRows
        return launch(ScanSegKernel::PACKED_ROWS, dim3(unsigned(plan.grid)), dim3(256),
                      {&p.in, &p.out, &segments, &p.R, &plan.rows_per_warp, &exclusive});
    // one pass of the plan's kernel (ScanSignatures::Pass): `writes` false folds the chunks into `totals`, true
    // writes the scan
    void *totals = plan.chunks > 1 ? scratch : nullptr;  // Acc's
    auto pass = [&](bool writes) {
        const ScanSegKernel which = plan.kernel == ScanKernel::columns
                                        ? (writes ? ScanSegKernel::COLUMNS : ScanSegKernel::COLUMNS_TOTALS)
                                    : plan.kernel == ScanKernel::interleaved
                                        ? (writes ? ScanSegKernel::INTERLEAVED : ScanSegKernel::INTERLEAVED_TOTALS)
                                        : (writes ? ScanSegKernel::ROWS : ScanSegKernel::ROWS_TOTALS);
        return launch(which, dim3(unsigned(plan.grid)), dim3(256), {&p, &plan.chunks, &plan.L, &exclusive, &totals});
    };
    if (totals) {
        gr_status st = pass(false);
        if (st != GR_OK) return st;
        // ScanSignatures::ChunkTotals
        if (plan.chunks > 8 * kWarp) {  // a block per segment
            const int64_t blocks = segments < 65535 ? segments : 65535;
            st = launch(ScanSegKernel::CHUNK_TOTALS_BLOCK, dim3(unsigned(blocks)), dim3(kChunkTotalsBlock),
                        {&totals, &segments, &plan.chunks});
        } else {  // a warp per segment
            const int64_t blocks = ceil_div(segments * kWarp, int64_t(256));
            st = launch(ScanSegKernel::CHUNK_TOTALS_WARP, dim3(unsigned(blocks < 4096 ? blocks : 4096)), dim3(256),
                        {&totals, &segments, &plan.chunks});
        }
        if (st != GR_OK) return st;
    }
    return pass(true);
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
        if (s->ranges)  // a segmented scan: its kernels all compile on first use, its host code is one for all types
            return scan_ranges_entry(a, s, p, OP, dtype_of<In>::value, dtype_of<Out>::value,
                                     sizeof(typename accumulator<Out>::type), alignof(In), alignof(Out), ws_bytes,
                                     cuda_error);
        const size_t need = scan_segments_workspace(p, a->sm_count, sizeof(typename accumulator<Out>::type));
        if (ws_bytes) {
            *ws_bytes = need;
            return GR_OK;
        }
        const bool moves = p.c0 * p.c1 * p.R > 0;
        if (!segment_args_ok<In, Out>(a, moves, moves, need)) return GR_ERR_INVALID_ARGUMENT;
        char *scratch = static_cast<char *>(a->workspace) + GR_WORKSPACE_ZEROED_BYTES;
        const cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
        // the hot set's kernels are compiled here; the others on first use (their host half only is here)
        if constexpr (is_hot_kernel(GR_KIND_SCAN, OP, dtype_of<In>::value, dtype_of<Out>::value)) {
            return scan_segments_run(p, a->exclusive != 0, scratch, a->sm_count, stream, AotScanKernels<Op, In, Out>{},
                                     cuda_error);
        } else {
            return scan_segments_run(p, a->exclusive != 0, scratch, a->sm_count, stream,
                                     JitScanKernels(OP, dtype_of<In>::value, dtype_of<Out>::value), cuda_error);
        }
    });
}

}  // namespace gr

#define GR_SCAN_SEGMENTS_OP(OP)                                                                              \
    extern "C" gr_status gr_scan_segments_##OP(const gr_args *a, const gr_segments *s, size_t *ws, int *err) { \
        return gr::scan_segments_op<GR_OP_##OP>(a, s, ws, err);                                              \
    }
