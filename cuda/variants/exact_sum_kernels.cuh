// exact_sum_kernels.cuh -- the kernel of the whole-array variant "exact" (issue 41), compiled on first use
// (abi/jit.h: GR_JIT_EXACT_SUM; its host half is variants/reduce_exact.cu): the correctly rounded sum of a
// float32 or float64 array, the same bits for every launch shape (primitives/exact_sum.cuh says why).
//
// One launch.  Each thread keeps an ExactWindow over its elements (16-byte loads, two in flight).  What leaves a
// window (an element far below or above the rest, a full window) goes to digits no other thread adds to at the
// same time: float32's thread has its own column of 10 digits in shared memory, float64's warp its own 68 (a
// thread's would not fit), added to with shared atomics; no two warps ever contend.  At the end a warp sums its
// windows where they share an anchor (one spill instead of 32), the block adds its threads' or warps' digits up,
// normalizes them and adds them to the grid's in global memory (atomics: integer adds, any order), and the last
// block to finish rounds them into the result.  The grid's digits are zeroed by block 0 before any other block
// adds to them: the others wait for its signal after their own elements, by which time block 0, dispatched
// first, has long run (the forward progress CUB's decoupled look-back relies on too).
#pragma once
#include "primitives/exact_sum.cuh"

namespace gr {

// The launch's shape (reduce_exact.cu sizes the grid from it): 256 threads, each loading two 16-byte vectors per
// step of its grid-stride loop.
constexpr int kExactBlock = 256;
constexpr int kExactVectorsInFlight = 2;

// The kernels' name expressions in the program (what reduce_exact.cu launches and `warm` compiles).
constexpr const char *kExactSumKernels[] = {"gr::exact_sum_kernel<float>", "gr::exact_sum_kernel<double>"};
template <class T>
constexpr const char *exact_sum_kernel_name() { return kExactSumKernels[sizeof(T) == 8]; }

// The words of the ctx's zeroed counters the kernel uses and leaves zero: blocks finished, digits zeroed.
enum : int { kExactBlocksDone = 0, kExactDigitsZeroed = 1 };

template <class T>
struct ExactVector;
template <>
struct ExactVector<float> {
    using type = float4;
    static constexpr int kLanes = 4;
    __device__ __forceinline__ static void each(const float4 &v, float *x) { x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w; }
};
template <>
struct ExactVector<double> {
    using type = double2;
    static constexpr int kLanes = 2;
    __device__ __forceinline__ static void each(const double2 &v, double *x) { x[0] = v.x, x[1] = v.y; }
};

// Where a float32 thread's window spills: its own column of a [digit][thread] array in shared memory.
struct ExactThreadDigits {
    static constexpr int kDigits = ExactFormat<float>::kDigits;
    static constexpr int kSharedWords = kDigits * kExactBlock;
    int64_t *column;  // digit d at column[d * kExactBlock]
    unsigned flags = 0;
    __device__ __forceinline__ void add_scaled(uint64_t lo, uint64_t hi, int at, bool negative) {
        exact_pieces<kDigits>(lo, hi, at, negative, [&](int d, int64_t piece) { column[d * kExactBlock] += piece; });
    }
    __device__ __forceinline__ void add_flags(unsigned f) { flags |= f; }
};

// Where a float64 thread's window spills: its warp's digits in shared memory, by atomics among the warp's lanes.
struct ExactWarpDigits {
    static constexpr int kDigits = ExactFormat<double>::kDigits;
    static constexpr int kSharedWords = kDigits * (kExactBlock / 32);
    int64_t *digits;  // the warp's kDigits words
    unsigned flags = 0;
    __device__ __forceinline__ void add_scaled(uint64_t lo, uint64_t hi, int at, bool negative) {
        exact_pieces<kDigits>(lo, hi, at, negative, [&](int d, int64_t piece) {
            atomicAdd(reinterpret_cast<unsigned long long *>(&digits[d]), static_cast<unsigned long long>(piece));
        });
    }
    __device__ __forceinline__ void add_flags(unsigned f) { flags |= f; }
};

template <class T>
struct ExactSpill;
template <>
struct ExactSpill<float> {
    using type = ExactThreadDigits;
    __device__ static type at(int64_t *shared, int t) { return type{shared + t}; }
    __device__ static int64_t digit_sum(const int64_t *shared, int d) {  // the block's digit d: every thread's
        int64_t s = 0;
        for (int k = 0; k < kExactBlock; k++) s += shared[d * kExactBlock + k];  // each below 2^32: normalized
        return s;
    }
};
template <>
struct ExactSpill<double> {
    using type = ExactWarpDigits;
    __device__ static type at(int64_t *shared, int t) { return type{shared + (t / 32) * type::kDigits}; }
    __device__ static int64_t digit_sum(const int64_t *shared, int d) {  // every warp's
        int64_t s = 0;
        for (int w = 0; w < kExactBlock / 32; w++) s += shared[w * type::kDigits + d];
        return s;
    }
};

// A warp's windows into its spill target: summed in 128 bits where every lane that holds something shares one
// anchor (the usual case: one spill for the warp), else lane by lane.  The flags stay in the spill target.
template <class T, class Spill>
__device__ __forceinline__ void exact_finish_warp(ExactWindow<T> &window, Spill &spill) {
    const unsigned holding = __ballot_sync(0xffffffffu, window.w != 0);
    const int lane = threadIdx.x % 32;
    if (holding) {
        const int leader = __ffs(holding) - 1;
        const int anchor = __shfl_sync(0xffffffffu, window.anchor, leader);
        if (__all_sync(0xffffffffu, window.w == 0 || window.anchor == anchor)) {
            __int128 s = window.w;
#pragma unroll
            for (int offset = 16; offset > 0; offset /= 2) {
                const uint64_t lo = __shfl_down_sync(0xffffffffu, uint64_t(s), offset);
                const uint64_t hi = __shfl_down_sync(0xffffffffu, uint64_t((unsigned __int128)s >> 64), offset);
                s += (__int128)(((unsigned __int128)hi << 64) | lo);
            }
            window.w = 0;
            if (lane == 0) {  // (lane 0 holds the warp's sum: the leader's anchor is every holder's)
                window.anchor = anchor;
                const bool negative = s < 0;
                const unsigned __int128 m = negative ? (unsigned __int128)(-s) : (unsigned __int128)s;
                spill.add_scaled(uint64_t(m), uint64_t(m >> 64), anchor, negative);
            }
        } else {
            window.spill_window(spill);
        }
    }
    spill.add_flags(window.flags);
}

// The exact sum of in[0, n) into *out (n >= 1).  `head` elements before the first 16-byte boundary are read one
// by one, as is the tail after the last whole vector.  `grid_digits`: ExactFormat<T>::kDigits + 1 words of
// scratch (the digits, then the flags), any content on entry; `counters`: zero on entry, left zero.
template <class T>
__global__ void __launch_bounds__(kExactBlock) exact_sum_kernel(const T *in, int64_t n, int64_t head,
                                                                int64_t *grid_digits, unsigned *counters, T *out) {
    using F = ExactFormat<T>;
    using Vec = ExactVector<T>;
    using Spill = typename ExactSpill<T>::type;
    __shared__ int64_t spilled[Spill::kSharedWords];
    __shared__ ExactDigits<T> block;  // the block's sum, added up from `spilled`; then the grid's, in the last
    __shared__ unsigned block_flags;
    __shared__ bool last;
    const int t = threadIdx.x;
    for (int i = t; i < Spill::kSharedWords; i += kExactBlock) spilled[i] = 0;
    if (t == 0) block_flags = 0;
    if (blockIdx.x == 0) {  // the grid's digits zeroed, then said so
        for (int i = t; i <= F::kDigits; i += kExactBlock) grid_digits[i] = 0;
        __threadfence();
    }
    __syncthreads();
    if (blockIdx.x == 0 && t == 0) atomicExch(&counters[kExactDigitsZeroed], 1u);

    Spill spill = ExactSpill<T>::at(spilled, t);
    ExactWindow<T> window;
    const int64_t thread = int64_t(blockIdx.x) * kExactBlock + t, threads = int64_t(gridDim.x) * kExactBlock;
    if (thread < head) window.add(in[thread], spill);
    const typename Vec::type *vectors = reinterpret_cast<const typename Vec::type *>(in + head);
    const int64_t count = (n - head) / Vec::kLanes;
    // the window's headroom holds kSpillEvery elements: spilled that often (float32's 64-bit window: every 4096)
    constexpr int kStep = kExactVectorsInFlight * Vec::kLanes;
    constexpr int64_t kStepsBetweenSpills = (ExactWindow<T>::kSpillEvery - 2) / kStep;  // (head and tail: 2 more)
    int64_t i = thread, steps = 0;
    for (; i + (kExactVectorsInFlight - 1) * threads < count; i += kExactVectorsInFlight * threads) {
        typename Vec::type v[kExactVectorsInFlight];
#pragma unroll
        for (int k = 0; k < kExactVectorsInFlight; k++) v[k] = __ldg(&vectors[i + k * threads]);
#pragma unroll
        for (int k = 0; k < kExactVectorsInFlight; k++) {
            T x[Vec::kLanes];
            Vec::each(v[k], x);
#pragma unroll
            for (int l = 0; l < Vec::kLanes; l++) window.add(x[l], spill);
        }
        if (++steps == kStepsBetweenSpills) {
            window.spill_window(spill);
            steps = 0;
        }
    }
    for (; i < count; i += threads) {
        T x[Vec::kLanes];
        Vec::each(__ldg(&vectors[i]), x);
#pragma unroll
        for (int l = 0; l < Vec::kLanes; l++) window.add(x[l], spill);
    }
    const int64_t tail = head + count * Vec::kLanes + thread;
    if (tail < n) window.add(in[tail], spill);
    exact_finish_warp(window, spill);
    unsigned flags = spill.flags;  // (OR-ed over the warp by shuffles: __reduce_or_sync needs sm_80)
    for (int offset = 16; offset > 0; offset /= 2) flags |= __shfl_xor_sync(0xffffffffu, flags, offset);
    if (t % 32 == 0 && flags) atomicOr(&block_flags, flags);
    if constexpr (sizeof(T) == 4) {  // a thread's column normalized: each digit below 2^32, the block's sums too
        int64_t carry = 0;
        for (int d = 0; d + 1 < F::kDigits; d++) {
            const int64_t v = spill.column[d * kExactBlock] + carry;
            carry = v >> 32;
            spill.column[d * kExactBlock] = v - carry * (int64_t(1) << 32);
        }
        spill.column[(F::kDigits - 1) * kExactBlock] += carry;
    }
    __syncthreads();
    for (int d = t; d < F::kDigits; d += kExactBlock) block.digit[d] = ExactSpill<T>::digit_sum(spilled, d);
    __syncthreads();

    if (t == 0) {
        block.normalize();  // each word below 2^32 (the top one signed): the grid's words cannot overflow
        if (blockIdx.x != 0)
            while (atomicAdd(&counters[kExactDigitsZeroed], 0u) == 0u) __nanosleep(64);
        __threadfence();
    }
    __syncthreads();
    for (int k = t; k < F::kDigits; k += kExactBlock)
        if (block.digit[k]) atomicAdd(reinterpret_cast<unsigned long long *>(&grid_digits[k]),
                                      static_cast<unsigned long long>(block.digit[k]));
    if (t == 0 && block_flags)
        atomicOr(reinterpret_cast<unsigned long long *>(&grid_digits[F::kDigits]), (unsigned long long)block_flags);
    __threadfence();
    __syncthreads();
    if (t == 0) last = atomicAdd(&counters[kExactBlocksDone], 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int k = t; k < F::kDigits; k += kExactBlock) block.digit[k] = __ldcg(&grid_digits[k]);
    __syncthreads();
    if (t == 0) {
        block.flags = unsigned(__ldcg(&grid_digits[F::kDigits]));
        *out = block.round();
        counters[kExactBlocksDone] = 0;  // left zero for the next launch
        counters[kExactDigitsZeroed] = 0;
    }
}

}  // namespace gr
