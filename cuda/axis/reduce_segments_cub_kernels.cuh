// reduce_segments_cub_kernels.cuh -- variant `cub` of the axis reductions, the device half: CUB's own
// segmented-reduction kernel (cub::detail::reduce::DeviceSegmentedReduceKernel under CUB's tuned policies, what
// cub::DeviceSegmentedReduce::Reduce launches) over the strided layout seen as one virtual sequence, and the
// kernel that finishes CUB's values into out.  Kernels and the types they take only, so that NVRTC compiles it
// too (abi/jit.h: GR_JIT_REDUCE_SEGMENTS_CUB); the launches are the host half, axis/reduce_segments_cub.cuh.
#pragma once
#include "axis/cub_under_nvrtc.cuh"  // before CUB's headers
#include <cub/device/dispatch/kernels/segmented_reduce.cuh>
#include <cub/device/dispatch/tuning/tuning_reduce.cuh>
#include "axis/divisor.cuh"
#include "axis/segments_kernels.cuh"

namespace gr {

// The virtual sequence: element i is position i % R of segment i / R.  Divisors, not 64-bit `/`, at CUB's
// unrolled loads (divisor.cuh).  The same for every Reducer and input type, so the host half builds it untyped.
struct VirtualLayout {
    SegProblem p;
    Divisor by_R, by_c1;
    int64_t first;
};

// The virtual sequence as a random-access iterator, each element loaded through the same Reducer (mask, position,
// conversion) as the axis kernels; a VirtualLayout and nothing more.
template <class Red, class In>
struct VirtualInput : VirtualLayout {
    using iterator_category = cuda::std::random_access_iterator_tag;
    using value_type = typename Red::V;
    using difference_type = int64_t;
    using pointer = const value_type *;
    using reference = value_type;
    __device__ value_type operator[](int64_t k) const {
        const int64_t i = first + k;
        const int64_t s = int64_t(by_R.quotient(uint64_t(i))), r = i - s * p.R;
        const int64_t i0 = int64_t(by_c1.quotient(uint64_t(s))), i1 = s - i0 * p.c1;
        return seg_load<Red, In>(p, i0 * p.is0 + i1 * p.is1, i0 * p.ms0 + i1 * p.ms1, r);
    }
    __device__ value_type operator*() const { return (*this)[0]; }
    __host__ __device__ VirtualInput operator+(int64_t k) const { return {{p, by_R, by_c1, first + k}}; }
};

// Where segment s starts in the virtual sequence (s * R), from segment `first` on.
struct SegmentStarts {
    using iterator_category = cuda::std::random_access_iterator_tag;
    using value_type = int64_t;
    using difference_type = int64_t;
    using pointer = const int64_t *;
    using reference = int64_t;
    int64_t R, first;
    __device__ int64_t operator[](int64_t k) const { return (first + k) * R; }
    __device__ int64_t operator*() const { return first * R; }
    __host__ __device__ SegmentStarts operator+(int64_t k) const { return {R, first + k}; }
};

// (empty: a kernel parameter of one byte)
template <class Red>
struct CombineOp {
    __host__ __device__ typename Red::V operator()(const typename Red::V &a, const typename Red::V &b) const {
        return Red::combine(a, b);
    }
};

// The types cub::DeviceSegmentedReduce::Reduce picks for these iterators (offsets int64_t, the initial value
// and the accumulator Red::V), and its policy hub: CubSegments<Red, In>::Kernel is the kernel it launches.
template <class Red, class In>
struct CubSegments {
    using V = typename Red::V;
    using Policy = typename cub::detail::reduce::policy_hub<V, int64_t, CombineOp<Red>>::MaxPolicy;
    using Signature = void (*)(VirtualInput<Red, In>, V *, SegmentStarts, SegmentStarts, CombineOp<Red>, V);
};

// One thread per segment: CUB's value of segment s (or the identity for an empty one) stored into out.
template <class Red>
__global__ void finish_segments_kernel(SegProblem p, const typename Red::V *values, typename Red::V init) {
    const int64_t S = p.c0 * p.c1;
    for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s < S; s += int64_t(gridDim.x) * blockDim.x)
        seg_store<Red>(p, s, 0, 1, values[s], nullptr, init);
}

}  // namespace gr
