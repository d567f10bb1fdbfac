// ranges.cuh -- segmented reductions (issue 40), the host half: which algorithm of abi/ranges.def runs the ranges
// (gr_ranges, abi/gpureduce.h), how long ranges are cut into parts, the workspace, and the launches of
// axis/ranges_kernels.cuh.  Every (Reducer, input type) compiles its kernels on first use (GR_JIT_REDUCE_RANGES):
// nothing here is ahead of time, so the segmented family adds no kernel to the build.  Like seg_run, written once
// for every (Reducer, input type): the kernels' arguments go by address, Red::V's as bytes.
#pragma once
#include <cstdio>
#include "axis/kernel_source.cuh"
#include "axis/ranges_kernels.cuh"
#include "axis/segments.cuh"

namespace gr {

enum class RangeKernel { THREAD, LANES, WARP, BLOCK, PARTS, LONG, COUNT };

// The kernels of a (Reducer, input type), compiled on first use: the templates of axis/ranges_kernels.cuh named
// by the operator, the kernel types and the Reducer's number (reducers.cuh: reducer_alternative).
struct JitRangeKernels : ReducerNames {
    using ReducerNames::ReducerNames;
    void name(RangeKernel k, char *buf, size_t size) const {
        switch (k) {
        case RangeKernel::THREAD: std::snprintf(buf, size, "gr::ranges_thread_kernel<%s, %s>", red, in); return;
        case RangeKernel::LANES: std::snprintf(buf, size, "gr::ranges_lanes_kernel<%s, %s>", red, in); return;
        case RangeKernel::WARP: std::snprintf(buf, size, "gr::ranges_warp_kernel<%s, %s>", red, in); return;
        case RangeKernel::BLOCK: std::snprintf(buf, size, "gr::ranges_block_kernel<%s, %s>", red, in); return;
        case RangeKernel::PARTS: std::snprintf(buf, size, "gr::ranges_parts_kernel<%s::Partials>", red); return;
        case RangeKernel::LONG: std::snprintf(buf, size, "gr::ranges_long_kernel<%s, %s>", red, in); return;
        case RangeKernel::COUNT: break;
        }
        if (size) buf[0] = '\0';
    }
    gr_status get(RangeKernel k, const void **kernel, int *cuda_error) const {
        return jit_kernel<GR_JIT_REDUCE_RANGES>(*this, k, kernel, cuda_error);
    }
};

// Whether s->ranges can be run as given (sizing: only the workspace is asked, the bounds may be unplaced yet):
// the check the segmented reductions and scans make before anything else.
// The stops of RANGES_STARTS_STOPS: the caller's own array, or right after the starts; none for reduceat's form.
inline const int64_t *range_stops(const gr_ranges &g) {
    return g.form != GR_RANGES_STARTS_STOPS ? nullptr : g.stops ? g.stops : g.bounds + g.count;
}

inline bool ranges_ok(const gr_segments *s, bool sizing) {
    const gr_ranges &g = *s->ranges;
    return !(g.count < 0 || (g.count > 0 && !g.bounds && !sizing) || g.algorithm < 0 ||
             g.algorithm >= GR_RANGE_ALGORITHM_COUNT || (g.form != GR_RANGES_STARTS_STOPS && g.form != GR_RANGES_REDUCEAT) ||
             s->mask || s->second);
}

// The launch plan of the ranges: the algorithm, the lanes per range (LANES, THREAD, WARP) or the parts of a range
// (BLOCK), the grid.  Computed the same way for sizing and for running.
struct RangePlan {
    RangeKernel kernel = RangeKernel::THREAD;
    int group = 1;        // lanes per range (1: THREAD, 2..16: LANES, 32: WARP)
    int64_t parts = 1;    // BLOCK: parts per range (> 1: their values in the workspace, then the PARTS kernel)
    int64_t grid = 1;
    int64_t long_from = 0;   // auto's lanes: ranges from this length on go to the LONG kernel (0: none), a warp
    int64_t block_from = 0;  // each, from this length on a block each
    int64_t huge_from = 0;   // and from this length on parts of a few blocks
};

// Auto: a thread per range up to this mean length (H100, 2^26 float32, lengths 1-16: a thread 388 us, 16 lanes
// 1141 us; about 1000: a thread 470 us, a warp 120 us).
constexpr int64_t kRangeThreadTo = 32;
// Ranges shorter than this get lanes, longer ones a block: a warp reads a 2048-element float32 range in 16 steps of
// 16-byte loads, where a block's fold and its shared-memory step cost about as much as the reads.
constexpr int64_t kRangeBlockFrom = 2048;
// (kRangePartMin, ranges_kernels.cuh: a part of a cut range is at least this long.)
// Under auto, ranges from this length on are cut into parts when few enough (LongRanges: kHugeRanges).
constexpr int64_t kRangeHugeFrom = 8 * kRangePartMin;
// Under auto, a range this many times the mean length (and at least a warp's 32 elements) leaves the lanes for a
// warp of its own, from kRangeBlockFrom on for a block: among many small ranges a few long ones (power-law
// lengths) would hold up their warps (H100, 2^26 float32, Pareto(1.2) lengths: 1269 us with the blocks alone).
constexpr int64_t kRangeLongFactor = 8;

inline RangePlan range_plan(const SegProblem &p, const gr_ranges &g, int sm_count) {
    RangePlan plan;
    const int64_t items = p.c0 * p.c1 * g.count;
    const int64_t mean = g.mean_length > 0 ? g.mean_length : g.count > 0 ? ceil_div(p.R, g.count) : 0;
    const int64_t ir = p.ir < 0 ? -p.ir : p.ir, is1 = p.is1 < 0 ? -p.is1 : p.is1;
    const bool columns = p.c1 > 1 && is1 < ir;  // neighbouring work items read neighbouring elements
    int algorithm = g.algorithm;
    if (algorithm == GR_RANGES_AUTO)
        algorithm = columns || mean <= kRangeThreadTo ? GR_RANGES_THREAD
                    : mean < kRangeBlockFrom               ? GR_RANGES_LANES
                                                           : GR_RANGES_BLOCK;
    if (algorithm == GR_RANGES_BLOCK) {
        plan.kernel = RangeKernel::BLOCK;
        // cut the ranges when they are too few to give every SM a few blocks: about four waves of 256-thread
        // blocks, in parts of at least kRangePartMin
        const int64_t want = int64_t(sm_count) * 8 * 4;
        if (items < want && mean >= 2 * kRangePartMin) {
            const int64_t by_fill = want / items, by_length = mean / kRangePartMin;
            plan.parts = by_fill < by_length ? by_fill : by_length;
        }
        const int64_t work = items * plan.parts, cap = int64_t(sm_count) * 64;
        plan.grid = work < cap ? work : cap;
        return plan;
    }
    plan.group = algorithm == GR_RANGES_WARP ? kWarp : algorithm == GR_RANGES_LANES ? pow2_at_least(mean, kWarp) : 1;
    plan.kernel = plan.group == 1 ? RangeKernel::THREAD : plan.group < kWarp ? RangeKernel::LANES : RangeKernel::WARP;
    if (g.algorithm == GR_RANGES_AUTO) {
        const int64_t from = mean * kRangeLongFactor;
        plan.long_from = from > kWarp ? from : kWarp;
        plan.block_from = plan.long_from > kRangeBlockFrom ? plan.long_from : kRangeBlockFrom;
        plan.huge_from = plan.block_from > kRangeHugeFrom ? plan.block_from : kRangeHugeFrom;
    }
    const int64_t blocks = ceil_div(items * plan.group, int64_t(kSegBlock)), cap = int64_t(sm_count) * 32;
    plan.grid = blocks < cap ? blocks : cap;
    return plan;
}

// The huge ranges' items and their parts' values (LongRanges), after the long ranges' list.
inline size_t huge_workspace(size_t value_size) {
    return align_up(size_t(kHugeRanges) * 8, GR_WORKSPACE_ALIGN) +
           align_up(size_t(kHugeRanges) * kHugeParts * value_size, GR_WORKSPACE_ALIGN);
}

// Workspace bytes: the parts' values of a cut BLOCK plan; the list of long ranges of auto's lanes (a work item
// each, as many as there are items: overlapping ranges may all be long), its count and ticket in the zeroed bytes.
// Out of line: inlined into every Reducer's reduce_ranges it cost _core 33 KB (sm_75).
__attribute__((noinline)) inline size_t range_workspace(const SegProblem &p, const gr_ranges &g, size_t value_size,
                                                        int sm_count) {
    const int64_t items = p.c0 * p.c1 * g.count;
    if (items == 0) return 0;
    const RangePlan plan = range_plan(p, g, sm_count);
    if (plan.long_from > 0)
        return GR_WORKSPACE_ZEROED_BYTES + align_up(size_t(items) * 8, GR_WORKSPACE_ALIGN) + huge_workspace(value_size);
    if (plan.parts <= 1) return 0;
    return GR_WORKSPACE_ZEROED_BYTES + align_up(size_t(items * plan.parts) * value_size, GR_WORKSPACE_ALIGN);
}

// Runs the ranges of p (the whole reduction's layout; `ok` the output stride of k, gr_segments.reduce_out_stride)
// with the kernels of `kernels`; `init` is the Reducer's state of initial= (Red::V's bytes), folded into every
// range's value, `workspace` the call's (its zeroed bytes first).
template <class Kernels>
gr_status range_run(const SegProblem &p, const gr_ranges &g, int64_t ok, const void *init, char *workspace,
                    int sm_count, cudaStream_t stream, const Kernels &kernels, int *cuda_error) {
    char *scratch = workspace + GR_WORKSPACE_ZEROED_BYTES;
    const int64_t items = p.c0 * p.c1 * g.count;
    if (items == 0) return GR_OK;
    const RangeSet set{g.bounds, range_stops(g), g.count, ok, g.form};
    const RangePlan plan = range_plan(p, g, sm_count);
    auto launch = [&](RangeKernel which, int64_t grid, int block, std::initializer_list<const void *> args) {
        const void *k = nullptr;
        const gr_status st = kernels.get(which, &k, cuda_error);
        if (st != GR_OK) return st;
        const cudaError_t e = launch_by_address(k, dim3(unsigned(grid)), dim3(unsigned(block)), stream, args);
        return e == cudaSuccess ? GR_OK : cuda_status(e, cuda_error);
    };
    // the arguments of each kernel's signature in axis/ranges_kernels.cuh, in order, by address
    if (plan.kernel != RangeKernel::BLOCK) {
        // ranges_kernels.cuh: LongRanges.  The zeroed bytes hold its counts (bytes 0-15 and 24-31), the LONG
        // kernel's ticket (16-19) and the huge ranges' tickets (from 32); the scratch the long ranges' list, then
        // the huge ones' items and their parts' values (range_workspace).
        char *huge = plan.long_from ? scratch + align_up(size_t(items) * 8, GR_WORKSPACE_ALIGN) : nullptr;
        const LongRanges long_ranges{plan.long_from, plan.block_from, plan.huge_from,
                                     reinterpret_cast<unsigned long long *>(workspace),
                                     plan.long_from ? reinterpret_cast<int64_t *>(scratch) : nullptr, items,
                                     reinterpret_cast<int64_t *>(huge),
                                     huge ? huge + align_up(size_t(kHugeRanges) * 8, GR_WORKSPACE_ALIGN) : nullptr,
                                     plan.long_from ? reinterpret_cast<unsigned *>(workspace + 32) : nullptr};
        gr_status st = plan.kernel == RangeKernel::LANES
                           ? launch(RangeKernel::LANES, plan.grid, kSegBlock, {&p, &set, &plan.group, &long_ranges, init})
                           : launch(plan.kernel, plan.grid, kSegBlock, {&p, &set, &long_ranges, init});
        if (st != GR_OK || plan.long_from == 0) return st;
        static_assert(32 + kHugeRanges <= GR_WORKSPACE_ZEROED_BYTES, "the huge ranges' tickets");
        unsigned *ticket = reinterpret_cast<unsigned *>(workspace + 16);
        // two blocks an SM: resident at once whatever the Reducer's registers (up to 128), so an empty list costs
        // one wave and a ticket each
        return launch(RangeKernel::LONG, int64_t(sm_count) * 2, kRangeBlock, {&p, &set, &long_ranges, &ticket, init});
    }
    void *partials = plan.parts > 1 ? scratch : nullptr;  // Red::V's
    gr_status st = launch(RangeKernel::BLOCK, plan.grid, kRangeBlock, {&p, &set, &plan.parts, &partials, init});
    if (st != GR_OK || plan.parts == 1) return st;
    const int64_t blocks = ceil_div(items, int64_t(kSegBlock)), cap = int64_t(sm_count) * 32;
    return launch(RangeKernel::PARTS, blocks < cap ? blocks : cap, kSegBlock, {&p, &set, &plan.parts, &partials, init});
}

}  // namespace gr
