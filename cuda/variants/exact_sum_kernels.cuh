// exact_sum_kernels.cuh -- the kernel of the whole-array variant "exact" (issue 41), compiled on first use
// (abi/jit.h: GR_JIT_EXACT_SUM; its host half is variants/reduce_exact.cu): the correctly rounded sum of a
// float16, bfloat16, float32 or float64 array, the same bits for every launch shape (primitives/exact_sum.cuh says
// why).  A half-precision element is a float32 one exactly: float32's digits hold its sum, rounded once to the
// input's format at the end.
//
// One launch.  Each thread keeps an ExactWindow over its elements (16-byte loads, several in flight).  What leaves
// a window (an element far below the others, a full window, bits below a moved anchor) goes to the thread's own
// digits, a column of a [digit][thread] array in shared memory: plain adds, no contention, one or two words an
// element (ExactColumn).  float64's 68 digits a thread take 64-thread blocks to fit.  At the end a warp sums its
// windows where they share an anchor (one spill instead of 32), the block adds its threads' columns up,
// normalizes them and adds them to the grid's digits in global memory (atomics: integer adds, any order), and the
// last block to finish rounds them into the result.  The grid's digits are zeroed by block 0 before any other
// block adds to them: the others wait for its signal after their own elements, by which time block 0, dispatched
// first, has long run (the forward progress CUB's decoupled look-back relies on too).
#pragma once
#include "primitives/exact_sum.cuh"
#include "primitives/types.cuh"

namespace gr {

// Each input type's accumulating type (whose digits hold the sum) and the format the sum is rounded to.
template <class In>
struct ExactInput {
    using Acc = In;
    using Target = ExactTarget<In>;
};
template <>
struct ExactInput<__half> {
    using Acc = float;
    using Target = ExactHalf;
};
template <>
struct ExactInput<__nv_bfloat16> {
    using Acc = float;
    using Target = ExactBfloat16;
};

// The operator's rounding of one sum's digits into *out (a segment's along axes, a group's of the grouped scatter):
// the sum, or the mean over the elements taken (nanmean counted none of its NaNs); the nan forms drop the NaN flag (a NaN added nothing to the digits), but an
// `initial` that is NaN still makes the sum NaN, as NumPy's nansum(..., initial=nan).
template <class In, gr_op kOp, class T>
__host__ __device__ __forceinline__ void exact_write(ExactDigits<T> &d, uint64_t taken, bool nan_initial, In *out) {
    using Target = typename ExactInput<In>::Target;
    if constexpr (kOp == GR_OP_NANSUM || kOp == GR_OP_NANMEAN) d.flags &= ~unsigned(kExactNaN);
    if (nan_initial) d.flags |= kExactNaN;
    if constexpr (kOp == GR_OP_MEAN || kOp == GR_OP_NANMEAN) *out = d.template round_quotient<In, Target>(taken);
    else *out = d.template round<In, Target>();
}

// The launch's shape of each type (reduce_exact.cu sizes the grid from it): threads a block, 16-byte vectors each
// thread has in flight, blocks an SM (what the columns' shared memory allows: float64's 68 x 64 x 8 bytes a block,
// so 384 threads an SM, each with 128 bytes in flight).
template <class T>
struct ExactLaunch;
template <>
struct ExactLaunch<float> {
    static constexpr int kBlock = 256, kVectorsInFlight = 2, kBlocksPerSm = 4;
};
template <>
struct ExactLaunch<double> {
    static constexpr int kBlock = 64, kVectorsInFlight = 8, kBlocksPerSm = 6;
};

#ifndef __CUDACC_RTC__
// The name expression of the kernel of input dtype `d` (one of GR_DTYPES_EXACT_SUM) and operator `op` (one of
// GR_OPS_EXACT_KERNEL) in the program: what reduce_exact.cu launches and `warm` compiles.
inline void exact_sum_kernel_name(gr_dtype d, gr_op op, char *buf, size_t size) {
    char type[64];
    dtype_type_name(d, type, sizeof type);
    std::snprintf(buf, size, "gr::exact_sum_kernel<%s, (gr_op)%d>", type, int(op));
}
#endif

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
// A half-precision element's bits widened to float32, exactly (a bfloat16 is float32's top half).
template <class H>
__device__ __forceinline__ float exact_widen_bits(unsigned short bits);
template <>
__device__ __forceinline__ float exact_widen_bits<__half>(unsigned short bits) {
    return __half2float(__ushort_as_half(bits));
}
template <>
__device__ __forceinline__ float exact_widen_bits<__nv_bfloat16>(unsigned short bits) {
    return __uint_as_float(unsigned(bits) << 16);
}

// Eight half-precision elements a vector, each widened as it is read.
template <class H>
struct ExactHalfVector {
    using type = uint4;
    static constexpr int kLanes = 8;
    __device__ __forceinline__ static void each(const uint4 &v, float *x) {
        const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            x[2 * k] = exact_widen_bits<H>(static_cast<unsigned short>(w[k] & 0xffffu));
            x[2 * k + 1] = exact_widen_bits<H>(static_cast<unsigned short>(w[k] >> 16));
        }
    }
};
template <>
struct ExactVector<__half> : ExactHalfVector<__half> {};
template <>
struct ExactVector<__nv_bfloat16> : ExactHalfVector<__nv_bfloat16> {};

// One element widened to its accumulating type, exactly.
__device__ __forceinline__ float exact_widen(float x) { return x; }
__device__ __forceinline__ double exact_widen(double x) { return x; }
__device__ __forceinline__ float exact_widen(__half x) { return exact_widen_bits<__half>(__half_as_ushort(x)); }
__device__ __forceinline__ float exact_widen(__nv_bfloat16 x) {
    return exact_widen_bits<__nv_bfloat16>(__bfloat16_as_ushort(x));
}

// Where a thread's window spills: its own column of a [digit][thread] array in shared memory.  An element goes in
// as two adds, (m << pos % 32) mod 2^32 to digit pos / 32 and the rest (below 2^53) to the next one, so a word
// takes 2^10 of them before its carries must move (normalize, counted for float64; float32's rests are below
// 2^24, and a thread's 2^23 elements at most never fill a word).
template <class T>
struct ExactColumn {
    using F = ExactFormat<T>;
    static constexpr int kBlock = ExactLaunch<T>::kBlock;
    static constexpr int kWords = F::kDigits * kBlock;  // the block's shared array
    static constexpr int kAddsBetweenCarries = sizeof(T) == 8 ? 512 : 1 << 30;
    int64_t *column;  // digit d at column[d * kBlock]
    unsigned flags = 0;
    int adds = 0;          // since the last normalize
    bool touched = false;  // added to since it was zeroed (the axis kernels clear only what they touched)

    __device__ __forceinline__ int64_t &digit(int d) const { return column[d * kBlock]; }
    __device__ __forceinline__ void add_scaled(uint64_t lo, uint64_t hi, int at, bool negative) {
        exact_pieces<F::kDigits>(lo, hi, at, negative, [&](int d, int64_t piece) { digit(d) += piece; });
        touched = true;
        count_add();
    }
    __device__ __forceinline__ void add_element(uint64_t m, int pos, bool negative) {
        const int d = pos / 32, s = pos % 32;
        const int64_t low = int64_t(uint32_t(m << s)), rest = int64_t(s ? m >> (32 - s) : m >> 32);
        digit(d) += negative ? -low : low;
        if (rest && d + 1 < F::kDigits) digit(d + 1) += negative ? -rest : rest;
        touched = true;
        count_add();
    }
    __device__ __forceinline__ void add_flags(unsigned f) { flags |= f; }
    __device__ __forceinline__ void count_add() {
        if (++adds == kAddsBetweenCarries) normalize();
    }
    // Each digit into [0, 2^32) but the top one, which carries the sign.
    __device__ void normalize() {
        int64_t carry = 0;
        for (int d = 0; d + 1 < F::kDigits; d++) {
            const int64_t v = digit(d) + carry;
            carry = v >> 32;
            digit(d) = v - carry * (int64_t(1) << 32);
        }
        digit(F::kDigits - 1) += carry;
        adds = 0;
    }
};

// A warp's windows into their columns: summed in 128 bits where every lane that holds something shares one
// anchor (the usual case: lane 0 spills the warp's sum), else lane by lane.
template <class T>
__device__ __forceinline__ void exact_finish_warp(ExactWindow<T> &window, ExactColumn<T> &column) {
    const unsigned holding = __ballot_sync(0xffffffffu, window.w != 0);
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
            if (threadIdx.x % 32 == 0) {
                const bool negative = s < 0;
                const unsigned __int128 m = negative ? (unsigned __int128)(-s) : (unsigned __int128)s;
                column.add_scaled(uint64_t(m), uint64_t(m >> 64), anchor, negative);
            }
        } else {
            window.spill_window(column);
        }
    }
}

// kOp of in[0, n) into *out, rounded once in the input's format: GR_OP_SUM the exact sum; GR_OP_MEAN the exact sum
// divided by n (NaN for n = 0, the mean of nothing, which runs one block); GR_OP_NANSUM the exact sum of the
// elements that are not NaN (a NaN adds nothing to the digits, only its flag, which is dropped: NumPy's nansum;
// both infinities still give NaN); GR_OP_NANMEAN that sum divided by their count (NaN where there is none).
// `head` elements before the first 16-byte boundary are read one by one, as is the tail after the last whole
// vector.  `grid_digits`: ExactFormat<T>::kDigits + 2 words of scratch (the digits, the flags, nanmean's count of
// NaNs), any content on entry; `counters`: zero on entry, left zero.  T: the accumulating type (In's
// own, float32 for the half-precision formats).  The operator is a template argument, not a kernel argument, so
// the sum's loop is compiled as it was.
template <class In, gr_op kOp = GR_OP_SUM, class T = typename ExactInput<In>::Acc>
__global__ void __launch_bounds__(ExactLaunch<T>::kBlock) exact_sum_kernel(const In *in, int64_t n, int64_t head,
                                                                          int64_t *grid_digits, unsigned *counters,
                                                                          In *out) {
    using F = ExactFormat<T>;
    using Vec = ExactVector<In>;
    constexpr int kBlock = ExactLaunch<T>::kBlock, kInFlight = ExactLaunch<T>::kVectorsInFlight;
    __shared__ int64_t columns[ExactColumn<T>::kWords];
    __shared__ ExactDigits<T> block;  // the block's sum, added up from the columns; then the grid's, in the last
    __shared__ unsigned block_flags;
    __shared__ unsigned long long block_nans;
    __shared__ bool last;
    // nanmean's count leaves the NaNs out: each thread counts those it reads, the grid's total in the word after
    // the flags (grid_digits[kDigits + 1])
    constexpr bool kCountsNaN = kOp == GR_OP_NANMEAN;
    const int t = threadIdx.x;
    for (int i = t; i < ExactColumn<T>::kWords; i += kBlock) columns[i] = 0;
    if (t == 0) block_flags = 0;
    if (kCountsNaN && t == 0) block_nans = 0;
    if (blockIdx.x == 0) {  // the grid's digits zeroed, then said so
        for (int i = t; i <= F::kDigits + (kCountsNaN ? 1 : 0); i += kBlock) grid_digits[i] = 0;
        __threadfence();
    }
    __syncthreads();
    if (blockIdx.x == 0 && t == 0) atomicExch(&counters[kExactDigitsZeroed], 1u);

    ExactColumn<T> column{columns + t};
    ExactWindow<T> window;
    uint64_t nans = 0;
    auto add = [&](T x) {
        if constexpr (kCountsNaN) nans += x != x;
        window.add(x, column);
    };
    const int64_t thread = int64_t(blockIdx.x) * kBlock + t, threads = int64_t(gridDim.x) * kBlock;
    if (thread < head) add(exact_widen(in[thread]));
    const typename Vec::type *vectors = reinterpret_cast<const typename Vec::type *>(in + head);
    const int64_t count = (n - head) / Vec::kLanes;
    // the window's headroom holds kSpillEvery elements: spilled that often (float32's 64-bit window: every 4096)
    constexpr int kStep = kInFlight * Vec::kLanes;
    constexpr int64_t kStepsBetweenSpills = (ExactWindow<T>::kSpillEvery - 2) / kStep;  // (head and tail: 2 more)
    int64_t i = thread, steps = 0;
    for (; i + (kInFlight - 1) * threads < count; i += kInFlight * threads) {
        typename Vec::type v[kInFlight];
#pragma unroll
        for (int k = 0; k < kInFlight; k++) v[k] = __ldg(&vectors[i + k * threads]);
#pragma unroll
        for (int k = 0; k < kInFlight; k++) {
            T x[Vec::kLanes];
            Vec::each(v[k], x);
#pragma unroll
            for (int l = 0; l < Vec::kLanes; l++) add(x[l]);
        }
        if (++steps == kStepsBetweenSpills) {
            window.spill_window(column);
            steps = 0;
        }
    }
    for (; i < count; i += threads) {
        T x[Vec::kLanes];
        Vec::each(__ldg(&vectors[i]), x);
#pragma unroll
        for (int l = 0; l < Vec::kLanes; l++) add(x[l]);
    }
    const int64_t tail = head + count * Vec::kLanes + thread;
    if (tail < n) add(exact_widen(in[tail]));
    exact_finish_warp(window, column);
    if constexpr (kCountsNaN) {
        for (int offset = 16; offset > 0; offset /= 2) nans += __shfl_xor_sync(0xffffffffu, nans, offset);
        if (t % 32 == 0 && nans) atomicAdd(&block_nans, (unsigned long long)nans);
    }
    unsigned flags = window.flags;  // (OR-ed over the warp by shuffles: __reduce_or_sync needs sm_80)
    for (int offset = 16; offset > 0; offset /= 2) flags |= __shfl_xor_sync(0xffffffffu, flags, offset);
    if (t % 32 == 0 && flags) atomicOr(&block_flags, flags);
    // the block's sums of the columns' words stay below 2^63: each word took fewer than 16 rests of 2^53 since the
    // column's last normalize (float64), or every add was below 2^32 but its rests below 2^24 (float32)
    if (sizeof(T) == 8 && column.adds >= 16) column.normalize();
    __syncthreads();
    for (int d = t; d < F::kDigits; d += kBlock) {
        int64_t s = 0;
        for (int k = 0; k < kBlock; k++) s += columns[d * kBlock + k];
        block.digit[d] = s;
    }
    __syncthreads();

    if (t == 0) {
        block.normalize();  // each word below 2^32 (the top one signed): the grid's words cannot overflow
        if (blockIdx.x != 0)
            while (atomicAdd(&counters[kExactDigitsZeroed], 0u) == 0u) __nanosleep(64);
        __threadfence();
    }
    __syncthreads();
    for (int k = t; k < F::kDigits; k += kBlock)
        if (block.digit[k]) atomicAdd(reinterpret_cast<unsigned long long *>(&grid_digits[k]),
                                      static_cast<unsigned long long>(block.digit[k]));
    if (t == 0 && block_flags)
        atomicOr(reinterpret_cast<unsigned long long *>(&grid_digits[F::kDigits]), (unsigned long long)block_flags);
    if (kCountsNaN && t == 0 && block_nans)
        atomicAdd(reinterpret_cast<unsigned long long *>(&grid_digits[F::kDigits + 1]), block_nans);
    __threadfence();
    __syncthreads();
    if (t == 0) last = atomicAdd(&counters[kExactBlocksDone], 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int k = t; k < F::kDigits; k += kBlock) block.digit[k] = __ldcg(&grid_digits[k]);
    __syncthreads();
    if (t == 0) {
        block.flags = unsigned(__ldcg(&grid_digits[F::kDigits]));
        using Target = typename ExactInput<In>::Target;  // once, in the input's format
        if constexpr (kOp == GR_OP_NANSUM || kOp == GR_OP_NANMEAN) block.flags &= ~kExactNaN;
        if constexpr (kOp == GR_OP_MEAN) *out = block.template round_quotient<In, Target>(uint64_t(n));
        else if constexpr (kCountsNaN)
            *out = block.template round_quotient<In, Target>(uint64_t(n) -
                                                             uint64_t(__ldcg(&grid_digits[F::kDigits + 1])));
        else *out = block.template round<In, Target>();
        counters[kExactBlocksDone] = 0;  // left zero for the next launch
        counters[kExactDigitsZeroed] = 0;
    }
}

}  // namespace gr
