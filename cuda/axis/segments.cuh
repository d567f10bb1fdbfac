// segments.cuh -- reductions along axes, the host half: the launch plan (which kernel of axis/segments_kernels.cuh,
// how r is cut into chunks, the workspace) and the launches, through a kernel source that hands out each kernel
// compiled ahead of time or on first use (axis/kernel_source.cuh).
#pragma once
#include <cstdint>
#include <cstring>
#include "variants/driver.cuh"
#include "axis/kernel_source.cuh"
#include "axis/segments_kernels.cuh"
#include "variants/entry.cuh"

namespace gr {

inline int pow2_at_least(int64_t n, int cap) {
    int g = 1;
    while (g < n && g < cap) g *= 2;
    return g;
}

// The launch plan: which kernel, how r is cut into chunks, and the workspace it needs.  Computed the same
// way for sizing and for running, so the two cannot drift.
struct SegPlan {
    enum Kind { ROWS, BLOCK_ROWS, COLUMNS, PACKED_ROWS, PACKED_COLUMNS } kind;
    bool vec_rows = false; // ROWS: aligned unit-stride rows, read as 16-byte vectors
    int group = 1;        // ROWS: lanes per item; COLUMNS: lanes along i1
    int pack = 1;         // COLUMNS: adjacent columns per lane (column_pack)
    int64_t chunks = 1;   // chunks of r per segment (> 1: partials + a second pass)
    int64_t L = 0;        // chunk length
    int64_t grid = 1;     // ROWS/BLOCK_ROWS: blocks; COLUMNS: blocks along i1
    int second_group = 1; // the second pass's lanes per segment
};

enum class SegKernel {
    VECTOR_ROWS, ROWS, PACKED_COLUMNS, PACKED_ROWS, BLOCK_ROWS, COLUMNS, PACKED_LANE_COLUMNS,  // read the input
    FILL_IDENTITY, PARTIALS_BLOCK, PARTIALS_ROWS,  // Red::Partials: empty segments, the second pass
    COUNT
};

// What the plan and the launches need to know of a (Reducer, input type): sizes, and which layouts its kernels
// read.  The host half below is written once against this rather than once per (Reducer, input type): about
// two hundred pairs compile on first use, and their typed host code was most of the host compiler's time.
struct SegTypes {
    int64_t in_size;    // sizeof(In)
    size_t value_size;  // sizeof(Red::V), a partial's
    bool vectorizable;  // kVectorizable<In>
    bool packable;      // kPackable<In>
    int column_pack;    // kColumnPack<In, V>
    // whether seg_run may ask for kernel k (the first-use list names these only)
    bool uses(SegKernel k) const {
        if (k == SegKernel::VECTOR_ROWS) return vectorizable;
        if (k == SegKernel::PACKED_COLUMNS || k == SegKernel::PACKED_ROWS) return packable;
        if (k == SegKernel::PACKED_LANE_COLUMNS) return column_pack > 1;
        return k != SegKernel::COUNT;
    }
};
template <class Red, class In>
constexpr SegTypes seg_types() {
    return {int64_t(sizeof(In)), sizeof(typename Red::V), kVectorizable<In>, kPackable<In>,
            kColumnPack<In, typename Red::V>};
}

// t.column_pack where the columns' layout allows it, else 1.
inline int column_pack(const SegProblem &p, const SegTypes &t) {
    const int pack = t.column_pack;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p.in);
    const bool fits = reads_in_alone(p) && p.is1 == 1 && p.c1 % pack == 0 && p.ir % pack == 0 &&
                      (p.c0 == 1 || p.is0 % pack == 0) && addr % (pack * t.in_size) == 0;
    return fits ? pack : 1;
}

inline SegPlan seg_plan(const SegProblem &p, int sm_count, const SegTypes &t) {
    SegPlan plan;
    // unit-stride rows read from `in` alone can be read as 16-byte vectors
    const int64_t elem = t.in_size, vec = 16 / elem;
    const bool contiguous = t.vectorizable && reads_in_alone(p) && p.ir == 1;
    auto aligned = [](const void *ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
    const int64_t S = p.c0 * p.c1, R = p.R;
    const int64_t want_blocks = int64_t(sm_count) * 8;  // about one full wave of 256-thread blocks
    const int64_t ir = p.ir < 0 ? -p.ir : p.ir, is1 = p.is1 < 0 ? -p.is1 : p.is1;
    if (p.c1 > 1 && t.vectorizable && reads_in_alone(p) && p.c0 == 1 && p.is1 == 1 && p.ir == p.c1 &&
        (16 / elem) % p.c1 == 0 && aligned(p.in) && R * p.c1 >= 16 / elem) {
        plan.kind = SegPlan::PACKED_COLUMNS;  // a few columns, rows back to back: whole vectors per thread
        // few blocks (4 vectors per thread), so the last block has few partials to fold
        const int64_t blocks = ceil_div(R * p.c1 / (16 / elem), 4 * kSegBlock), cap = int64_t(sm_count) * 4;
        plan.chunks = blocks < 2 ? 2 : blocks < cap ? blocks : cap;  // partials always exist
        plan.grid = plan.chunks;
        plan.L = ceil_div(R, plan.chunks);
        plan.second_group = pow2_at_least(plan.chunks, 32);
        return plan;
    } else if (p.c1 > 1 && is1 < ir) {
        plan.kind = SegPlan::COLUMNS;
        plan.pack = column_pack(p, t);
        const int64_t lanes = p.c1 / plan.pack;  // threads along i1
        // short columns (R <= 32): a thread folds its column alone, a block spans 256 of them.  A block of 32
        // columns x 8 rows had most rows idle and little to do: (4, 2^24) float32 along axis 0 scheduled 2^19
        // such blocks, 1,180 us on an H200 (227 GB/s)
        plan.group = pow2_at_least(lanes, R <= 32 ? kSegBlock : 32);
        const int rows = kSegBlock / plan.group;
        const int64_t base_blocks = ceil_div(lanes, plan.group) * (p.c0 < 65535 ? p.c0 : 65535);
        plan.grid = ceil_div(lanes, plan.group);
        // chunks of at least 8 loads per thread, until the grid fills the GPU twice over
        const int64_t max_chunks = R / (int64_t(rows) * 8) > 1 ? R / (int64_t(rows) * 8) : 1;
        int64_t chunks = base_blocks >= want_blocks ? 1 : ceil_div(want_blocks * 2, base_blocks);
        chunks = chunks < 1 ? 1 : chunks > max_chunks ? max_chunks : chunks;
        chunks = chunks > 65535 ? 65535 : chunks;
        plan.chunks = chunks;
    } else if (contiguous && p.c0 == 1 && p.is1 == R && R * elem < 16 && 16 % (R * elem) == 0 && aligned(p.in)) {
        plan.kind = SegPlan::PACKED_ROWS;
        const int64_t threads = ceil_div(S, 16 / (R * elem));  // a vector each
        plan.grid = ceil_div(threads, kSegBlock) < want_blocks * 8 ? ceil_div(threads, kSegBlock) : want_blocks * 8;
        return plan;
    } else if (contiguous && R >= vec && R <= 32 * vec && aligned(p.in) && (p.is1 * elem) % 16 == 0 &&
               (p.c0 == 1 || (p.is0 * elem) % 16 == 0)) {
        plan.kind = SegPlan::ROWS;  // a lane per 16-byte vector of the row
        plan.vec_rows = true;
        plan.group = pow2_at_least(R / vec, 32);
        const int64_t warps = ceil_div(S, kWarp / plan.group);
        const int64_t blocks = ceil_div(warps, kSegBlock / kWarp);
        plan.grid = blocks < want_blocks * 4 ? blocks : want_blocks * 4;
        plan.L = R;
        return plan;
    } else if (R <= 32 || (S >= int64_t(sm_count) * 64 && R <= 16384)) {  // a warp per row fills the GPU
        plan.kind = SegPlan::ROWS;
        plan.group = pow2_at_least(R, 32);
        plan.chunks = 1;
        const int64_t warps = ceil_div(S, kWarp / plan.group);
        const int64_t blocks = ceil_div(warps, kSegBlock / kWarp);
        plan.grid = blocks < want_blocks * 4 ? blocks : want_blocks * 4;
    } else {
        plan.kind = SegPlan::BLOCK_ROWS;
        // long rows: a block per row when every SM gets a few, else chunks until the grid fills the GPU
        const int64_t max_chunks = ceil_div(R, 4096);
        int64_t chunks = S >= int64_t(sm_count) * 4 ? 1 : ceil_div(want_blocks * 2, S);  // 4+ rows per SM: no 2nd pass
        plan.chunks = chunks > max_chunks ? max_chunks : chunks;
    }
    plan.L = ceil_div(R, plan.chunks);
    if (plan.chunks > 1) plan.L = ceil_div(plan.L, 4) * 4;  // whole vectors of 4 per thread step, when possible
    plan.chunks = ceil_div(R, plan.L);
    if (plan.kind == SegPlan::BLOCK_ROWS) plan.grid = S * plan.chunks;
    plan.second_group = pow2_at_least(plan.chunks, 32);
    return plan;
}

inline size_t seg_workspace(const SegProblem &p, int sm_count, const SegTypes &t) {
    if (p.c0 * p.c1 == 0 || p.R == 0) return 0;
    const SegPlan plan = seg_plan(p, sm_count, t);
    const size_t partials =
        plan.chunks > 1 ? align_up(size_t(p.c0 * p.c1 * plan.chunks) * t.value_size, GR_WORKSPACE_ALIGN) : 0;
    const bool counters = plan.kind == SegPlan::PACKED_COLUMNS;  // its last block per column finishes the column
    return partials || counters ? GR_WORKSPACE_ZEROED_BYTES + partials : 0;
}


// The kernels of axis/segments_kernels.cuh that one (Reducer, input type) launches, and their signatures (seg_run
// launches them with arguments of exactly these types, V's as its bytes).
template <class Red>
struct SegSignatures {
    using V = typename Red::V;
    using Rows = void (*)(SegProblem, int, int64_t, int64_t, V *, V);  // also columns_kernel
    using VectorRows = void (*)(SegProblem, int, V);
    using PackedColumns = void (*)(SegProblem, V *, unsigned *, V);
    using OneValue = void (*)(SegProblem, V);  // packed_rows_kernel, fill_identity_kernel, partials_block_kernel
    using BlockRows = void (*)(SegProblem, int64_t, int64_t, V *, V);
};
// The kernels compiled here, for a hot (Reducer, input type): their addresses (instantiating them).
template <class Red, class In>
struct AotSegKernels {
    gr_status get(SegKernel k, const void **kernel, int *) const {
        using S = SegSignatures<Red>;
        using P = typename Red::Partials;
        using V = typename Red::V;
        switch (k) {
        case SegKernel::VECTOR_ROWS:
            if constexpr (kVectorizable<In>) return aot_kernel<typename S::VectorRows>(kernel, &vector_rows_kernel<Red, In>);
            break;
        case SegKernel::ROWS: return aot_kernel<typename S::Rows>(kernel, &rows_kernel<Red, In, false>);
        case SegKernel::PACKED_COLUMNS:
            if constexpr (kPackable<In>) return aot_kernel<typename S::PackedColumns>(kernel, &packed_columns_kernel<Red, In>);
            break;
        case SegKernel::PACKED_ROWS:
            if constexpr (kPackable<In>) return aot_kernel<typename S::OneValue>(kernel, &packed_rows_kernel<Red, In>);
            break;
        case SegKernel::BLOCK_ROWS: return aot_kernel<typename S::BlockRows>(kernel, &block_rows_kernel<Red, In>);
        case SegKernel::COLUMNS: return aot_kernel<typename S::Rows>(kernel, &columns_kernel<Red, In, 1>);
        case SegKernel::PACKED_LANE_COLUMNS:
            return aot_kernel<typename S::Rows>(kernel, &columns_kernel<Red, In, kColumnPack<In, V>>);
        case SegKernel::FILL_IDENTITY: return aot_kernel<typename S::OneValue>(kernel, &fill_identity_kernel<P>);
        case SegKernel::PARTIALS_BLOCK: return aot_kernel<typename S::OneValue>(kernel, &partials_block_kernel<P>);
        case SegKernel::PARTIALS_ROWS: return aot_kernel<typename S::Rows>(kernel, &rows_kernel<P, V, true>);
        case SegKernel::COUNT: break;
        }
        return GR_ERR_INVALID_ARGUMENT;
    }

};

// The kernels compiled on first use (abi/jit.h: GR_JIT_REDUCE_SEGMENTS) for a (Reducer, input type) outside the hot
// set: the same templates, named by the operator, the kernel types and the Reducer's number (reducers.cuh:
// reducer_alternative).  Host code only: nothing of the device half is instantiated here.
struct JitSegKernels : ReducerNames {
    using ReducerNames::ReducerNames;
    // The name expression of kernel `k` into buf.
    void name(SegKernel k, char *buf, size_t size) const {
        switch (k) {
        case SegKernel::VECTOR_ROWS: std::snprintf(buf, size, "gr::vector_rows_kernel<%s, %s>", red, in); return;
        case SegKernel::ROWS: std::snprintf(buf, size, "gr::rows_kernel<%s, %s, false>", red, in); return;
        case SegKernel::PACKED_COLUMNS: std::snprintf(buf, size, "gr::packed_columns_kernel<%s, %s>", red, in); return;
        case SegKernel::PACKED_ROWS: std::snprintf(buf, size, "gr::packed_rows_kernel<%s, %s>", red, in); return;
        case SegKernel::BLOCK_ROWS: std::snprintf(buf, size, "gr::block_rows_kernel<%s, %s>", red, in); return;
        case SegKernel::COLUMNS: std::snprintf(buf, size, "gr::columns_kernel<%s, %s, 1>", red, in); return;
        case SegKernel::PACKED_LANE_COLUMNS:
            std::snprintf(buf, size, "gr::columns_kernel<%s, %s, gr::kColumnPack<%s, %s::V>>", red, in, in, red);
            return;
        case SegKernel::FILL_IDENTITY: std::snprintf(buf, size, "gr::fill_identity_kernel<%s::Partials>", red); return;
        case SegKernel::PARTIALS_BLOCK: std::snprintf(buf, size, "gr::partials_block_kernel<%s::Partials>", red); return;
        case SegKernel::PARTIALS_ROWS:
            std::snprintf(buf, size, "gr::rows_kernel<%s::Partials, %s::V, true>", red, red);
            return;
        case SegKernel::COUNT: break;
        }
        if (size) buf[0] = '\0';
    }
    gr_status get(SegKernel k, const void **kernel, int *cuda_error) const {
        return jit_kernel<GR_JIT_REDUCE_SEGMENTS>(*this, k, kernel, cuda_error);
    }
};

// Runs the plan of p with the kernels of `kernels` (AotSegKernels or JitSegKernels), of the types t; `init` is the
// Reducer's state for initial= (Red::V's bytes), passed to every kernel.
template <class Kernels>
gr_status seg_run(const SegProblem &p, const SegTypes &t, const void *init, unsigned *flags, char *scratch,
                  int sm_count, cudaStream_t stream, const Kernels &kernels, int *cuda_error) {
    const int64_t S_ = p.c0 * p.c1;
    if (S_ == 0) return GR_OK;
    const void *k = nullptr;
    auto take = [&](SegKernel which) { return kernels.get(which, &k, cuda_error); };
#define GR_TAKE(WHICH)                                  \
    do {                                                \
        const gr_status st_ = take(SegKernel::WHICH);   \
        if (st_ != GR_OK) return st_;                   \
    } while (0)
    // the arguments by address, each of its SegSignatures parameter's type
#define GR_LAUNCH(GRID, BLOCK, ...)                                                                    \
    do {                                                                                           \
        const cudaError_t e_ = launch_by_address(k, GRID, BLOCK, stream, {__VA_ARGS__});          \
        if (e_ != cudaSuccess) return cuda_status(e_, cuda_error);                                 \
    } while (0)
#define GR_CHECK_GRID(N)                                                       \
    do {                                                                       \
        const cudaError_t e_ = check_grid(N);                                  \
        if (e_ != cudaSuccess) return cuda_status(e_, cuda_error);             \
    } while (0)
    if (p.R == 0) {  // every segment empty: identity (with initial), mean's NaN, ...
        const int64_t blocks = ceil_div(S_, kSegBlock);
        GR_TAKE(FILL_IDENTITY);
        GR_LAUNCH(dim3(unsigned(blocks < 4096 ? blocks : 4096)), dim3(kSegBlock), &p, init);
        return GR_OK;
    }
    const SegPlan plan = seg_plan(p, sm_count, t);
    void *partials = plan.chunks > 1 ? scratch : nullptr;  // V's
    switch (plan.kind) {
    case SegPlan::ROWS:
        GR_CHECK_GRID(plan.grid);
        if (plan.vec_rows && t.vectorizable) {
            GR_TAKE(VECTOR_ROWS);
            GR_LAUNCH(dim3(unsigned(plan.grid)), dim3(kSegBlock), &p, &plan.group, init);
            break;
        }
        GR_TAKE(ROWS);
        GR_LAUNCH(dim3(unsigned(plan.grid)), dim3(kSegBlock), &p, &plan.group, &plan.chunks, &plan.L, &partials, init);
        break;
    case SegPlan::PACKED_COLUMNS:
        if (t.packable) {
            GR_CHECK_GRID(plan.grid);
            GR_TAKE(PACKED_COLUMNS);
            GR_LAUNCH(dim3(unsigned(plan.grid)), dim3(kSegBlock), &p, &partials, &flags, init);
            return GR_OK;  // single pass
        }
        break;
    case SegPlan::PACKED_ROWS:
        if (t.packable) {
            GR_CHECK_GRID(plan.grid);
            GR_TAKE(PACKED_ROWS);
            GR_LAUNCH(dim3(unsigned(plan.grid)), dim3(kSegBlock), &p, init);
        }
        break;
    case SegPlan::BLOCK_ROWS:
        GR_CHECK_GRID(plan.grid);
        GR_TAKE(BLOCK_ROWS);
        GR_LAUNCH(dim3(unsigned(plan.grid)), dim3(kBlockRowsThreads), &p, &plan.chunks, &plan.L, &partials, init);
        break;
    case SegPlan::COLUMNS: {
        const int64_t gz = p.c0 < 65535 ? p.c0 : 65535;
        GR_CHECK_GRID(plan.grid);
        const dim3 grid(unsigned(plan.grid), unsigned(plan.chunks), unsigned(gz));
        if (plan.pack > 1) GR_TAKE(PACKED_LANE_COLUMNS);
        else GR_TAKE(COLUMNS);
        GR_LAUNCH(grid, dim3(kSegBlock), &p, &plan.group, &plan.chunks, &plan.L, &partials, init);
        break;
    }
    }
    if (!partials) return GR_OK;
    // Second pass: each segment's chunk partials, contiguous, folded by a group of lanes.  It reads V values,
    // not the input, so it runs on Red::Partials: one instantiation for every input type with the same V.
    SegProblem q = p;
    q.in = partials;
    q.R = plan.chunks;
    q.mask = nullptr;
    q.second = nullptr;
    if (plan.chunks >= 256 && S_ <= int64_t(sm_count) * 64) {  // many partials per segment: a block each
        GR_TAKE(PARTIALS_BLOCK);
        GR_LAUNCH(dim3(unsigned(S_)), dim3(kSegBlock), &q, init);
        return GR_OK;
    }
    const int64_t warps = ceil_div(S_, kWarp / plan.second_group);
    const int64_t blocks = ceil_div(warps, kSegBlock / kWarp);
    const int64_t grid = blocks < int64_t(sm_count) * 32 ? blocks : int64_t(sm_count) * 32;
    GR_TAKE(PARTIALS_ROWS);
    const int64_t one_chunk = 1;
    void *no_partials = nullptr;
    GR_LAUNCH(dim3(unsigned(grid)), dim3(kSegBlock), &q, &plan.second_group, &one_chunk, &plan.chunks, &no_partials,
              init);
    return GR_OK;
#undef GR_TAKE
#undef GR_LAUNCH
#undef GR_CHECK_GRID
}

}  // namespace gr
