// scan_segments_cub.cuh -- variant `cub` of the scans along an axis: cub::DeviceScan's scan-by-key from the CUDA
// Toolkit over a virtual sequence (element i is position i % R of segment i / R; the key is the segment), read
// and written through the strided layout directly.  The baseline scan_segments.cuh is measured against.
#pragma once
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/permutation_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include "divisor.cuh"
#include "scan_segments.cuh"

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

template <class In, class Acc>
struct ScanElement {
    ScanProblem p;
    FlatIndex f;
    __host__ __device__ Acc operator()(int64_t i) const {
        int64_t i0, i1, r;
        f.split(i, i0, i1, r);
        return convert<Acc>(static_cast<const In *>(p.in)[i0 * p.is0 + i1 * p.is1 + r * p.ir]);
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

template <class Op, class In, class Out>
cudaError_t cub_scan_segments(const ScanProblem &p, bool exclusive, char *scratch, size_t *bytes, cudaStream_t stream) {
    using Acc = typename accumulator<Out>::type;
    const int64_t n = p.c0 * p.c1 * p.R;
    *bytes = 0;
    if (n == 0) return cudaSuccess;
    auto count = thrust::counting_iterator<int64_t>(0);
    const FlatIndex f = FlatIndex::of(p);
    auto keys = thrust::make_transform_iterator(count, SegmentOf{f});
    auto values = thrust::make_transform_iterator(count, ScanElement<In, Acc>{p, f});
    auto out = thrust::make_permutation_iterator(static_cast<Out *>(p.out), thrust::make_transform_iterator(count, ScanOutIndex{p, f}));
    size_t temp = 0;
    void *storage = scratch;
    for (int pass = scratch ? 1 : 0; pass < 2; pass++) {
        if (exclusive)
            GR_CUDA_TRY(cub::DeviceScan::ExclusiveScanByKey(pass ? storage : nullptr, temp, keys, values, out,
                                                            ScanCombine<Op, Acc>{}, Op::template identity<Acc>(), n,
                                                            cuda::std::equal_to<>{}, stream));
        else
            GR_CUDA_TRY(cub::DeviceScan::InclusiveScanByKey(pass ? storage : nullptr, temp, keys, values, out,
                                                            ScanCombine<Op, Acc>{}, n, cuda::std::equal_to<>{}, stream));
        if (!scratch) break;
    }
    *bytes = temp;
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
