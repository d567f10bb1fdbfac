// exact_sum.cuh -- exact sums of floating-point numbers (issue 41): every finite float32 or float64 is an integer
// multiple of its type's smallest subnormal, 2^kLsb, so a sum of them is an integer S times 2^kLsb.  S is kept
// exactly, in integers, and rounded once at the end (to nearest, ties to even).  Integer addition does not care
// about order, so the bits of the result do not depend on how the elements were split among threads, blocks,
// launches, rows of a batch or chunks of a Dask array: exact and batch-invariant by construction.
//
//   ExactDigits<T>  S as 32-bit digits held in int64 words (carry-save: each word absorbs 2^31 signed 32-bit
//                   pieces before a carry must move), NaN and infinities as flags; rounds to T.  A block's or a
//                   grid's accumulator: its adds are integer adds, atomics on the device where threads share it
//                   (the Add policy), so any order of them gives the same S.
//   ExactWindow<T>  a thread's hot path: a signed 128-bit integer W holding the elements' sum as W x 2^anchor,
//                   the anchor set by the first element so that elements 2^31 (float64: 2^22) times smaller and
//                   2^40 (2^20) times larger fit; an element smaller than that goes to the digits alone, a larger
//                   one moves the anchor up and the bits W no longer holds go to the digits.  Typical data never
//                   leaves W: one shift and one 128-bit add per element.
//
// Host and device code, no CUDA intrinsics but the Add policy's: tests/c/exact_sum_check.cu runs it on the host
// against Python's fractions.
#pragma once
#include <cstdint>
#include <cstring>

#ifndef __CUDACC__
#define __host__
#define __device__
#define __forceinline__ inline
#endif

namespace gr {

template <class T>
struct ExactFormat;
template <>
struct ExactFormat<float> {
    using Bits = uint32_t;
    static constexpr int kMantissa = 24;  // with the hidden bit
    static constexpr int kExponentBits = 8;
    static constexpr int kDigits = 10;    // S < 2^277 (2^128 / 2^-149), times up to 2^40 elements: < 2^320
    static constexpr int kAbove = 40, kBelow = 31;  // the window's reach around its first element (binades)
};
template <>
struct ExactFormat<double> {
    using Bits = uint64_t;
    static constexpr int kMantissa = 53;
    static constexpr int kExponentBits = 11;
    static constexpr int kDigits = 68;    // S < 2^2098, times up to 2^40 elements: < 2^2176
    static constexpr int kAbove = 20, kBelow = 22;
};

// A finite element as m x 2^pos in units of 2^kLsb (m < 2^kMantissa, 0 for a zero), its sign; or not finite.
template <class T>
struct ExactParts {
    uint64_t m;
    int pos;
    bool negative, finite, nan;
};
template <class T>
__host__ __device__ __forceinline__ ExactParts<T> exact_parts(T x) {
    using F = ExactFormat<T>;
    typename F::Bits bits;
    memcpy(&bits, &x, sizeof bits);
    constexpr int kFraction = F::kMantissa - 1;
    const uint64_t fraction = uint64_t(bits) & ((uint64_t(1) << kFraction) - 1);
    const int field = int((uint64_t(bits) >> kFraction) & ((1u << F::kExponentBits) - 1));
    ExactParts<T> p;
    p.negative = (uint64_t(bits) >> (8 * sizeof(T) - 1)) != 0;
    p.finite = field != (1 << F::kExponentBits) - 1;
    p.nan = !p.finite && fraction != 0;
    // a normal number's hidden bit; a subnormal's exponent is the smallest normal one's: both place their lowest
    // bit at (field - 1) units of 2^kLsb, a subnormal's at 0
    p.m = field ? fraction | (uint64_t(1) << kFraction) : fraction;
    p.pos = field ? field - 1 : 0;
    return p;
}

// How a thread adds to a shared accumulator word: plainly (one thread owns it), or atomically on the device.
struct PlainAdd {
    __host__ __device__ __forceinline__ void operator()(int64_t *word, int64_t v) const { *word += v; }
};

template <class T, class Add = PlainAdd>
struct ExactDigits {
    using F = ExactFormat<T>;
    int64_t digit[F::kDigits];
    unsigned flags;  // 1: a NaN, 2: +inf, 4: -inf
    Add add;

    __host__ __device__ __forceinline__ void clear() {
        for (int i = 0; i < F::kDigits; i++) digit[i] = 0;
        flags = 0;
    }

    // += (negative ? -1 : 1) * (hi * 2^64 + lo) * 2^at, at >= 0: the magnitude's 32-bit pieces into the digits
    __host__ __device__ __forceinline__ void add_scaled(uint64_t lo, uint64_t hi, int at, bool negative) {
        const int first = at / 32, shift = at % 32;
        uint64_t w[3] = {lo, hi, 0};
        if (shift) {
            w[2] = hi >> (64 - shift);
            w[1] = (hi << shift) | (lo >> (64 - shift));
            w[0] = lo << shift;
        }
        for (int k = 0; k < 6; k++) {
            const int64_t piece = int64_t((w[k / 2] >> (32 * (k % 2))) & 0xffffffffu);
            if (piece && first + k < F::kDigits) add(&digit[first + k], negative ? -piece : piece);
        }
    }

    __host__ __device__ __forceinline__ void add_element(T x) {
        const ExactParts<T> p = exact_parts(x);
        if (!p.finite) {
            flags |= p.nan ? 1u : p.negative ? 4u : 2u;
            return;
        }
        if (p.m) add_scaled(p.m, 0, p.pos, p.negative);
    }

    // Every digit into [0, 2^32) but the top one, which carries the sign.  One thread.
    __host__ __device__ __forceinline__ void normalize() {
        for (int i = 0; i + 1 < F::kDigits; i++) {
            const int64_t carry = digit[i] >> 32;  // floor division by 2^32
            digit[i] -= carry * (int64_t(1) << 32);
            digit[i + 1] += carry;
        }
    }

    // Bit `b` of a normalized magnitude, and whether any bit below `b` is set.
    __host__ __device__ __forceinline__ uint64_t bit(int b) const {
        return b < 0 ? 0 : (uint64_t(digit[b / 32]) >> (b % 32)) & 1u;
    }
    __host__ __device__ __forceinline__ bool any_below(int b) const {
        if (b <= 0) return false;
        for (int i = 0; i < b / 32; i++)
            if (digit[i]) return true;
        return b % 32 && (uint64_t(digit[b / 32]) & ((uint64_t(1) << (b % 32)) - 1)) != 0;
    }

    // The sum rounded to T, to nearest with ties to even; NaN where a NaN was added or both infinities, an
    // infinity where one was added or the exact sum rounds beyond T's range.  Normalizes (one thread).
    __host__ __device__ __forceinline__ T round() {
        using Bits = typename F::Bits;
        constexpr int kFraction = F::kMantissa - 1, kMaxField = (1 << F::kExponentBits) - 1;
        constexpr Bits kSign = Bits(1) << (8 * sizeof(T) - 1);
        Bits bits;
        T result;
        if (flags & 1u || (flags & 6u) == 6u) {
            bits = (Bits(kMaxField) << kFraction) | (Bits(1) << (kFraction - 1));  // quiet NaN
            memcpy(&result, &bits, sizeof bits);
            return result;
        }
        if (flags) {
            bits = (Bits(kMaxField) << kFraction) | (flags & 4u ? kSign : Bits(0));
            memcpy(&result, &bits, sizeof bits);
            return result;
        }
        normalize();
        const bool negative = digit[F::kDigits - 1] < 0;
        if (negative) {  // the magnitude: -S, normalized again
            for (int i = 0; i < F::kDigits; i++) digit[i] = -digit[i];
            normalize();
        }
        int top = -1;  // the magnitude's highest set bit
        for (int i = F::kDigits - 1; i >= 0 && top < 0; i--)
            for (int b = 31; b >= 0; b--)
                if ((uint64_t(digit[i]) >> b) & 1u) {
                    top = 32 * i + b;
                    break;
                }
        const Bits sign = negative ? kSign : Bits(0);
        if (top < kFraction + 1) {  // below 2^kMantissa units: a subnormal or the first binade, exactly
            bits = sign | Bits(top < 0 ? 0 : uint64_t(digit[0]) | (uint64_t(digit[1]) << 32));
            memcpy(&result, &bits, sizeof bits);
            return result;
        }
        int low = top - kFraction;  // the lowest bit the mantissa keeps
        uint64_t mantissa = 0;
        for (int b = top; b >= low; b--) mantissa = (mantissa << 1) | bit(b);
        if (bit(low - 1) && (any_below(low - 1) || (mantissa & 1u))) mantissa++;
        if (mantissa >> F::kMantissa) {  // rounded up to the next binade
            mantissa >>= 1;
            low++;
        }
        const int field = low + 1;  // the lowest kept bit sits at (field - 1) units
        if (field >= kMaxField) bits = sign | (Bits(kMaxField) << kFraction);
        else bits = sign | (Bits(field) << kFraction) | Bits(mantissa & ((uint64_t(1) << kFraction) - 1));
        memcpy(&result, &bits, sizeof bits);
        return result;
    }
};

// A thread's running sum: W x 2^anchor (units of 2^kLsb), W a signed 128-bit integer with 32 bits of headroom
// (2^32 elements a thread).  What W cannot hold goes to `spill` (an ExactDigits, shared or the thread's own).
template <class T>
struct ExactWindow {
    using F = ExactFormat<T>;
    static constexpr int kRoom = 127 - 32;  // the highest bit an element may reach, above the anchor
    __int128 w = 0;
    int anchor = -1;  // none yet

    template <class Digits>
    __host__ __device__ __forceinline__ void spill_window(Digits &spill) {
        if (w == 0) return;
        const bool negative = w < 0;
        const unsigned __int128 m = negative ? (unsigned __int128)(-w) : (unsigned __int128)w;
        spill.add_scaled(uint64_t(m), uint64_t(m >> 64), anchor, negative);
        w = 0;
    }

    template <class Digits>
    __host__ __device__ __forceinline__ void add(T x, Digits &spill) {
        const ExactParts<T> p = exact_parts(x);
        if (!p.finite) {
            spill.flags |= p.nan ? 1u : p.negative ? 4u : 2u;
            return;
        }
        if (p.m == 0) return;
        if (anchor < 0) {
            const int a = p.pos - F::kBelow;
            anchor = a < 0 ? 0 : a;
        }
        if (p.pos < anchor) {  // too small for the window: to the digits alone
            spill.add_scaled(p.m, 0, p.pos, p.negative);
            return;
        }
        const int top = p.pos + F::kMantissa;  // one past the element's highest bit
        if (top > anchor + kRoom) {  // too large: move the anchor up, the bits below it to the digits
            const int moved = top - kRoom + F::kAbove - anchor;
            if (moved >= 127) {
                spill_window(spill);
            } else {
                // W = q * 2^moved + r, 0 <= r < 2^moved: r goes to the digits, W keeps q
                const unsigned __int128 mask = ((unsigned __int128)1 << moved) - 1;
                const unsigned __int128 r = (unsigned __int128)w & mask;
                if (r) spill.add_scaled(uint64_t(r), uint64_t(r >> 64), anchor, false);
                w = (w - (__int128)r) >> moved;
            }
            anchor += moved;
        }
        const __int128 v = (__int128)p.m << (p.pos - anchor);
        w += p.negative ? -v : v;
    }
};

}  // namespace gr
