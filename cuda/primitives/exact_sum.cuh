// exact_sum.cuh -- exact sums of floating-point numbers (issue 41): every finite float32 or float64 is an integer
// multiple of its type's smallest subnormal, 2^kLsb, so a sum of them is an integer S times 2^kLsb.  S is kept
// exactly, in integers, and rounded once at the end (to nearest, ties to even).  Integer addition does not care
// about order, so the bits of the result do not depend on how the elements were split among threads, blocks,
// launches, rows of a batch or chunks of a Dask array: exact and batch-invariant by construction.
//
//   ExactDigits<T>  S as 32-bit digits held in int64 words (carry-save: each word absorbs 2^31 signed 32-bit
//                   pieces before a carry must move), NaN and infinities as flags; rounds once to T, or to
//                   float16 or bfloat16 (round_bits), or S divided by a count (round_quotient_bits: the exact
//                   mean; exact_round_magnitude is the one rounding of them all).  A block's or a
//                   grid's accumulator: its adds are integer adds, atomics on the device where threads share it
//                   (the Add policy), so any order of them gives the same S.
//   ExactWindow<T>  a thread's hot path: a signed 128-bit integer W holding the elements' sum as W x 2^anchor,
//                   the anchor set by the first element so that elements 2^31 (float64: 2^22) times smaller and
//                   2^40 (2^20) times larger fit; an element smaller than that goes to the digits alone, a larger
//                   one moves the anchor up and the bits W no longer holds go to the digits.  Typical data never
//                   leaves W: one shift and one 128-bit add per element (add's first test).
//
// An exact zero is +0.0, also of -0.0 elements alone: NumPy's sums start from its identity, +0.0, as math.fsum.
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
#define __noinline__ __attribute__((noinline))
#endif

namespace gr {

template <class T>
struct ExactFormat;
template <>
struct ExactFormat<float> {
    using Bits = uint32_t;
    using Word = int64_t;  // the window: 24-bit elements in 64 bits, 12 bits of headroom (see ExactWindow)
    static constexpr int kMantissa = 24;  // with the hidden bit
    static constexpr int kExponentBits = 8;
    static constexpr int kDigits = 10;    // S < 2^277 (2^128 / 2^-149), times up to 2^40 elements: < 2^320
    static constexpr int kHeadroom = 12;  // elements a window adds between spills: 2^12
    static constexpr int kAbove = 10, kBelow = 17;  // the window's reach around its first element (binades)
};
template <>
struct ExactFormat<double> {
    using Bits = uint64_t;
    using Word = __int128;
    static constexpr int kMantissa = 53;
    static constexpr int kExponentBits = 11;
    static constexpr int kDigits = 68;    // S < 2^2098, times up to 2^40 elements: < 2^2176
    static constexpr int kHeadroom = 32;  // never spilled for room: 2^32 elements a thread
    static constexpr int kAbove = 20, kBelow = 22;
};

// What an accumulator knows besides S (ExactDigits::flags, ExactWindow::flags).
enum : unsigned {
    kExactNaN = 1u,
    kExactPlusInf = 2u,
    kExactMinusInf = 4u
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

// The flag of an element that is not finite (0 for a finite one).
template <class T>
__host__ __device__ __forceinline__ unsigned exact_flag(const ExactParts<T> &p) {
    return p.finite ? 0u : p.nan ? kExactNaN : p.negative ? kExactMinusInf : kExactPlusInf;
}

// How a thread adds to a shared accumulator word: plainly (one thread owns it), or atomically on the device.
struct PlainAdd {
    __host__ __device__ __forceinline__ void operator()(int64_t *word, int64_t v) const { *word += v; }
    __host__ __device__ __forceinline__ void or_flags(unsigned *flags, unsigned v) const { *flags |= v; }
};

__host__ __device__ __forceinline__ int exact_clz32(uint32_t x) {  // x != 0
#ifdef __CUDA_ARCH__
    return __clz(x);
#else
    return __builtin_clz(x);
#endif
}

// (negative ? -1 : 1) * (hi * 2^64 + lo) * 2^at, at >= 0, as signed 32-bit pieces: each nonzero one given to
// add(digit index, piece), the digits below kDigits (what an ExactDigits holds, and the ones kept elsewhere).
template <int kDigits, class Add>
__host__ __device__ __forceinline__ void exact_pieces(uint64_t lo, uint64_t hi, int at, bool negative, Add &&add) {
    const int first = at / 32, shift = at % 32;
    uint64_t w[3] = {lo, hi, 0};
    if (shift) {
        w[2] = hi >> (64 - shift);
        w[1] = (hi << shift) | (lo >> (64 - shift));
        w[0] = lo << shift;
    }
    for (int k = 0; k < 6; k++) {
        const int64_t piece = int64_t((w[k / 2] >> (32 * (k % 2))) & 0xffffffffu);
        if (piece && first + k < kDigits) add(first + k, negative ? -piece : piece);
    }
}

// A binary floating-point format the digits round to, by its bits: mantissa bits with the hidden one, exponent bits,
// its largest exponent field (infinities and NaN), and kLsb, the exponent of its smallest subnormal.
template <class Bits_, int kMantissa_, int kExponentBits_>
struct ExactTargetFormat {
    using Bits = Bits_;
    static constexpr int kMantissa = kMantissa_, kExponentBits = kExponentBits_;
    static constexpr int kMaxField = (1 << kExponentBits) - 1;
    static constexpr int kLsb = 3 - (1 << (kExponentBits - 1)) - kMantissa;
};
template <class T>
struct ExactTarget;
template <>
struct ExactTarget<float> : ExactTargetFormat<uint32_t, 24, 8> {};
template <>
struct ExactTarget<double> : ExactTargetFormat<uint64_t, 53, 11> {};
using ExactHalf = ExactTargetFormat<uint16_t, 11, 5>;      // IEEE binary16 (float16)
using ExactBfloat16 = ExactTargetFormat<uint16_t, 8, 8>;   // bfloat16: float32's exponent, 8 mantissa bits

// The 64 bits from bit `b` up (b >= 0) of a magnitude held as `count` 32-bit digits in int64 words.
__host__ __device__ __forceinline__ uint64_t exact_bits_from(const int64_t *digit, int count, int b) {
    const int i = b / 32, s = b % 32;
    const uint64_t w0 = i < count ? uint64_t(digit[i]) : 0, w1 = i + 1 < count ? uint64_t(digit[i + 1]) : 0,
                   w2 = i + 2 < count ? uint64_t(digit[i + 2]) : 0;
    return s ? (w0 >> s) | (w1 << (32 - s)) | (w2 << (64 - s)) : w0 | (w1 << 32);
}
// Whether any bit below `b` of such a magnitude is set.
__host__ __device__ __forceinline__ bool exact_any_below(const int64_t *digit, int b) {
    if (b <= 0) return false;
    for (int i = 0; i < b / 32; i++)
        if (digit[i]) return true;
    return b % 32 && (uint64_t(digit[b / 32]) & ((uint64_t(1) << (b % 32)) - 1)) != 0;
}

// The normalized magnitude M = sum of digit[i] 2^(32 i) (each in [0, 2^32)), worth M x 2^lsb plus, where `sticky`,
// something less than 2^lsb, rounded to nearest with ties to even in Target, as its bits without the sign (an
// infinity where it rounds beyond the largest finite value).  One encoding for subnormals, normals and a mantissa
// rounded up into the next binade: bits = (lowest kept bit's exponent above the subnormals' << (kMantissa - 1)) +
// the kept bits, hidden bit included.  Target's unit must be at least 2^lsb, twice that where `sticky`.
template <class Target>
__host__ __device__ typename Target::Bits exact_round_magnitude(const int64_t *digit, int count, int lsb,
                                                                 bool sticky) {
    using Bits = typename Target::Bits;
    int i = count - 1;
    while (i >= 0 && digit[i] == 0) i--;
    if (i < 0) return 0;  // below 2^lsb: under half of Target's smallest subnormal
    const int top = 32 * i + 31 - exact_clz32(uint32_t(digit[i]));  // M's highest set bit
    const int unit = Target::kLsb - lsb;  // Target's unit, in bits of M
    const int low = top - (Target::kMantissa - 1) > unit ? top - (Target::kMantissa - 1) : unit;  // lowest kept
    uint64_t kept = exact_bits_from(digit, count, low);  // M's bits above top are zero: at most kMantissa bits
    const bool round = low >= 1 && (exact_bits_from(digit, count, low - 1) & 1u);
    if (round && (sticky || (kept & 1u) || exact_any_below(digit, low - 1))) kept++;
    const uint64_t bits = (uint64_t(low - unit) << (Target::kMantissa - 1)) + kept;
    const uint64_t infinity = uint64_t(Target::kMaxField) << (Target::kMantissa - 1);
    return Bits(bits < infinity ? bits : infinity);
}

template <class T, class Add = PlainAdd>
struct ExactDigits {
    using F = ExactFormat<T>;
    int64_t digit[F::kDigits];
    unsigned flags;  // kExact*
    Add add;

    __host__ __device__ __forceinline__ void clear() {
        for (int i = 0; i < F::kDigits; i++) digit[i] = 0;
        flags = 0;
    }

    // += (negative ? -1 : 1) * (hi * 2^64 + lo) * 2^at, at >= 0: the magnitude's 32-bit pieces into the digits
    __host__ __device__ __forceinline__ void add_scaled(uint64_t lo, uint64_t hi, int at, bool negative) {
        exact_pieces<F::kDigits>(lo, hi, at, negative, [&](int i, int64_t piece) { add(&digit[i], piece); });
    }

    __host__ __device__ __forceinline__ void add_flags(unsigned f) {
        if (f) add.or_flags(&flags, f);
    }

    // += (negative ? -1 : 1) * m * 2^pos: one element (m < 2^kMantissa)
    __host__ __device__ __forceinline__ void add_element(uint64_t m, int pos, bool negative) {
        add_scaled(m, 0, pos, negative);
    }

    __host__ __device__ __forceinline__ void add_element(T x) {
        const ExactParts<T> p = exact_parts(x);
        add_flags(exact_flag(p));
        if (p.finite && p.m) add_scaled(p.m, 0, p.pos, p.negative);
    }

    // Every digit into [0, 2^32) but the top one, which carries the sign.  One thread.
    __host__ __device__ __forceinline__ void normalize() {
        for (int i = 0; i + 1 < F::kDigits; i++) {
            const int64_t carry = digit[i] >> 32;  // floor division by 2^32
            digit[i] -= carry * (int64_t(1) << 32);
            digit[i + 1] += carry;
        }
    }

    // The sum rounded to T (or to the type Out of format Target: float16 and bfloat16 sums kept in float32's
    // digits), to nearest with ties to even; NaN where a NaN was added or both infinities, an infinity where one
    // was added or the exact sum rounds beyond the format's range.  Normalizes (one thread).
    template <class Out = T, class Target = ExactTarget<T>>
    __host__ __device__ __forceinline__ Out round() {
        static_assert(sizeof(Out) == sizeof(typename Target::Bits), "a format of Out's width");
        const typename Target::Bits bits = round_bits<Target>();
        Out result;
        memcpy(&result, &bits, sizeof bits);
        return result;
    }

    // The sum divided by `count` (0: NaN, the mean of nothing) rounded once to Out, as round(): the exact mean.
    template <class Out = T, class Target = ExactTarget<T>>
    __host__ __device__ __forceinline__ Out round_quotient(uint64_t count) {
        static_assert(sizeof(Out) == sizeof(typename Target::Bits), "a format of Out's width");
        const typename Target::Bits bits = round_quotient_bits<Target>(count);
        Out result;
        memcpy(&result, &bits, sizeof bits);
        return result;
    }

    // The sum rounded once to the format Target (ExactTarget<float>, ExactHalf, ...: one whose smallest subnormal is
    // no smaller than T's), to nearest with ties to even, as its bits; NaN and infinities as round()'s.
    // Normalizes (one thread).
    template <class Target>
    __host__ __device__ typename Target::Bits round_bits() {
        typename Target::Bits special;
        if (special_bits<Target>(&special)) return special;
        const bool negative = to_magnitude();
        return signed_bits<Target>(exact_round_magnitude<Target>(digit, F::kDigits, ExactTarget<T>::kLsb, false),
                                   negative);
    }

    // The sum divided by `count` (0: NaN, the mean of nothing) rounded once to Target, as round_bits: the digits'
    // long division, carried two digits below the units, the remainder a sticky bit (a count below 2^64 leaves a
    // set quotient bit below the units whenever it leaves a remainder, so Target's rounding is decided by the
    // quotient's bits; the sticky bit keeps the contract exact).  Normalizes (one thread).
    template <class Target>
    __host__ __device__ typename Target::Bits round_quotient_bits(uint64_t count) {
        typename Target::Bits special;
        if (count == 0) return nan_bits<Target>();
        if (special_bits<Target>(&special)) return special;
        const bool negative = to_magnitude();
        int64_t q[F::kDigits + 2];
        unsigned __int128 rest = 0;
        for (int i = F::kDigits + 1; i >= 0; i--) {
            rest = (rest << 32) | uint64_t(i >= 2 ? digit[i - 2] : 0);
            q[i] = int64_t(uint64_t(rest / count));  // < 2^32: rest < count x 2^32
            rest %= count;
        }
        return signed_bits<Target>(
            exact_round_magnitude<Target>(q, F::kDigits + 2, ExactTarget<T>::kLsb - 64, rest != 0), negative);
    }

  private:
    template <class Target>
    __host__ __device__ static typename Target::Bits nan_bits() {  // a quiet NaN
        return typename Target::Bits((typename Target::Bits(Target::kMaxField) << (Target::kMantissa - 1)) |
                                     (typename Target::Bits(1) << (Target::kMantissa - 2)));
    }
    // Target's NaN where a NaN was added or both infinities, the infinity where one was: true and *bits set.
    template <class Target>
    __host__ __device__ bool special_bits(typename Target::Bits *bits) const {
        using Bits = typename Target::Bits;
        static_assert(Target::kLsb >= ExactTarget<T>::kLsb, "a target with finer subnormals than the digits");
        const unsigned inf = flags & (kExactPlusInf | kExactMinusInf);
        if (flags & kExactNaN || inf == (kExactPlusInf | kExactMinusInf)) *bits = nan_bits<Target>();
        else if (inf) *bits = signed_bits<Target>(Bits(Bits(Target::kMaxField) << (Target::kMantissa - 1)),
                                                  inf == kExactMinusInf);
        return flags & kExactNaN || inf;
    }
    // Normalizes the digits into the sum's magnitude (-S where S < 0); whether S < 0.
    __host__ __device__ bool to_magnitude() {
        normalize();
        const bool negative = digit[F::kDigits - 1] < 0;
        if (negative) {
            for (int i = 0; i < F::kDigits; i++) digit[i] = -digit[i];
            normalize();
        }
        return negative;
    }
    // A magnitude's bits with the sign of a nonzero result: -0.0 where a negative one rounds to zero (a float16
    // sum or a mean below half the smallest subnormal), as IEEE 754 rounds; an exact zero is +0.0 (the top of the
    // file), never negative here
    template <class Target>
    __host__ __device__ static typename Target::Bits signed_bits(typename Target::Bits magnitude, bool negative) {
        using Bits = typename Target::Bits;
        return negative ? Bits(magnitude | Bits(Bits(1) << (8 * sizeof(Bits) - 1))) : magnitude;
    }
};

// A thread's running sum: W x 2^anchor (units of 2^kLsb), W a signed integer of ExactFormat's Word (64 bits for
// float32, whose hot path is then a 64-bit shift and add; 128 for float64) with kHeadroom bits above the
// elements' reach, so that 2^kHeadroom elements fit between two spill_window calls (the caller's to make, every
// kSpillEvery elements), and the flags of what it saw.  What W cannot hold goes to an ExactDigits (`spill`:
// shared or the thread's own); the flags go there in finish().
template <class T>
struct ExactWindow {
    using F = ExactFormat<T>;
    using Word = typename F::Word;
    static constexpr int kWordBits = 8 * int(sizeof(Word));
    static constexpr int kRoom = kWordBits - 1 - F::kHeadroom;  // the highest bit an element may reach, above the anchor
    static constexpr int kMaxShift = kRoom - F::kMantissa;     // an element's lowest bit, at most, above the anchor
    static_assert(F::kAbove + F::kBelow == kMaxShift, "the window's reach is its width");
    static constexpr int64_t kSpillEvery = int64_t(1) << F::kHeadroom;
    // The highest anchor: every finite element's lowest bit (at most 2^kExponentBits - 3) is within reach of it,
    // and an infinity's would-be bit (one more) never is, so add's first test passes finite elements only.
    static constexpr int kMaxAnchor = (1 << F::kExponentBits) - 3 - kMaxShift;
    static constexpr int kUnset = 1 << 20;                     // no nonzero element yet: every element is slow
    Word w = 0;
    int anchor = kUnset;
    unsigned flags = 0;

    template <class Digits>
    __host__ __device__ __forceinline__ void spill_window(Digits &spill) {
        if (w == 0) return;
        const bool negative = w < 0;
        const unsigned __int128 m = negative ? (unsigned __int128)(-(__int128)w) : (unsigned __int128)w;
        spill.add_scaled(uint64_t(m), uint64_t(m >> 64), anchor, negative);
        w = 0;
    }

    // W and the flags into `spill`: the thread's share of the sum.
    template <class Digits>
    __host__ __device__ __forceinline__ void finish(Digits &spill) {
        spill_window(spill);
        spill.add_flags(flags);
    }

    // Anchors a window that holds nothing yet where add would at element x (finite, nonzero), inline: a short
    // run's first element then takes the hot path too.  Any anchor gives the same sum.
    __host__ __device__ __forceinline__ void anchor_at(T x) {
        const ExactParts<T> p = exact_parts(x);
        if (anchor == kUnset && p.finite && p.m) {
            const int a = p.pos - F::kBelow;
            anchor = a < 0 ? 0 : a > kMaxAnchor ? kMaxAnchor : a;
        }
    }

    template <class Digits>
    __host__ __device__ __forceinline__ void add(T x, Digits &spill) {
        const ExactParts<T> p = exact_parts(x);
        const unsigned shift = unsigned(p.pos - anchor);
        if (shift <= unsigned(kMaxShift)) {  // the hot path: a finite element within the window (or a zero)
            const Word v = Word(p.m) << shift;
            w += p.negative ? -v : v;
            return;
        }
        *this = outside(*this, p, spill);
    }

    // An element outside the window, out of line so that the unrolled hot loop stays small (and quick to compile);
    // the window goes in and out by value, so that the hot loop keeps it in registers.
    template <class Digits>
    __host__ __device__ static __noinline__ ExactWindow outside(ExactWindow window, ExactParts<T> p, Digits &spill) {
        window.add_outside(p, spill);
        return window;
    }

    template <class Digits>
    __host__ __device__ __forceinline__ void add_outside(const ExactParts<T> &p, Digits &spill) {
        flags |= exact_flag(p);
        if (!p.finite || p.m == 0) return;
        if (anchor == kUnset) {
            const int a = p.pos - F::kBelow;
            anchor = a < 0 ? 0 : a > kMaxAnchor ? kMaxAnchor : a;
        }
        if (p.pos < anchor) {  // too small for the window: to the digits alone
            spill.add_element(p.m, p.pos, p.negative);
            return;
        }
        if (p.pos - anchor > kMaxShift) {  // too large: move the anchor up, the bits below it to the digits
            int to = p.pos - kMaxShift + F::kAbove;
            to = to > kMaxAnchor ? kMaxAnchor : to;
            const int moved = to - anchor;
            if (moved >= kWordBits - 1) {
                spill_window(spill);
            } else {
                // W = q * 2^moved + r, 0 <= r < 2^moved: r goes to the digits, W keeps q
                const uint64_t mask_lo = moved >= 64 ? ~uint64_t(0) : (uint64_t(1) << moved) - 1;
                const uint64_t mask_hi = moved > 64 ? (uint64_t(1) << (moved - 64)) - 1 : 0;
                const unsigned __int128 u = (unsigned __int128)(__int128)w;
                const uint64_t r_lo = uint64_t(u) & mask_lo, r_hi = uint64_t(u >> 64) & mask_hi;
                if (r_lo | r_hi) spill.add_scaled(r_lo, r_hi, anchor, false);
                const __int128 r = (__int128)(((unsigned __int128)r_hi << 64) | r_lo);
                w = Word(((__int128)w - r) >> moved);
            }
            anchor = to;
        }
        const Word v = Word(p.m) << (p.pos - anchor);
        w += p.negative ? -v : v;
    }
};

}  // namespace gr
