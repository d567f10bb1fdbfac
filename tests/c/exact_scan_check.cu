// The exact cumsum's arithmetic (cuda/primitives/exact_scan.cuh) run on the host the way the kernels
// (cuda/axis/exact_scan_kernels.cuh) run it, tile by tile: tests/test_exact_scan_cpu.py writes arrays to a file,
// this scans each and prints every element's bits, and the test compares them with each exact prefix sum rounded
// to nearest-even in Python's fractions.
//   a tile's prefix P is the digits of every element before it; its elements' running sum L an integer at the
//   tile's anchor a (its smallest element's lowest bit), where exact_prefix_fits says 128 bits hold P + L; an
//   element exact_prefix_bits leaves undecided, and every element of a tile that does not fit, is rounded from
//   digits (as the kernels' slow paths).
// Input: records of (int32 bytes per element: 4 or 8, int32 tile, int32 flags: 1 exclusive, 2 nan form (NaN as
// +0.0), 4/8 round float32's prefixes to float16/bfloat16, int64 n, n elements); output: one line per record,
// "<fast> <undecided> <slow> <bits>...", the counts of elements each path took, then the bits in hexadecimal.
#include "primitives/exact_scan.cuh"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace gr;

// A prefix P + l x 2^a as the kernels round it (exact_tile_fits): a narrow tile through its split, l in int64
// (checked to hold it: the bound exact_tile_sum_bits promises), else in 128 bits.
template <class Target, class T>
static bool prefix_bits(const ExactTileSplit &tile_split, const ExactSplit &split, __int128 l, int a,
                        typename Target::Bits *bits) {
    if (!tile_split.narrow) return exact_prefix_bits<Target, T>(split.q + l, split.frac, a, bits);
    if (l >= (__int128(1) << 61) || l <= -(__int128(1) << 61)) {
        fprintf(stderr, "a narrow tile's sum left 62 bits\n");
        exit(3);
    }
    return exact_split_prefix_bits<Target, T>(tile_split, int64_t(l), split.frac, a, bits);
}

template <class T, class Target>
static void scan(const std::vector<T> &x, int64_t tile, bool exclusive, bool nan_form) {
    using F = ExactFormat<T>;
    const int64_t n = int64_t(x.size());
    ExactDigits<T> p;  // everything before the tile
    p.clear();
    unsigned p_flags = 0;
    std::vector<uint64_t> out(n);
    int64_t fast = 0, undecided = 0, slow = 0;
    for (int64_t t0 = 0; t0 < n; t0 += tile) {
        const int64_t t1 = t0 + tile < n ? t0 + tile : n;
        int min_pos = 1 << 30, max_pos = -1;
        for (int64_t i = t0; i < t1; i++) {
            const ExactParts<T> e = exact_parts(x[i]);
            if (e.finite && e.m) {
                min_pos = e.pos < min_pos ? e.pos : min_pos;
                max_pos = e.pos > max_pos ? e.pos : max_pos;
            }
        }
        const bool any = max_pos >= 0;
        ExactDigits<T> normalized = p;
        normalized.normalize();
        const int top = exact_split<F::kDigits>(normalized.digit, 0).top;
        const int a = exact_tile_anchor<T>(top, exact_low_bit<F::kDigits>(normalized.digit), min_pos, max_pos, any);
        const bool fits = exact_prefix_fits<T>(top, max_pos, any, a);
        const ExactSplit split = exact_split<F::kDigits>(normalized.digit, a);
        const ExactTileSplit tile_split = exact_tile_split<T>(split.q, max_pos, any, a);
        __int128 l = 0;
        unsigned flags = p_flags;
        ExactDigits<T> running = normalized;  // the slow path's
        for (int64_t i = t0; i < t1; i++) {
            const __int128 l_before = l;
            const unsigned flags_before = flags;
            const ExactParts<T> e = exact_parts(x[i]);
            ExactDigits<T> running_before = running;
            if (!e.finite && !(nan_form && e.nan)) flags |= exact_flag(e);
            if (!(e.finite && e.m == 0 && e.negative)) flags |= kExactNotNegativeZero;
            if (e.finite && e.m) {
                if (fits) {
                    const __int128 v = __int128(e.m) << (e.pos - a);
                    l += e.negative ? -v : v;
                }
                running.add_element(e.m, e.pos, e.negative);
            }
            const bool empty = exclusive && i == 0;
            const unsigned f = exclusive ? flags_before : flags;
            typename Target::Bits bits;
            if (exact_prefix_special<Target>(f, empty, &bits)) {
                fast++;
            } else if (fits && prefix_bits<Target, T>(tile_split, split, exclusive ? l_before : l, a, &bits)) {
                fast++;
            } else if (fits) {
                undecided++;
                ExactDigits<T> copy = normalized;
                bits = exact_prefix_bits_from_digits<Target, T>(copy, exclusive ? l_before : l, a);
            } else {
                slow++;
                ExactDigits<T> copy = exclusive ? running_before : running;
                bits = exact_prefix_bits_from_digits<Target, T>(copy, 0, 0);
            }
            out[i] = uint64_t(bits);
        }
        p = running;
        p_flags = flags;
    }
    printf("%" PRId64 " %" PRId64 " %" PRId64, fast, undecided, slow);
    for (const uint64_t b : out) printf(" %" PRIx64, b);
    printf("\n");
}

template <class T>
static void one(FILE *in, int64_t tile, int flags, int64_t n) {
    std::vector<T> x(n);
    if (n && fread(x.data(), sizeof(T), n, in) != size_t(n)) {
        fprintf(stderr, "short read\n");
        return;
    }
    const bool exclusive = flags & 1, nan_form = flags & 2;
    if constexpr (sizeof(T) == 4) {
        if (flags & 4) return scan<T, ExactHalf>(x, tile, exclusive, nan_form);
        if (flags & 8) return scan<T, ExactBfloat16>(x, tile, exclusive, nan_form);
    }
    scan<T, ExactTarget<T>>(x, tile, exclusive, nan_form);
}

// `--rounding`: the 64-bit rounding of narrow tiles (exact_prefix_bits64) against the 128-bit one
// (exact_prefix_bits) on prefixes around 2^e, 2^kMantissa and 2^62, both signs, with and without sticky bits, over
// anchors from the subnormals to beyond the largest finite value: the same bits, decided in the same cases.
// Prints "<disagreements> <undecided> <cases>" per target.
template <class Target, class T>
static void rounding(std::mt19937_64 &g, long cases) {
    long bad = 0, undecided = 0;
    for (long i = 0; i < cases; i++) {
        int64_t m;
        switch (g() % 4) {
        case 0: m = (int64_t(1) << (g() % 62)) + int64_t(g() % 5) - 2; break;
        case 1: m = int64_t(g() >> (2 + g() % 62)); break;
        case 2: m = (int64_t(1) << (Target::kMantissa + int(g() % 3) - 1)) + int64_t(g() % 7) - 3; break;
        default: m = int64_t(g() >> 2);
        }
        if (m >= (int64_t(1) << 62)) m = (int64_t(1) << 62) - 1;
        if (g() & 1) m = -m;
        const bool sticky = g() & 1;
        const int a = int(g() % 400);
        typename Target::Bits fast = 0, wide = 0;
        const bool decided = exact_prefix_bits64<Target, T>(m, sticky, a + ExactTarget<T>::kLsb, &fast);
        const bool wide_decided = exact_prefix_bits<Target, T>(__int128(m), sticky, a, &wide);
        bad += decided != wide_decided || (decided && fast != wide);
        undecided += !decided;
    }
    printf("%ld %ld %ld\n", bad, undecided, cases);
}

int main(int argc, char **argv) {
    if (argc > 1 && std::string(argv[1]) == "--rounding") {
        std::mt19937_64 g(7);
        rounding<ExactTarget<float>, float>(g, 2000000);
        rounding<ExactHalf, float>(g, 500000);
        rounding<ExactBfloat16, float>(g, 500000);
        rounding<ExactTarget<double>, double>(g, 2000000);
        return 0;
    }
    FILE *in = argc > 1 ? fopen(argv[1], "rb") : stdin;
    if (!in) return 2;
    int32_t head[3];
    int64_t n;
    while (fread(head, sizeof head, 1, in) == 1 && fread(&n, sizeof n, 1, in) == 1) {
        if (head[0] == 4) one<float>(in, head[1], head[2], n);
        else one<double>(in, head[1], head[2], n);
    }
    return 0;
}
