// exact_scan.cuh -- the arithmetic of the exact cumsum (issue 41): each element of a scan is the correctly rounded
// value of its exact prefix sum, rounded once.  Host and device code (tests/c/exact_scan_check.cu runs it on the
// host against Python's fractions); the kernels are axis/exact_scan_kernels.cuh.
//
// A tile's prefix S_i = P + L_i x 2^a: P the exact sum of everything before the tile (an ExactDigits), L_i the
// tile's own running sum, an integer in units of 2^a where a is the lowest bit any of the tile's elements has (its
// smallest `pos`), so L_i is exact in 128 bits.  P splits at a into floor(P / 2^a) (Pq, 128 bits where it fits)
// and whether P has bits below 2^a (`frac`): S_i = (Pq + L_i) x 2^a + (something in [0, 2^a), nonzero iff frac).
// Those low bits only decide a rounding when the result's last kept bit lies at or below 2^a, which happens where
// the prefix cancels to within a few binades of the tile's smallest element (exact_fixed_bits says "undecided");
// the kernels then round that one element from P's digits.  Typical data never leaves the 128-bit path.
//
// NumPy's sign of a zero: a cumsum's element is -0.0 exactly where every element of its prefix is -0.0 (IEEE's
// sum of zeros); an exact zero otherwise is +0.0, and an exclusive scan's first element, the empty prefix, +0.0.
#pragma once
#include "primitives/exact_sum.cuh"

namespace gr {

// The flags word of a prefix: ExactDigits' NaN and infinities, and whether an element other than -0.0 was seen.
enum : unsigned { kExactNotNegativeZero = 8u };

using ExactU128 = unsigned __int128;

__host__ __device__ __forceinline__ int exact_top_bit128(ExactU128 m) {  // m != 0
    const uint64_t hi = uint64_t(m >> 64), lo = uint64_t(m);
#ifdef __CUDA_ARCH__
    return hi ? 127 - __clzll((long long)hi) : 63 - __clzll((long long)lo);
#else
    return hi ? 127 - __builtin_clzll(hi) : 63 - __builtin_clzll(lo);
#endif
}

__host__ __device__ __forceinline__ int exact_top_bit(ExactU128 m) { return exact_top_bit128(m); }
__host__ __device__ __forceinline__ int exact_top_bit(uint64_t m) {  // m != 0
#ifdef __CUDA_ARCH__
    return 63 - __clzll((long long)m);
#else
    return 63 - __builtin_clzll(m);
#endif
}

// M x 2^lsb plus, where `sticky`, something in (0, 2^lsb), rounded to nearest-even in Target, as its magnitude's
// bits (an infinity beyond the largest finite value): true and *bits set, or false where the bits below 2^lsb
// would decide it (the rounding's last kept bit at or below 2^lsb with `sticky`, or M = 0 with `sticky`).
// lsb: an exponent of 2 (ExactTarget<T>::kLsb + the anchor).  Same encoding as exact_round_magnitude.  U: the
// 128-bit path's ExactU128, or uint64_t for a narrow tile (exact_prefix_bits64: 64-bit shifts only).
template <class Target, class U>
__host__ __device__ __forceinline__ bool exact_fixed_bits(U m, int lsb, bool sticky, typename Target::Bits *bits) {
    using Bits = typename Target::Bits;
    constexpr int kWidth = 8 * sizeof(U);
    if (m == 0) {
        *bits = 0;
        return !sticky;
    }
    const int top = exact_top_bit(m);
    int e_low = lsb + top - (Target::kMantissa - 1);  // the exponent of the lowest bit the result keeps
    if (e_low < Target::kLsb) e_low = Target::kLsb;
    const int low = e_low - lsb;  // that bit's index in m
    uint64_t kept;
    if (low <= 0) {
        if (sticky) return false;
        kept = uint64_t(m) << -low;  // every bit of m kept, exactly (at most kMantissa of them)
    } else if (low > kWidth) {
        kept = 0;  // m is below half the smallest subnormal: zero
    } else {
        kept = low == kWidth ? 0 : uint64_t(m >> low);
        const bool half = (m >> (low - 1)) & 1u;
        const bool rest = sticky || (low >= 2 && (m & ((U(1) << (low - 1)) - 1)) != 0);
        if (half && (rest || (kept & 1u))) kept++;
    }
    const uint64_t encoded = (uint64_t(e_low - Target::kLsb) << (Target::kMantissa - 1)) + kept;
    const uint64_t infinity = uint64_t(Target::kMaxField) << (Target::kMantissa - 1);
    *bits = Bits(encoded < infinity ? encoded : infinity);
    return true;
}

// A prefix's floor q (signed: __int128 or int64_t, its magnitude's type U) at 2^lsb plus, where `sticky`,
// something in (0, 2^lsb), rounded by exact_fixed_bits, with the sign: |S| is q x 2^lsb + low bits for q >= 0,
// (-q - 1) x 2^lsb + (2^lsb - low bits) for q < 0 with low bits.  (A negative sum rounded to zero: -0.0, as IEEE 754.)
template <class Target, class U, class S>
__host__ __device__ __forceinline__ bool exact_floor_bits(S q, bool sticky, int lsb, typename Target::Bits *bits) {
    using Bits = typename Target::Bits;
    constexpr Bits kSign = Bits(Bits(1) << (8 * sizeof(Bits) - 1));
    const bool negative = q < 0;
    const U m = negative ? U(0) - U(q) - U(sticky ? 1 : 0) : U(q);
    Bits magnitude;
    if (!exact_fixed_bits<Target>(m, lsb, sticky, &magnitude)) return false;
    *bits = negative ? Bits(magnitude | kSign) : magnitude;
    return true;
}

// The bits of any sum of a tile's elements at anchor a: below 2^(this) (at most 2^13 elements, each below
// 2^(max_pos - a + kMantissa)); 0 for a tile of zeros.
template <class T>
__host__ __device__ __forceinline__ int exact_tile_sum_bits(int max_pos, bool any, int a) {
    return any ? max_pos - a + ExactFormat<T>::kMantissa + 13 : 0;
}
// Whether they fit int64 with a bit to spare, so the tile sums in 64-bit integers: typical float32 data (exponents
// spread over less than 25 binades); never float64 (53 + 11 bits and more).
template <class T>
__host__ __device__ __forceinline__ bool exact_tile_sums_narrow(int max_pos, bool any, int a) {
    return sizeof(T) == 4 && exact_tile_sum_bits<T>(max_pos, any, a) <= 61;
}

// The tile's fast path: a prefix as M x 2^lsb plus, where `sticky`, something in (0, 2^lsb) (M = the floor, so a
// negative M with `sticky` is a prefix in (M, M + 1) x 2^lsb), |M| < 2^62, rounded to nearest-even in Target, its
// bits with the sign.  A float32 or float64 result is the hardware's correctly rounded conversion of an int64
// (cvt.rn, as C's conversion on the host), its exponent moved by lsb where the result is normal: with `sticky`,
// 2M + 1 at 2^(lsb - 1) lies on the same side of every rounding boundary as the prefix wherever the result's unit
// is 2^(lsb + 1) or more (|M| > 2^kMantissa: a negative prefix in (M, M + 1) is then above 2^kMantissa too).
// Everything else (a half format, a subnormal or small result) takes exact_floor_bits in 64 bits.  False where the
// bits below 2^lsb would decide the rounding (as exact_prefix_bits).
template <class Target, class T>
__host__ __device__ __forceinline__ bool exact_prefix_bits64(int64_t m, bool sticky, int lsb,
                                                             typename Target::Bits *bits) {
    using Bits = typename Target::Bits;
    constexpr bool kFloat = sizeof(Bits) == 4 && Target::kMantissa == 24;
    constexpr bool kDouble = sizeof(Bits) == 8 && Target::kMantissa == 53;
    if constexpr (kFloat || kDouble) {
        const uint64_t magnitude = m < 0 ? uint64_t(0) - uint64_t(m) : uint64_t(m);
        if (m != 0 && (!sticky || magnitude > (uint64_t(1) << Target::kMantissa))) {
            const int64_t v = sticky ? 2 * m + 1 : m;
            const int shift = sticky ? lsb - 1 : lsb;
            constexpr int kFraction = Target::kMantissa - 1;
            uint64_t b;
            if constexpr (kFloat) {
                const float f = float(v);
                uint32_t u;
                memcpy(&u, &f, sizeof u);
                b = u;
            } else {
                const double d = double(v);
                memcpy(&b, &d, sizeof b);
            }
            const int field = int((b >> kFraction) & uint64_t(Target::kMaxField)) + shift;
            if (field >= 1) {
                const uint64_t sign = b & (uint64_t(1) << (8 * sizeof(Bits) - 1));
                *bits = field >= Target::kMaxField
                            ? Bits(sign | (uint64_t(Target::kMaxField) << kFraction))
                            : Bits((b & ~(uint64_t(Target::kMaxField) << kFraction)) | (uint64_t(field) << kFraction));
                return true;
            }
        }
    }
    return exact_floor_bits<Target, uint64_t>(m, sticky, lsb, bits);
}

// How a float32 tile's prefixes reach exact_prefix_bits64: P's floor at the anchor, pq, split at bit k into
// pq_hi x 2^k + pq_lo (0 <= pq_lo < 2^k); a prefix pq + l is then (pq_hi + floor((pq_lo + l) / 2^k)) x 2^(a + k)
// plus the remainder's bits and P's below the anchor as `sticky`.  k is the smallest that keeps |M| below 2^62 for
// every l of the tile (|l| < 2^exact_tile_sum_bits); `narrow` where the tile's sums fit int64
// (exact_tile_sums_narrow) and pq_lo + l does: the tile then sums and rounds in 64 bits, else in 128 bits
// (exact_prefix_bits).  Where k > 0, M holds about 60 bits of any prefix that does not cancel P, so a float32 or
// half result is decided from it (a float64 one would not be: float64 tiles are never narrow).
struct ExactTileSplit {
    int64_t pq_hi, pq_lo;
    int k;
    bool narrow;
};
template <class T>
__host__ __device__ __forceinline__ ExactTileSplit exact_tile_split(__int128 pq, int max_pos, bool any, int a) {
    const int l_bits = exact_tile_sum_bits<T>(max_pos, any, a);
    const ExactU128 u = pq < 0 ? ExactU128(-pq) : ExactU128(pq);
    const int pq_bits = u ? exact_top_bit128(u) + 1 : 0;
    const int b = pq_bits > l_bits ? pq_bits : l_bits;
    ExactTileSplit s;
    s.k = b > 60 ? b - 60 : 0;
    const __int128 hi = pq >> s.k;  // (arithmetic: the floor)
    s.pq_hi = int64_t(hi);
    s.pq_lo = int64_t(pq - (hi << s.k));
    s.narrow = exact_tile_sums_narrow<T>(max_pos, any, a) && s.k <= 61;
    return s;
}

// The bits of prefix pq + l of a narrow tile split by exact_tile_split, P's bits below the anchor a in `frac`; false
// where they are undecided (exact_prefix_bits's contract).
template <class Target, class T>
__host__ __device__ __forceinline__ bool exact_split_prefix_bits(const ExactTileSplit &s, int64_t l, bool frac, int a,
                                                                 typename Target::Bits *bits) {
    const int64_t t = s.pq_lo + l;
    const int64_t m = s.pq_hi + (t >> s.k);
    const bool sticky = frac || (t & ((int64_t(1) << s.k) - 1)) != 0;
    return exact_prefix_bits64<Target, T>(m, sticky, a + s.k + ExactTarget<T>::kLsb, bits);
}

// A prefix P (normalized digits: every word in [0, 2^32) but the top one, signed) split at bit `a` (units of 2^kLsb):
// P = q x 2^a + r, 0 <= r < 2^a (q = floor(P / 2^a)), `frac` = (r != 0); `top` the highest set bit of |P| (-1: P = 0).
// q is exact where top < a + 126 (the caller's test: exact_prefix_fits).
struct ExactSplit {
    __int128 q;
    bool frac;
    int top;
};
template <int kDigits>
__host__ __device__ __forceinline__ ExactSplit exact_split(const int64_t *normalized, int a) {
    int64_t m[kDigits];  // |P|
    const bool negative = normalized[kDigits - 1] < 0;
    for (int i = 0; i < kDigits; i++) m[i] = negative ? -normalized[i] : normalized[i];
    if (negative)
        for (int i = 0; i + 1 < kDigits; i++) {
            const int64_t carry = m[i] >> 32;
            m[i] -= carry * (int64_t(1) << 32);
            m[i + 1] += carry;
        }
    ExactSplit s{0, false, -1};
    int i = kDigits - 1;
    while (i >= 0 && m[i] == 0) i--;
    if (i < 0) return s;
    s.top = 32 * i + 31 - exact_clz32(uint32_t(m[i]));
    const ExactU128 q = ExactU128(exact_bits_from(m, kDigits, a)) |
                        (ExactU128(exact_bits_from(m, kDigits, a + 64)) << 64);
    s.frac = exact_any_below(m, a);
    // floor of a negative P: -(|P| / 2^a rounded up)
    s.q = negative ? -(__int128)(q + (s.frac ? 1 : 0)) : (__int128)q;
    return s;
}

// The lowest set bit of P (normalized digits; -1 for P = 0): the same in P as in |P|.
template <int kDigits>
__host__ __device__ __forceinline__ int exact_low_bit(const int64_t *normalized) {
    for (int i = 0; i < kDigits; i++) {
        const uint32_t d = uint32_t(normalized[i]);  // (the top word's low 32 bits: its value is below 2^31)
        if (d) {
#ifdef __CUDA_ARCH__
            return 32 * i + __ffs(int(d)) - 1;
#else
            return 32 * i + __builtin_ctz(d);
#endif
        }
    }
    return -1;
}

// Whether a tile's prefixes stay within 127 bits at anchor a: |P| below 2^(a + 125) and the tile's elements (at
// most 2^13 of them, each below 2^(max_pos + kMantissa) units) adding less than 2^(a + 125) more.
template <class T>
__host__ __device__ __forceinline__ bool exact_prefix_fits(int top, int max_pos, bool any_element, int a) {
    return top - a < 124 && (!any_element || max_pos + ExactFormat<T>::kMantissa + 13 - a < 124);
}

// The anchor of a tile: its smallest element's lowest bit (`min_pos`; any element: `any`), lowered to P's lowest
// set bit where 128 bits still hold the prefixes (then P has no bits below it and no rounding is left
// undecided) and the tile's sums stay in 64 bits if they were (P's bits below the anchor are then `frac`, which
// leaves only a small prefix undecided); a tile of zeros alone takes P's top 100 bits.
template <class T>
__host__ __device__ __forceinline__ int exact_tile_anchor(int p_top, int p_low, int min_pos, int max_pos, bool any) {
    const int a = any ? min_pos : p_top > 100 ? p_top - 100 : 0;
    const bool lower = p_low >= 0 && p_low < a && exact_prefix_fits<T>(p_top, max_pos, any, p_low) &&
                       (exact_tile_sums_narrow<T>(max_pos, any, p_low) || !exact_tile_sums_narrow<T>(max_pos, any, a));
    return lower ? p_low : a;
}

// A prefix decided by its flags alone (kExact* | kExactNotNegativeZero) or its emptiness: true and *bits set for
// the empty prefix (+0.0), NaN, an infinity, and -0.0 where every element was -0.0.
template <class Target>
__host__ __device__ __forceinline__ bool exact_prefix_special(unsigned flags, bool empty, typename Target::Bits *bits) {
    using Bits = typename Target::Bits;
    constexpr Bits kSign = Bits(Bits(1) << (8 * sizeof(Bits) - 1));
    constexpr Bits kInfinity = Bits(Bits(Target::kMaxField) << (Target::kMantissa - 1));
    const unsigned inf = flags & (kExactPlusInf | kExactMinusInf);
    if (empty) *bits = 0;
    else if ((flags & kExactNaN) || inf == (kExactPlusInf | kExactMinusInf))
        *bits = Bits(kInfinity | (Bits(1) << (Target::kMantissa - 2)));
    else if (inf) *bits = inf == kExactMinusInf ? Bits(kInfinity | kSign) : kInfinity;
    else if (!(flags & kExactNotNegativeZero)) *bits = kSign;
    else return false;
    return true;
}

// The bits of one finite prefix in Target (exact_prefix_special's cases taken first): Q x 2^a plus P's low bits
// (`frac`).  False where the low bits would decide the rounding (exact_fixed_bits): the caller rounds from digits
// (exact_prefix_bits_from_digits).
template <class Target, class T>
__host__ __device__ __forceinline__ bool exact_prefix_bits(__int128 q, bool frac, int a,
                                                           typename Target::Bits *bits) {
    return exact_floor_bits<Target, ExactU128>(q, frac, a + ExactTarget<T>::kLsb, bits);
}

// The same finite prefix P + L x 2^a from P's digits: the slow, always decided path.  `digits` holds a value equal
// to P (normalized or not) and is changed.
template <class Target, class T>
__host__ __device__ typename Target::Bits exact_prefix_bits_from_digits(ExactDigits<T> &digits, __int128 l, int a) {
    const bool negative = l < 0;
    const ExactU128 m = negative ? ExactU128(-l) : ExactU128(l);
    if (m) digits.add_scaled(uint64_t(m), uint64_t(m >> 64), a, negative);
    digits.flags = 0;
    return digits.template round_bits<Target>();
}

}  // namespace gr
