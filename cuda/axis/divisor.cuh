// divisor.cuh -- division by a run-time constant as one multiply-high, an add and shifts (Granlund and
// Montgomery's method, in the branch-free form libdivide uses for 64-bit unsigned integers).
//
// Why: the CUB baselines see an axis problem as one flat sequence, so every element they load turns its flat
// index back into (segment, position) and a segment into (i0, i1).  A 64-bit `/` there expands into a long
// inline sequence at every one of CUB's unrolled loads; that code, not the arithmetic, made the CUB axis files
// the slowest part of the build.  A Divisor is made once on the host and copied into the iterators.
#pragma once
#include <cstdint>

namespace gr {

struct Divisor {
    uint64_t d = 1;
    uint64_t magic = 0;  // 0: d is a power of two (or 1), and q = n >> (shift + 1) (or n itself)
    int shift = 0;

#ifndef __CUDACC_RTC__  // made on the host; NVRTC compiles the kernels that only use one
    __host__ static Divisor of(uint64_t d) {
        Divisor r;
        r.d = d;
        if (d <= 1) return r;
        const int log2_d = 63 - __builtin_clzll(d);
        if ((d & (d - 1)) == 0) {
            r.shift = log2_d - 1;
            return r;
        }
        // m = floor(2^(64 + log2_d) / d) lies in (2^63, 2^64): doubling it drops the 65th bit, which the
        // (n - hi) / 2 + hi step of quotient() puts back.
        const unsigned __int128 num = static_cast<unsigned __int128>(1) << (64 + log2_d);
        uint64_t m = static_cast<uint64_t>(num / d);
        const uint64_t rem = static_cast<uint64_t>(num % d), twice_rem = rem + rem;
        m += m;
        if (twice_rem >= d || twice_rem < rem) m += 1;
        r.magic = m + 1;
        r.shift = log2_d;
        return r;
    }
#endif

    __host__ __device__ __forceinline__ uint64_t quotient(uint64_t n) const {
        if (d == 1) return n;
#ifdef __CUDA_ARCH__
        const uint64_t hi = __umul64hi(magic, n);
#else
        const uint64_t hi = static_cast<uint64_t>((static_cast<unsigned __int128>(magic) * n) >> 64);
#endif
        return (((n - hi) >> 1) + hi) >> shift;
    }
};

}  // namespace gr
