// scan_segments_cub_kernels.cuh -- variant `cub` of the scans along an axis, the device half: CUB's scan-by-key
// (its agent, cub::detail::scan_by_key::AgentScanByKey, under its tuned policies: what
// cub::DeviceScan::InclusiveScanByKey runs) over the strided layout seen as one virtual sequence whose key is the
// segment.  CUB defines its own kernel entry in its host dispatch header, which NVRTC cannot compile (it includes
// Thrust's launcher and the runtime API), so the two entries here are thin ones around CUB's agent and its tile
// state, as CUB's are.  Kernels and the types they take only, so that NVRTC compiles it too (abi/jit.h:
// GR_JIT_SCAN_SEGMENTS_CUB); the launches are the host half, axis/scan_segments_cub.cuh.
#pragma once
#include "axis/cub_under_nvrtc.cuh"  // before CUB's headers
#include <cub/agent/agent_scan_by_key.cuh>
#include <cub/device/dispatch/tuning/tuning_scan_by_key.cuh>
#include <cuda/std/functional>
#include "axis/divisor.cuh"
#include "axis/scan_segments_kernels.cuh"

namespace gr {

// Flat index i of the virtual sequence -> (i0, i1, r), with no 64-bit division at CUB's unrolled loads
// (divisor.cuh).  Element i is position i % R of segment i / R.
struct FlatIndex {
    Divisor by_R, by_c1;
    int64_t R, c1;
#ifndef __CUDACC_RTC__
    __host__ static FlatIndex of(const ScanProblem &p) {
        return {Divisor::of(uint64_t(p.R)), Divisor::of(uint64_t(p.c1)), p.R, p.c1};
    }
#endif
    __host__ __device__ __forceinline__ int64_t segment(int64_t i) const { return int64_t(by_R.quotient(uint64_t(i))); }
    __host__ __device__ __forceinline__ void split(int64_t i, int64_t &i0, int64_t &i1, int64_t &r) const {
        const int64_t s = segment(i);
        r = i - s * R;
        i0 = int64_t(by_c1.quotient(uint64_t(s)));
        i1 = s - i0 * c1;
    }
};

// The three sequences CUB's agent reads and writes, as random-access iterators over the virtual sequence from
// element `first` on: the keys (the segment of each element), the values and the output.
template <class Derived, class Value, class Reference>
struct VirtualIterator {
    using iterator_category = cuda::std::random_access_iterator_tag;
    using value_type = Value;
    using difference_type = int64_t;
    using pointer = Value *;
    using reference = Reference;
    __host__ __device__ __forceinline__ Derived at(int64_t k) const {
        Derived d = static_cast<const Derived &>(*this);
        d.first += k;
        return d;
    }
    template <class I>
    __host__ __device__ __forceinline__ Derived operator+(I k) const { return at(int64_t(k)); }
    __device__ __forceinline__ Reference operator*() const { return static_cast<const Derived &>(*this)[0]; }
};

struct SegmentKeys : VirtualIterator<SegmentKeys, int64_t, int64_t> {
    FlatIndex f;
    int64_t first;
    __host__ __device__ SegmentKeys(FlatIndex f_, int64_t first_) : f(f_), first(first_) {}
    template <class I>
    __device__ __forceinline__ int64_t operator[](I k) const { return f.segment(first + int64_t(k)); }
};

// Element i of the scanned sequence.  An exclusive scan is the inclusive scan of the input shifted by one
// within each segment (the identity first), so one kernel serves both.
template <class Op, class In, class Acc>
struct ScanValues : VirtualIterator<ScanValues<Op, In, Acc>, Acc, Acc> {
    ScanProblem p;
    FlatIndex f;
    bool exclusive;
    int64_t first;
    __host__ __device__ ScanValues(ScanProblem p_, FlatIndex f_, bool exclusive_, int64_t first_)
        : p(p_), f(f_), exclusive(exclusive_), first(first_) {}
    template <class I>
    __device__ __forceinline__ Acc operator[](I k) const {
        int64_t i0, i1, r;
        f.split(first + int64_t(k), i0, i1, r);
        if (exclusive) {
            if (r == 0) return Op::template identity<Acc>();
            r -= 1;
        }
        return scan_element<Op, Acc>(static_cast<const In *>(p.in)[i0 * p.is0 + i1 * p.is1 + r * p.ir]);
    }
};

template <class Out>
struct ScanOutput : VirtualIterator<ScanOutput<Out>, Out, Out &> {
    ScanProblem p;
    FlatIndex f;
    int64_t first;
    __host__ __device__ ScanOutput(ScanProblem p_, FlatIndex f_, int64_t first_) : p(p_), f(f_), first(first_) {}
    template <class I>
    __device__ __forceinline__ Out &operator[](I k) const {
        int64_t i0, i1, r;
        f.split(first + int64_t(k), i0, i1, r);
        return static_cast<Out *>(p.out)[i0 * p.os0 + i1 * p.os1 + r * p.orr];
    }
};

template <class Op, class Acc>
struct ScanCombine {
    __host__ __device__ Acc operator()(const Acc &a, const Acc &b) const { return Op()(a, b); }
};

// The types cub::DeviceScan::InclusiveScanByKey picks for these iterators (int64 items: an unsigned 64-bit
// offset; the accumulator Acc), its policy hub and its tile state.
template <class Op, class In, class Out>
struct CubScanByKey {
    using Acc = typename accumulator<Out>::type;
    using Values = ScanValues<Op, In, Acc>;
    using Output = ScanOutput<Out>;
    using Combine = ScanCombine<Op, Acc>;
    using Equal = cuda::std::equal_to<>;
    using Offset = unsigned long long;
    using Policy = typename cub::detail::scan_by_key::policy_hub<SegmentKeys, Acc, Acc, Combine>::MaxPolicy;
    using TileState = cub::ReduceByKeyScanTileState<Acc, int>;
    static constexpr int kInitThreads = 128;
};

// CUB's tile state of accumulator Acc made ready for `tiles` tiles, and the key before each tile (its agent reads
// it to know whether a tile starts a segment).
template <class Acc>
__global__ void cub_scan_by_key_init_kernel(cub::ReduceByKeyScanTileState<Acc, int> tiles_state, SegmentKeys keys,
                                            int64_t *keys_before, unsigned long long tile_items, int tiles) {
    tiles_state.InitializeStatus(tiles);
    const int t = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (t > 0 && t < tiles) keys_before[t] = keys[int64_t(t) * int64_t(tile_items) - 1];
}

// CUB's agent over tiles start_tile, start_tile + 1, ...: one tile a block, in the policy of the architecture
// this is compiled for (ChainedPolicy picks it, as in CUB's own kernel).
template <class Op, class In, class Out>
__global__ void __launch_bounds__(CubScanByKey<Op, In, Out>::Policy::ActivePolicy::ScanByKeyPolicyT::BLOCK_THREADS)
    cub_scan_by_key_kernel(SegmentKeys keys, int64_t *keys_before, typename CubScanByKey<Op, In, Out>::Values values,
                           typename CubScanByKey<Op, In, Out>::Output out,
                           typename CubScanByKey<Op, In, Out>::TileState tiles_state, int start_tile,
                           unsigned long long items) {
    using C = CubScanByKey<Op, In, Out>;
    using Agent = cub::detail::scan_by_key::AgentScanByKey<typename C::Policy::ActivePolicy::ScanByKeyPolicyT, SegmentKeys,
                                                           typename C::Values, typename C::Output, typename C::Equal,
                                                           typename C::Combine, cub::NullType, typename C::Offset,
                                                           typename C::Acc>;
    __shared__ typename Agent::TempStorage storage;
    Agent(storage, keys, keys_before, values, out, typename C::Equal{}, typename C::Combine{}, cub::NullType{})
        .ConsumeRange(items, tiles_state, start_tile);
}

}  // namespace gr
