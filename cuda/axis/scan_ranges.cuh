// scan_ranges.cuh -- segmented scans (issue 40), the host half: which kernel of axis/scan_ranges_kernels.cuh
// scans the ranges (gr_ranges, abi/gpureduce.h), how long ranges are cut into parts, the workspace, the launches.
// Every (operator, input, result) compiles its kernels on first use (GR_JIT_SCAN_RANGES): nothing here is ahead of
// time, so the segmented scans add no kernel to the build.
#pragma once
#include <cstdio>
#include "axis/kernel_source.cuh"
#include "axis/ranges.cuh"
#include "axis/scan_ranges_kernels.cuh"
#include "axis/segments_dispatch.cuh"

namespace gr {

// Blocks of 256 threads for `threads` work items, at most 32 per SM (the kernels stride over the rest); the axis
// scans' (scan_segments.cuh) and the segmented scans' grids.
inline int64_t grid_for(int64_t threads, int sm_count) {
    const int64_t blocks = ceil_div(threads, int64_t(256));
    return blocks < int64_t(sm_count) * 32 ? blocks : int64_t(sm_count) * 32;
}

enum class ScanRangeKernel {
    FILL, THREAD, WARP_TOTALS, WARP, PART_PREFIXES_WARP, PART_PREFIXES_BLOCK, LONG_TOTALS, LONG_PREFIXES, LONG,
    COUNT
};

// The kernels of an (operator, input, result), compiled on first use.  Host code only.
struct JitScanRangeKernels : ScanNames {
    using ScanNames::ScanNames;
    void name(ScanRangeKernel k, char *buf, size_t size) const {
        switch (k) {
        case ScanRangeKernel::FILL: std::snprintf(buf, size, "gr::scan_ranges_fill_kernel<%s, %s>", op, out); return;
        case ScanRangeKernel::THREAD:
            std::snprintf(buf, size, "gr::scan_ranges_thread_kernel<%s, %s, %s>", op, in, out);
            return;
        case ScanRangeKernel::WARP_TOTALS:
        case ScanRangeKernel::WARP:
            std::snprintf(buf, size, "gr::scan_ranges_warp_kernel<%s, %s, %s, %s>", op, in, out,
                          k == ScanRangeKernel::WARP ? "true" : "false");
            return;
        case ScanRangeKernel::LONG_TOTALS:
        case ScanRangeKernel::LONG:
            std::snprintf(buf, size, "gr::scan_ranges_long_kernel<%s, %s, %s, %s>", op, in, out,
                          k == ScanRangeKernel::LONG ? "true" : "false");
            return;
        case ScanRangeKernel::LONG_PREFIXES:
            std::snprintf(buf, size, "gr::scan_ranges_long_prefix_kernel<%s, %s, %s>", op, in, out);
            return;
        case ScanRangeKernel::PART_PREFIXES_WARP:
        case ScanRangeKernel::PART_PREFIXES_BLOCK:
            std::snprintf(buf, size, "gr::scan_chunk_totals_kernel<%s, gr::accumulator<%s>::type, %d>", op, out,
                          k == ScanRangeKernel::PART_PREFIXES_BLOCK ? 256 : kWarp);
            return;
        case ScanRangeKernel::COUNT: break;
        }
        if (size) buf[0] = '\0';
    }
    gr_status get(ScanRangeKernel k, const void **kernel, int *cuda_error) const {
        return jit_kernel<GR_JIT_SCAN_RANGES>(*this, k, kernel, cuda_error);
    }
};

// Auto: a warp per range from this mean length on, a thread per range below (a warp scans 128 elements per step:
// shorter ranges leave most of its lanes idle).
constexpr int64_t kScanRangeWarpFrom = 32;
// A part of a cut range is at least this long, so the fold pass and the scan pass each read enough to hide a
// warp's start (the axis scans' rows are cut at 2048 too).
constexpr int64_t kScanRangePartMin = 2048;
// Under auto, a range this many times the mean length leaves the thread or warp kernel for the long kernels (at
// least kScanRangeLongThread elements for the thread kernel, whose thread would walk it alone, and
// kScanRangeLongPart for the warp kernel), which cut it into parts of kScanRangeLongPart, a warp each.
constexpr int64_t kScanRangeLongFactor = 8, kScanRangeLongThread = 128, kScanRangeLongPart = 8192;

struct ScanRangePlan {
    bool thread = false;  // a thread per work item, else a warp per (work item, part)
    bool tiled = false;   // thread: groups of ranges staged through shared memory (a row layout)
    int64_t parts = 1;
    int64_t grid = 1;
    int64_t long_from = 0;  // auto: ranges from this length on go to the long kernels (0: none)
};

// The algorithm of abi/ranges.def, as a scan runs it: thread a thread per range; lanes and warp a warp per range;
// block a warp per part of each range, cut so that the parts fill the GPU; auto: thread for every column layout
// and for a mean below kScanRangeWarpFrom, else block (which cuts only ranges too few to fill the GPU).
inline ScanRangePlan scan_range_plan(const ScanProblem &p, const gr_ranges &g, int sm_count) {
    ScanRangePlan plan;
    const int64_t items = p.c0 * p.c1 * g.count;
    const int64_t mean = g.mean_length > 0 ? g.mean_length : g.count > 0 ? ceil_div(p.R, g.count) : 0;
    const int64_t ir = p.ir < 0 ? -p.ir : p.ir, is1 = p.is1 < 0 ? -p.is1 : p.is1;
    const bool columns = p.c1 > 1 && is1 < ir;
    int algorithm = g.algorithm;
    if (algorithm == GR_RANGES_AUTO)
        algorithm = columns || mean < kScanRangeWarpFrom ? GR_RANGES_THREAD : GR_RANGES_BLOCK;
    // auto's long ranges (none in a column layout, whose threads read neighbouring elements whatever the length;
    // none where the longest is known to be shorter)
    const int64_t floor = algorithm == GR_RANGES_THREAD ? kScanRangeLongThread : kScanRangeLongPart;
    const int64_t from = mean * kScanRangeLongFactor > floor ? mean * kScanRangeLongFactor : floor;
    const bool lists = g.algorithm == GR_RANGES_AUTO && !columns && (g.max_length == 0 || g.max_length >= from);
    if (algorithm == GR_RANGES_THREAD) {
        plan.thread = true;
        plan.tiled = !columns;
        plan.grid = grid_for(items, sm_count);
        plan.long_from = lists ? from : 0;
        return plan;
    }
    const int64_t resident_warps = int64_t(sm_count) * 64;
    if (algorithm == GR_RANGES_BLOCK && items < resident_warps && mean >= 2 * kScanRangePartMin) {
        const int64_t by_fill = ceil_div(resident_warps, items), by_length = mean / kScanRangePartMin;
        plan.parts = by_fill < by_length ? by_fill : by_length;
    }
    plan.grid = grid_for(items * plan.parts * kWarp, sm_count);
    plan.long_from = lists && plan.parts == 1 ? from : 0;
    return plan;
}

// The long ranges' slots at most: every range from long_from on takes ceil(len / kScanRangeLongPart) of them, and
// the ranges of a row are disjoint, so their lengths add up to R at most.
inline int64_t long_slots(const ScanProblem &p, const ScanRangePlan &plan) {
    if (plan.long_from == 0) return 0;
    return p.c0 * p.c1 * (p.R / kScanRangeLongPart + p.R / plan.long_from + 1);
}

// Workspace bytes (acc_size: sizeof the result's accumulator): the parts' totals of a cut plan; or the long
// ranges' slots and their totals, the count of slots taken and the long kernel's ticket in the zeroed bytes.
inline size_t scan_range_workspace(const ScanProblem &p, const gr_ranges &g, size_t acc_size, int sm_count) {
    const int64_t items = p.c0 * p.c1 * g.count;
    if (items == 0 || p.R == 0) return 0;
    const ScanRangePlan plan = scan_range_plan(p, g, sm_count);
    if (const int64_t slots = long_slots(p, plan))
        return GR_WORKSPACE_ZEROED_BYTES + align_up(size_t(slots) * 16, GR_WORKSPACE_ALIGN) +
               align_up(size_t(slots) * acc_size, GR_WORKSPACE_ALIGN);
    return plan.parts > 1 ? GR_WORKSPACE_ZEROED_BYTES + align_up(size_t(items * plan.parts) * acc_size, GR_WORKSPACE_ALIGN)
                          : 0;
}

// Runs the segmented scan of g over p: the identity first where g.gaps says some positions lie in no range, then
// the plan's kernels.  The arguments go by address, in the order of each kernel's signature.
template <class Kernels>
gr_status scan_range_run(const ScanProblem &p, const gr_ranges &g, bool exclusive, char *workspace, int sm_count,
                         cudaStream_t stream, const Kernels &kernels, int *cuda_error) {
    if (p.c0 * p.c1 == 0 || p.R == 0) return GR_OK;
    auto launch = [&](ScanRangeKernel which, int64_t grid, std::initializer_list<const void *> args) {
        const void *k = nullptr;
        const gr_status st = kernels.get(which, &k, cuda_error);
        if (st != GR_OK) return st;
        const cudaError_t e = launch_by_address(k, dim3(unsigned(grid)), dim3(256), stream, args);
        return e == cudaSuccess ? GR_OK : cuda_status(e, cuda_error);
    };
    if (g.gaps) {
        const gr_status st = launch(ScanRangeKernel::FILL, grid_for(p.c0 * p.c1 * p.R, sm_count), {&p});
        if (st != GR_OK) return st;
    }
    const int64_t items = p.c0 * p.c1 * g.count;
    if (items == 0) return GR_OK;
    const RangeSet set{g.bounds, range_stops(g), g.count, 0, g.form};
    const ScanRangePlan plan = scan_range_plan(p, g, sm_count);
    // scan_ranges_kernels.cuh: LongParts; the count at the zeroed bytes' start, the long kernel's ticket after it
    const int64_t slots = long_slots(p, plan);
    char *const scratch = workspace + GR_WORKSPACE_ZEROED_BYTES;
    const LongParts long_parts{plan.long_from, kScanRangeLongPart, reinterpret_cast<unsigned long long *>(workspace),
                               reinterpret_cast<unsigned *>(workspace + 8),
                               slots ? reinterpret_cast<int64_t *>(scratch) : nullptr, slots};
    void *long_totals = slots ? scratch + align_up(size_t(slots) * 16, GR_WORKSPACE_ALIGN) : nullptr;  // Acc's
    // the listed long ranges: fold their parts, each range's part prefixes, scan the parts (the grid strides over
    // the count the kernels read)
    auto long_ranges = [&]() {
        const int64_t grid = int64_t(sm_count) * 8;
        gr_status st = launch(ScanRangeKernel::LONG_TOTALS, grid, {&p, &set, &exclusive, &long_parts, &long_totals});
        if (st == GR_OK) st = launch(ScanRangeKernel::LONG_PREFIXES, grid, {&p, &set, &long_parts, &long_totals});
        if (st == GR_OK) st = launch(ScanRangeKernel::LONG, grid, {&p, &set, &exclusive, &long_parts, &long_totals});
        return st;
    };
    if (plan.thread) {
        const gr_status st = launch(ScanRangeKernel::THREAD, plan.grid, {&p, &set, &exclusive, &long_parts, &plan.tiled});
        return st != GR_OK || !slots ? st : long_ranges();
    }
    void *totals = plan.parts > 1 ? scratch : nullptr;  // the accumulator's
    if (totals) {
        gr_status st = launch(ScanRangeKernel::WARP_TOTALS, plan.grid,
                              {&p, &set, &plan.parts, &exclusive, &totals, &long_parts});
        if (st != GR_OK) return st;
        // each item's part totals -> the prefix of each part: a block per item when the parts are many
        const bool block = plan.parts > 8 * kWarp;
        const int64_t groups = block ? items : ceil_div(items * kWarp, int64_t(256)), cap = block ? 65535 : 4096;
        st = launch(block ? ScanRangeKernel::PART_PREFIXES_BLOCK : ScanRangeKernel::PART_PREFIXES_WARP,
                    groups < cap ? groups : cap, {&totals, &items, &plan.parts});
        if (st != GR_OK) return st;
    }
    const gr_status st = launch(ScanRangeKernel::WARP, plan.grid, {&p, &set, &plan.parts, &exclusive, &totals, &long_parts});
    return st != GR_OK || !slots ? st : long_ranges();
}

// Plans (ws_bytes != nullptr: the workspace bytes) or runs the segmented scan of s->ranges over p, operator `op`
// from `in` to `out` (acc_size: sizeof the result's accumulator; the alignments the elements need).  Not a
// template: the same host code for every (operator, input, result), which only name their kernels.
inline gr_status scan_ranges_entry(const gr_args *a, const gr_segments *s, const ScanProblem &p, gr_op op,
                                   gr_dtype in, gr_dtype out, size_t acc_size, size_t in_align, size_t out_align,
                                   size_t *ws_bytes, int *cuda_error) {
    if (!ranges_ok(s, ws_bytes != nullptr)) return GR_ERR_INVALID_ARGUMENT;
    const gr_ranges &g = *s->ranges;
    const size_t need = scan_range_workspace(p, g, acc_size, a->sm_count);
    if (ws_bytes) {
        *ws_bytes = need;
        return GR_OK;
    }
    const bool writes = p.c0 * p.c1 * p.R > 0;
    if (!segment_args_ok(a, writes, writes && g.count > 0, need, in_align, out_align)) return GR_ERR_INVALID_ARGUMENT;
    return scan_range_run(p, g, a->exclusive != 0, static_cast<char *>(a->workspace), a->sm_count,
                          static_cast<cudaStream_t>(a->stream), JitScanRangeKernels(op, in, out), cuda_error);
}

}  // namespace gr
