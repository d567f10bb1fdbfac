// exact_sum_kernels.cuh -- the kernel of the whole-array variant "exact" (issue 41), compiled on first use
// (abi/jit.h: GR_JIT_EXACT_SUM; its host half is variants/reduce_exact.cu): the correctly rounded sum of a
// float32 or float64 array, the same bits for every launch shape (primitives/exact_sum.cuh says why).
//
// One launch.  Each thread keeps an ExactWindow over its elements (16-byte loads, two in flight); what leaves a
// window goes to its block's ExactDigits in shared memory (atomics: integer adds, any order); at the end each
// block adds its normalized digits to the grid's in global memory (atomics again), and the last block to finish
// rounds them into the result.  The grid's digits are zeroed by block 0 before any other block adds to them:
// the others wait for its signal after their own elements, by which time block 0, dispatched first, has long run
// (the forward progress CUB's decoupled look-back relies on too).
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

struct SharedAtomicAdd {
    __device__ __forceinline__ void operator()(int64_t *word, int64_t v) const {
        atomicAdd(reinterpret_cast<unsigned long long *>(word), static_cast<unsigned long long>(v));
    }
    __device__ __forceinline__ void or_flags(unsigned *flags, unsigned v) const { atomicOr(flags, v); }
};

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

// The exact sum of in[0, n) into *out (n >= 1).  `head` elements before the first 16-byte boundary are read one
// by one, as is the tail after the last whole vector.  `grid_digits`: ExactFormat<T>::kDigits + 1 words of
// scratch (the digits, then the flags), any content on entry; `counters`: zero on entry, left zero.
template <class T>
__global__ void __launch_bounds__(kExactBlock) exact_sum_kernel(const T *in, int64_t n, int64_t head,
                                                                int64_t *grid_digits, unsigned *counters, T *out) {
    using F = ExactFormat<T>;
    using Vec = ExactVector<T>;
    __shared__ ExactDigits<T, SharedAtomicAdd> block;
    __shared__ bool last;
    const int t = threadIdx.x;
    for (int i = t; i < F::kDigits; i += kExactBlock) block.digit[i] = 0;
    if (t == 0) block.flags = 0;
    if (blockIdx.x == 0) {  // the grid's digits zeroed, then said so
        for (int i = t; i <= F::kDigits; i += kExactBlock) grid_digits[i] = 0;
        __threadfence();
    }
    __syncthreads();
    if (blockIdx.x == 0 && t == 0) atomicExch(&counters[kExactDigitsZeroed], 1u);

    ExactWindow<T> window;
    const int64_t thread = int64_t(blockIdx.x) * kExactBlock + t, threads = int64_t(gridDim.x) * kExactBlock;
    if (thread < head) window.add(in[thread], block);
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
            for (int l = 0; l < Vec::kLanes; l++) window.add(x[l], block);
        }
        if (++steps == kStepsBetweenSpills) {
            window.spill_window(block);
            steps = 0;
        }
    }
    for (; i < count; i += threads) {
        T x[Vec::kLanes];
        Vec::each(__ldg(&vectors[i]), x);
#pragma unroll
        for (int l = 0; l < Vec::kLanes; l++) window.add(x[l], block);
    }
    const int64_t tail = head + count * Vec::kLanes + thread;
    if (tail < n) window.add(in[tail], block);
    window.finish(block);
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
    if (t == 0 && block.flags)
        atomicOr(reinterpret_cast<unsigned long long *>(&grid_digits[F::kDigits]), (unsigned long long)block.flags);
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
