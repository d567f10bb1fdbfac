// scan_segments_cub.cuh -- variant `cub` of the scans along an axis: cub::DeviceScan's scan-by-key from the CUDA
// Toolkit over a virtual sequence (element i is position i % R of segment i / R; the key is the segment), read
// and written through the strided layout directly.  The baseline scan_segments.cuh is measured against.
#pragma once
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/permutation_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include "axis/divisor.cuh"
#include "axis/scan_segments.cuh"

namespace gr {

// Flat index i of the virtual sequence -> (i0, i1, r), with no 64-bit division in CUB's unrolled loads
// (divisor.cuh).
struct FlatIndex {
    Divisor by_R, by_c1;
    int64_t R, c1;
    __host__ static FlatIndex of(const ScanProblem &p) {
        return {Divisor::of(uint64_t(p.R)), Divisor::of(uint64_t(p.c1)), p.R, p.c1};
    }
    __host__ __device__ __forceinline__ int64_t segment(int64_t i) const { return int64_t(by_R.quotient(uint64_t(i))); }
    __host__ __device__ __forceinline__ void split(int64_t i, int64_t &i0, int64_t &i1, int64_t &r) const {
        const int64_t s = segment(i);
        r = i - s * R;
        i0 = int64_t(by_c1.quotient(uint64_t(s)));
        i1 = s - i0 * c1;
    }
};

struct SegmentOf {
    FlatIndex f;
    __host__ __device__ int64_t operator()(int64_t i) const { return f.segment(i); }
};

// Element i of the scanned sequence.  An exclusive scan is the inclusive scan of the input shifted by one
// within each segment (the identity first), so CUB's scan-by-key is instantiated once, not twice.
template <class Op, class In, class Acc>
struct ScanElement {
    ScanProblem p;
    FlatIndex f;
    bool exclusive;
    __host__ __device__ Acc operator()(int64_t i) const {
        int64_t i0, i1, r;
        f.split(i, i0, i1, r);
        if (exclusive) {
            if (r == 0) return Op::template identity<Acc>();
            r -= 1;
        }
        return scan_element<Op, Acc>(static_cast<const In *>(p.in)[i0 * p.is0 + i1 * p.is1 + r * p.ir]);
    }
};

struct ScanOutIndex {
    ScanProblem p;
    FlatIndex f;
    __host__ __device__ int64_t operator()(int64_t i) const {
        int64_t i0, i1, r;
        f.split(i, i0, i1, r);
        return i0 * p.os0 + i1 * p.os1 + r * p.orr;
    }
};

template <class Op, class Acc>
struct ScanCombine {
    __host__ __device__ Acc operator()(const Acc &a, const Acc &b) const { return Op()(a, b); }
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

template <class Op, class In, class Out>
cudaError_t cub_scan_segments(ScanProblem p, bool exclusive, char *scratch, size_t *bytes, cudaStream_t stream) {
    using Acc = typename accumulator<Out>::type;
    const int64_t n = p.c0 * p.c1 * p.R;
    *bytes = 0;
    if (n == 0) return cudaSuccess;
    const Span copy = input_copy_needed<In, Out>(p, exclusive);
    const size_t copy_bytes = align_up(copy.bytes, GR_WORKSPACE_ALIGN);
    if (scratch && copy.bytes) {
        GR_CUDA_TRY(cudaMemcpyAsync(scratch, copy.lo, copy.bytes, cudaMemcpyDeviceToDevice, stream));
        p.in = scratch + (static_cast<const char *>(p.in) - copy.lo);
    }
    auto count = thrust::counting_iterator<int64_t>(0);
    const FlatIndex f = FlatIndex::of(p);
    auto keys = thrust::make_transform_iterator(count, SegmentOf{f});
    auto values = thrust::make_transform_iterator(count, ScanElement<Op, In, Acc>{p, f, exclusive});
    auto out = thrust::make_permutation_iterator(static_cast<Out *>(p.out), thrust::make_transform_iterator(count, ScanOutIndex{p, f}));
    size_t temp = 0;
    GR_CUDA_TRY(cub::DeviceScan::InclusiveScanByKey(nullptr, temp, keys, values, out, ScanCombine<Op, Acc>{}, n,
                                                    cuda::std::equal_to<>{}, stream));
    if (scratch)
        GR_CUDA_TRY(cub::DeviceScan::InclusiveScanByKey(scratch + copy_bytes, temp, keys, values, out,
                                                        ScanCombine<Op, Acc>{}, n, cuda::std::equal_to<>{}, stream));
    *bytes = copy_bytes + temp;
    return cudaSuccess;
}

template <gr_op OP>
gr_status scan_segments_cub_op(const gr_args *a, const gr_segments *s, size_t *ws_bytes, int *cuda_error) {
    return with_segment_types<true, GR_KIND_SCAN, OP>(a->in_dtype, a->out_dtype, [&](auto in_tag, auto out_tag) -> gr_status {
        using In = tag_type<decltype(in_tag)>;
        using Out = tag_type<decltype(out_tag)>;
        using Op = typename op_functor<OP>::type;
        const ScanProblem p = scan_problem(a, s);
        size_t temp = 0;
        cudaError_t e = cub_scan_segments<Op, In, Out>(p, a->exclusive != 0, nullptr, &temp, static_cast<cudaStream_t>(a->stream));
        if (e != cudaSuccess) return cuda_status(e, cuda_error);
        const size_t need = GR_WORKSPACE_ZEROED_BYTES + temp;
        if (ws_bytes) {
            *ws_bytes = need;
            return GR_OK;
        }
        const bool moves = p.c0 * p.c1 * p.R > 0;
        if (!segment_args_ok<In, Out>(a, moves, moves, need)) return GR_ERR_INVALID_ARGUMENT;
        e = cub_scan_segments<Op, In, Out>(p, a->exclusive != 0, static_cast<char *>(a->workspace) + GR_WORKSPACE_ZEROED_BYTES,
                                           &temp, static_cast<cudaStream_t>(a->stream));
        return cuda_status(e, cuda_error);
    });
}

}  // namespace gr

#define GR_SCAN_SEGMENTS_CUB_OP(OP)                                                                          \
    extern "C" gr_status gr_scan_segments_cub_##OP(const gr_args *a, const gr_segments *s, size_t *ws, int *err) { \
        return gr::scan_segments_cub_op<GR_OP_##OP>(a, s, ws, err);                                          \
    }
