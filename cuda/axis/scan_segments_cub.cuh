// scan_segments_cub.cuh -- variant `cub` of the scans along an axis, the host half: CUB's scan-by-key
// (axis/scan_segments_cub_kernels.cuh) over a virtual sequence (element i is position i % R of segment i / R; the
// key is the segment), read and written through the strided layout directly, launched as
// cub::DeviceScan::InclusiveScanByKey launches it: its tile state and the key before each tile in the
// workspace, an init kernel, then the agent's kernel over all tiles.  The baseline scan_segments.cuh is measured
// against.  Its kernels come from a kernel set, as gpureduce's do: the hot set's compiled here (AotCubScanKernels),
// the others by NVRTC on first use (JitCubScanKernels), CUB's own agent and policies either way.
#pragma once
#include <cstdio>
#include "axis/kernel_source.cuh"
#include "axis/scan_segments.cuh"  // scan_problem; no axis kernel is instantiated here
#include "axis/scan_segments_cub_kernels.cuh"

namespace gr {

enum class CubScanKernel { INIT, SCAN, COUNT };

template <class Op, class In, class Out>
struct CubScanSignatures {
    using C = CubScanByKey<Op, In, Out>;
    using Init = void (*)(typename C::TileState, SegmentKeys, int64_t *, unsigned long long, int);
    using Scan = void (*)(SegmentKeys, int64_t *, typename C::Values, typename C::Output, typename C::TileState, int,
                          unsigned long long);
};

// The kernels compiled here, for a hot (operator, input, result): their addresses (instantiating them).
template <class Op, class In, class Out>
struct AotCubScanKernels {
    gr_status get(CubScanKernel k, const void **kernel, int *) const {
        using S = CubScanSignatures<Op, In, Out>;
        switch (k) {
        case CubScanKernel::INIT:
            return aot_kernel<typename S::Init>(kernel, &cub_scan_by_key_init_kernel<typename CubScanByKey<Op, In, Out>::Acc>);
        case CubScanKernel::SCAN: return aot_kernel<typename S::Scan>(kernel, &cub_scan_by_key_kernel<Op, In, Out>);
        case CubScanKernel::COUNT: break;
        }
        return GR_ERR_INVALID_ARGUMENT;
    }
};

// The kernels compiled on first use (abi/jit.h: GR_JIT_SCAN_SEGMENTS_CUB) outside the hot set: the same
// templates, named by the operator and the kernel types.  Host code only.
struct JitCubScanKernels : ScanNames {
    using ScanNames::ScanNames;
    void name(CubScanKernel k, char *buf, size_t size) const {
        switch (k) {
        case CubScanKernel::INIT:  // of the accumulator only
            std::snprintf(buf, size, "gr::cub_scan_by_key_init_kernel<gr::accumulator<%s>::type>", out);
            return;
        case CubScanKernel::SCAN: std::snprintf(buf, size, "gr::cub_scan_by_key_kernel<%s, %s, %s>", op, in, out); return;
        case CubScanKernel::COUNT: break;
        }
        if (size) buf[0] = '\0';
    }
    gr_status get(CubScanKernel k, const void **kernel, int *cuda_error) const {
        return jit_kernel<GR_JIT_SCAN_SEGMENTS_CUB>(*this, k, kernel, cuda_error);
    }
};

// The bytes spanned by `count` elements of `size` bytes from `base`, with these element strides (any sign).
struct Span {
    const char *lo = nullptr;
    size_t bytes = 0;
};

inline Span span_of(const void *base, size_t size, const int64_t (&extent)[3], const int64_t (&stride)[3]) {
    int64_t lo = 0, hi = 0;
    for (int d = 0; d < 3; d++) {
        const int64_t reach = (extent[d] - 1) * stride[d];
        (reach < 0 ? lo : hi) += reach;
    }
    return {static_cast<const char *>(base) + lo * int64_t(size), size_t(hi - lo + 1) * size};
}

// An exclusive scan reads element r - 1 for output r; CUB writes a tile's outputs once its own inputs are read,
// so an output that shares memory with the input (out= the input itself) would feed the next tile a result,
// not an input.  Such an input is read from a copy in the workspace.
template <class In, class Out>
Span input_copy_needed(const ScanProblem &p, bool exclusive) {
    if (!exclusive) return {};
    const Span in = span_of(p.in, sizeof(In), {p.c0, p.c1, p.R}, {p.is0, p.is1, p.ir});
    const Span out = span_of(p.out, sizeof(Out), {p.c0, p.c1, p.R}, {p.os0, p.os1, p.orr});
    return in.lo < out.lo + out.bytes && out.lo < in.lo + in.bytes ? in : Span{};
}

// The tile of CUB's policy for PTX version `ptx` (CUB's numbering: 900 for compute_90), which the scan kernel
// compiled for that version runs with: its threads and its items per tile.
struct CubScanTile {
    int threads = 0, items = 0;
    template <class ActivePolicy>
    cudaError_t Invoke() {
        threads = ActivePolicy::ScanByKeyPolicyT::BLOCK_THREADS;
        items = threads * ActivePolicy::ScanByKeyPolicyT::ITEMS_PER_THREAD;
        return cudaSuccess;
    }
};

// Where the workspace holds what CUB's scan-by-key needs for p, in the order the bytes lie: the input's copy
// (input_copy_needed), the tile state, the key before each tile.
struct CubScanLayout {
    Span copy;
    size_t copy_bytes = 0, state_bytes = 0, keys_bytes = 0;
    int tiles = 0;
    size_t total() const { return copy_bytes + state_bytes + keys_bytes; }
};

// The layout of p for the scan kernel `scan` (its PTX version picks CUB's policy, as on the device).
template <class Op, class In, class Out>
gr_status cub_scan_layout(const ScanProblem &p, bool exclusive, const void *scan, CubScanLayout *layout,
                          CubScanTile *tile, int *cuda_error) {
    using C = CubScanByKey<Op, In, Out>;
    cudaFuncAttributes attributes;
    cudaError_t e = cudaFuncGetAttributes(&attributes, scan);
    if (e != cudaSuccess) return cuda_status(e, cuda_error);
    e = C::Policy::Invoke(attributes.ptxVersion * 10, *tile);
    if (e != cudaSuccess) return cuda_status(e, cuda_error);
    // the policy the host picked is the kernel's: its block is the one its __launch_bounds__ states
    if (tile->threads != attributes.maxThreadsPerBlock) return GR_ERR_INVALID_ARGUMENT;
    const int64_t n = p.c0 * p.c1 * p.R;
    const int64_t tiles = ceil_div(n, int64_t(tile->items));
    if (tiles > int64_t(INT32_MAX)) return GR_ERR_INVALID_ARGUMENT;  // CUB's tile index is an int
    layout->tiles = int(tiles);
    layout->copy = input_copy_needed<In, Out>(p, exclusive);
    layout->copy_bytes = align_up(layout->copy.bytes, GR_WORKSPACE_ALIGN);
    e = C::TileState::AllocationSize(layout->tiles, layout->state_bytes);
    if (e != cudaSuccess) return cuda_status(e, cuda_error);
    layout->state_bytes = align_up(layout->state_bytes, GR_WORKSPACE_ALIGN);
    layout->keys_bytes = align_up(sizeof(int64_t) * size_t(tiles + 1), GR_WORKSPACE_ALIGN);
    return GR_OK;
}

// Runs p with the kernels of `kernels` (AotCubScanKernels or JitCubScanKernels); with no scratch, only says the
// bytes of workspace it needs.
template <class Op, class In, class Out, class Kernels>
gr_status cub_scan_run(ScanProblem p, bool exclusive, char *scratch, size_t *bytes, cudaStream_t stream,
                       const Kernels &kernels, int *cuda_error) {
    using C = CubScanByKey<Op, In, Out>;
    using S = CubScanSignatures<Op, In, Out>;
    *bytes = 0;
    if (p.c0 * p.c1 * p.R == 0) return GR_OK;
    const void *scan = nullptr, *init = nullptr;
    gr_status st = kernels.get(CubScanKernel::SCAN, &scan, cuda_error);
    if (st != GR_OK) return st;
    CubScanLayout layout;
    CubScanTile tile;
    st = cub_scan_layout<Op, In, Out>(p, exclusive, scan, &layout, &tile, cuda_error);
    if (st != GR_OK) return st;
    *bytes = layout.total();
    if (!scratch) return GR_OK;
    st = kernels.get(CubScanKernel::INIT, &init, cuda_error);
    if (st != GR_OK) return st;
    if (layout.copy.bytes) {
        const cudaError_t e = cudaMemcpyAsync(scratch, layout.copy.lo, layout.copy.bytes, cudaMemcpyDeviceToDevice, stream);
        if (e != cudaSuccess) return cuda_status(e, cuda_error);
        p.in = scratch + (static_cast<const char *>(p.in) - layout.copy.lo);
    }
    typename C::TileState state;
    char *state_bytes = scratch + layout.copy_bytes;
    cudaError_t e = state.Init(layout.tiles, state_bytes, layout.state_bytes);
    if (e != cudaSuccess) return cuda_status(e, cuda_error);
    int64_t *keys_before = reinterpret_cast<int64_t *>(state_bytes + layout.state_bytes);
    const FlatIndex f = FlatIndex::of(p);
    const SegmentKeys keys(f, 0);
    const unsigned long long items = (unsigned long long)(p.c0 * p.c1 * p.R);
    e = Launcher<typename S::Init>::run(init, dim3(unsigned(ceil_div(layout.tiles, C::kInitThreads))),
                                        dim3(C::kInitThreads), stream, state, keys, keys_before,
                                        (unsigned long long)tile.items, layout.tiles);
    if (e != cudaSuccess) return cuda_status(e, cuda_error);
    // as many tiles a launch as a grid holds (65535 on no GPU this runs on, 2^31 - 1 on all)
    int device = 0, max_grid = 0;
    e = cudaGetDevice(&device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&max_grid, cudaDevAttrMaxGridDimX, device);
    if (e != cudaSuccess) return cuda_status(e, cuda_error);
    const int grid = layout.tiles < max_grid ? layout.tiles : max_grid;
    const typename C::Values values(p, f, exclusive, 0);
    const typename C::Output out(p, f, 0);
    for (int start = 0; start < layout.tiles; start += grid) {
        e = Launcher<typename S::Scan>::run(scan, dim3(unsigned(grid)), dim3(unsigned(tile.threads)), stream, keys,
                                            keys_before, values, out, state, start, items);
        if (e != cudaSuccess) return cuda_status(e, cuda_error);
    }
    return GR_OK;
}

// Runs (or sizes, with no scratch) p with the kernels of its (operator, input, result): the hot set's compiled
// here, the others on first use (their host half only is here).
template <gr_op OP, class In, class Out>
gr_status cub_scan_call(const ScanProblem &p, bool exclusive, char *scratch, size_t *bytes, cudaStream_t stream,
                        int *cuda_error) {
    using Op = typename op_functor<OP>::type;
    if constexpr (is_hot_cub_kernel(GR_KIND_SCAN, OP, dtype_of<In>::value, dtype_of<Out>::value)) {
        return cub_scan_run<Op, In, Out>(p, exclusive, scratch, bytes, stream, AotCubScanKernels<Op, In, Out>{},
                                         cuda_error);
    } else {
        return cub_scan_run<Op, In, Out>(p, exclusive, scratch, bytes, stream,
                                         JitCubScanKernels(OP, dtype_of<In>::value, dtype_of<Out>::value), cuda_error);
    }
}

template <gr_op OP>
gr_status scan_segments_cub_op(const gr_args *a, const gr_segments *s, size_t *ws_bytes, int *cuda_error) {
    return with_segment_types<true, GR_KIND_SCAN, OP>(a->in_dtype, a->out_dtype, [&](auto in_tag, auto out_tag) -> gr_status {
        using In = tag_type<decltype(in_tag)>;
        using Out = tag_type<decltype(out_tag)>;
        const ScanProblem p = scan_problem(a, s);
        const bool exclusive = a->exclusive != 0;
        const cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
        size_t temp = 0;
        const gr_status st = cub_scan_call<OP, In, Out>(p, exclusive, nullptr, &temp, stream, cuda_error);
        if (st != GR_OK) return st;
        const size_t need = GR_WORKSPACE_ZEROED_BYTES + temp;
        if (ws_bytes) {
            *ws_bytes = need;
            return GR_OK;
        }
        const bool moves = p.c0 * p.c1 * p.R > 0;
        if (!segment_args_ok<In, Out>(a, moves, moves, need)) return GR_ERR_INVALID_ARGUMENT;
        return cub_scan_call<OP, In, Out>(p, exclusive, static_cast<char *>(a->workspace) + GR_WORKSPACE_ZEROED_BYTES,
                                          &temp, stream, cuda_error);
    });
}

}  // namespace gr

#define GR_SCAN_SEGMENTS_CUB_OP(OP)                                                                          \
    extern "C" gr_status gr_scan_segments_cub_##OP(const gr_args *a, const gr_segments *s, size_t *ws, int *err) { \
        return gr::scan_segments_cub_op<GR_OP_##OP>(a, s, ws, err);                                          \
    }
