// group_scatter_kernels.cuh -- grouped sums, means, min and max over ids in any order by scattering into integer
// accumulators (issue 40), compiled on first use (abi/jit.h: GR_JIT_GROUP_SCATTER; the host half is
// axis/reduce_groups_scatter.cu; the per-element rule and the rounding run on the host too, checked by
// tests/c/group_scatter_check.cu).
//
// `index_add_` and `scatter_add` add floats atomically: fast, but their bits depend on the order the atomics land
// in.  Here every element is added to its group as integers, so any order gives the same bits:
//   * a floating element is m x 2^pos in units of its type's smallest subnormal (primitives/exact_sum.cuh); a
//     float32 one (and a float16 or bfloat16 one, a float32 exactly) goes whole into one 64-bit word, word pos / 8
//     holding m << (pos % 8) (< 2^31, so a word absorbs 2^32 elements before it could overflow): one atomic an
//     element, 32 words a group.  A float64 one goes into the 32-bit digits of ExactDigits<double>, 2 or 3 atomics.
//     The group's sum is then exact, and rounded once (a mean: divided by its count, once) by the finish kernel.
//   * an integer (or bool) element is added to its group's 64-bit word: NumPy's sum wraps modulo 2^64 as well.
//   * min, max and their nan forms keep one 64-bit key a group, the element's value in an order-preserving
//     encoding (GroupExtreme), combined by an atomic max (the key of a min complemented): any order, the same key.
// Few groups (those whose words fit in 110 KB) are summed in shared memory first, each 64-bit word as two 32-bit
// halves (a native shared atomic on the low half, the carry into the high half: a 64-bit shared add is a
// compare-and-swap loop on sm_90), and each block adds its nonzero words to global memory at the end; more groups
// go straight to global memory (L2 atomics).  NaN and infinities set a group's flags word.
#pragma once
#include "axis/divisor.cuh"
#include "variants/exact_sum_kernels.cuh"  // ExactInput, exact_write: a group's digits rounded once

namespace gr {

constexpr int kGroupBlock = 256;
constexpr int kGroupLoads = 4;  // elements a thread has in flight

// The layout (gr_segments) as the kernels read it, strides in elements: accumulator (i0, i1, g) sums the elements
// (i0, i1, r) whose ids[r] is g.  `columns`: i1 varies fastest between neighbouring threads (its stride is the
// smaller), else r.
struct GroupLayout {
    int64_t c0, c1, is0, is1, ir, R, os0, os1, ok;
    int64_t groups, total;  // groups a segment; elements in all (c0 c1 R)
    Divisor by_r, by_c1;
    int columns;
    int shared;   // 1: the block's accumulators in shared memory (items x groups x GroupWords::kStride words)
    int packed;   // 1: one contiguous row (c0 = c1 = 1, ir = 1) whose elements and ids load kGroupLoads at once
};

// kGroupLoads consecutive elements (or ids) as one load: a thread's share of a tile of a contiguous row.
template <class T>
struct alignas(sizeof(T) * kGroupLoads) GroupPack {
    T v[kGroupLoads];
};

// What an element adds to its group: the 64-bit words a group holds (kWords), then its flags and its count.
template <class In>
struct GroupScatter {  // bool and the integers: the value, sign-extended
    static constexpr int kWords = 1;
    template <class Add>
    __host__ __device__ __forceinline__ static void add(In x, Add &&add) {
        if (x) add(0, In(-1) < In(0) ? int64_t(x) : int64_t(uint64_t(x)));  // bool and unsigned: zero-extended
    }
};
// float16, bfloat16, float32 and float64: the exact sum's types (classes, for the half formats)
template <class In>
constexpr bool group_inexact = is_floating_point<In>::value || is_same<In, __half>::value ||
                               is_same<In, __nv_bfloat16>::value;

template <class In>
struct GroupFloat32Words {  // float32, float16, bfloat16: word pos / 8 takes m << (pos % 8)
    static constexpr int kWords = 32;
    template <class Add>
    __host__ __device__ __forceinline__ static void add(const ExactParts<float> &p, Add &&add) {
        const int64_t piece = int64_t(p.m << (p.pos & 7));
        add(p.pos >> 3, p.negative ? -piece : piece);
    }
};
template <>
struct GroupScatter<float> : GroupFloat32Words<float> {};
template <>
struct GroupScatter<__half> : GroupFloat32Words<__half> {};
template <>
struct GroupScatter<__nv_bfloat16> : GroupFloat32Words<__nv_bfloat16> {};
template <>
struct GroupScatter<double> {  // ExactDigits<double>'s digits: 2 or 3 pieces
    static constexpr int kWords = ExactFormat<double>::kDigits;
    template <class Add>
    __host__ __device__ __forceinline__ static void add(const ExactParts<double> &p, Add &&add) {
        exact_pieces<kWords>(p.m, 0, p.pos, p.negative, add);
    }
};

// The operators kept as one key a group (min, max and their nan forms): the one list, the host half's too.
constexpr unsigned kGroupExtremeOps =
    GR_OPBIT(GR_OP_MIN) | GR_OPBIT(GR_OP_MAX) | GR_OPBIT(GR_OP_NANMIN) | GR_OPBIT(GR_OP_NANMAX);
template <gr_op kOp>
constexpr bool group_extreme = (kGroupExtremeOps & GR_OPBIT(kOp)) != 0;

// An accumulator's words: a sum's kWords, or an extreme's one key; then the flags and the count.
template <class In, gr_op kOp>
struct GroupWords {
    static constexpr int kFlags = group_extreme<kOp> ? 1 : GroupScatter<In>::kWords, kCount = kFlags + 1,
                         kStride = kCount + 1;
};

// The order-preserving 64-bit key of an element of min or max: unsigned order of keys is the elements' order, and
// 0 is no key (an empty group: the operator's identity).  Floating elements (widened to double, exactly) by their
// bits, negative ones complemented; integers offset into unsigned order (the lowest signed value's key is 0, its
// own identity, as 0's is an unsigned max's); a min's key complemented again, so that one atomic max serves both.
template <class In, gr_op kOp>
struct GroupExtreme {
    static constexpr bool kMin = kOp == GR_OP_MIN || kOp == GR_OP_NANMIN;
    __host__ __device__ __forceinline__ static uint64_t key(In x) {
        uint64_t k;
        if constexpr (group_inexact<In>) {
            using Acc = typename ExactInput<In>::Acc;
            const double d = double(Acc(x));
            uint64_t bits;
            memcpy(&bits, &d, sizeof bits);
            k = bits >> 63 ? ~bits : bits | (uint64_t(1) << 63);
        } else if constexpr (In(-1) < In(0)) {
            k = uint64_t(int64_t(x)) ^ (uint64_t(1) << 63);
        } else {
            k = uint64_t(x);
        }
        return kMin ? ~k : k;
    }
    // The element of a key (not 0 for a floating type: the caller writes the identity there).
    __host__ __device__ __forceinline__ static In value(uint64_t k) {
        if (kMin) k = ~k;
        if constexpr (group_inexact<In>) {
            const uint64_t bits = k >> 63 ? k & ~(uint64_t(1) << 63) : ~k;
            double d;
            memcpy(&d, &bits, sizeof d);
            return In(d);
        } else if constexpr (In(-1) < In(0)) {
            return In(int64_t(k ^ (uint64_t(1) << 63)));
        } else {
            return In(k);
        }
    }
};

#ifndef __CUDACC_RTC__
// The name expressions of the two kernels of (in, out, op): what reduce_groups_scatter.cu launches and `warm`
// compiles.
inline void group_scatter_kernel_name(bool finish, gr_dtype in, gr_dtype out, gr_op op, char *buf, size_t size) {
    char in_type[64], out_type[64];
    dtype_type_name(in, in_type, sizeof in_type);
    dtype_type_name(out, out_type, sizeof out_type);
    std::snprintf(buf, size, "gr::group_%s_kernel<%s, %s, (gr_op)%d>", finish ? "finish" : "scatter", in_type,
                  out_type, int(op));
}
#endif

// A 64-bit word of shared memory as two 32-bit halves: the low half's add returns what it held, which tells
// whether the add carried into the high half.  Any order of adds leaves the same 64-bit sum (modulo 2^64).
__device__ __forceinline__ void group_shared_add(unsigned *lo, int *hi, int64_t v) {
    const unsigned low = unsigned(uint64_t(v));
    const unsigned before = atomicAdd(lo, low);
    const int carry = unsigned(before + low) < before ? 1 : 0;
    const int high = int(v >> 32) + carry;
    if (high) atomicAdd(hi, high);
}

// What one element does to its group's words, for any way of combining them (`words`: add(word, v) an integer
// add, max(k) an unsigned max of word 0, or_flags(f)): the kernels' atomics, or the host check's plain arithmetic
// (tests/c/group_scatter_check.cu), so that both run this one rule.
template <class In, gr_op kOp, class Words>
__host__ __device__ __forceinline__ void group_element(In x, Words &&words) {
    constexpr bool kCounts = kOp == GR_OP_MEAN || kOp == GR_OP_NANMEAN;
    if constexpr (group_extreme<kOp>) {
        if constexpr (group_inexact<In>) {
            using Acc = typename ExactInput<In>::Acc;
            if (Acc(x) != Acc(x)) {  // NaN: max and min give NaN, the nan forms skip it (a group of NaNs is NaN)
                words.or_flags(kExactNaN);
                return;
            }
        }
        words.max(GroupExtreme<In, kOp>::key(x));
        return;
    }
    auto add = [&](int64_t word, int64_t v) { words.add(word, v); };
    if constexpr (group_inexact<In>) {
        using Acc = typename ExactInput<In>::Acc;
        const ExactParts<Acc> p = exact_parts(Acc(x));
        if (!p.finite) {  // NaN or an infinity: the flags; the nan forms skip a NaN
            if ((kOp == GR_OP_NANSUM || kOp == GR_OP_NANMEAN) && p.nan) return;
            words.or_flags(exact_flag(p));
        } else if (p.m) {
            GroupScatter<In>::add(p, add);
        }
    } else {
        GroupScatter<In>::add(x, add);
    }
    if constexpr (kCounts) add(GroupWords<In, kOp>::kCount, 1);
}

// The kernels' words of one accumulator: shared memory's halves or global memory's words, the flags always in
// global memory (rare); an extreme's key read first, the atomic only where it grows (rarely, after a few elements).
template <class In, gr_op kOp>
struct GroupDeviceWords {
    int64_t base, *acc;
    unsigned *lo;
    int *hi;
    bool shared;
    __device__ __forceinline__ void add(int64_t word, int64_t v) const {
        if (shared) group_shared_add(lo + base + word, hi + base + word, v);
        else atomicAdd(reinterpret_cast<unsigned long long *>(acc + base + word), (unsigned long long)v);
    }
    __device__ __forceinline__ void max(unsigned long long k) const {
        unsigned long long *word = shared ? reinterpret_cast<unsigned long long *>(lo) + base
                                          : reinterpret_cast<unsigned long long *>(acc + base);
        if (k > *(volatile unsigned long long *)word) atomicMax(word, k);
    }
    __device__ __forceinline__ void or_flags(unsigned f) const {
        atomicOr(reinterpret_cast<unsigned long long *>(acc + base + GroupWords<In, kOp>::kFlags),
                 (unsigned long long)f);
    }
};

template <class In, gr_op kOp>
__device__ __forceinline__ void group_add(In x, int64_t base, int64_t *acc, unsigned *lo, int *hi, bool shared) {
    group_element<In, kOp>(x, GroupDeviceWords<In, kOp>{base, acc, lo, hi, shared});
}

// One accumulator's words as its result: a floating sum rounded once (a mean divided by its count first), an
// integer sum as it is, an extreme's key as its element (NaN, or the identity, where the flags or no key say so).
template <class In, class Out, gr_op kOp>
__host__ __device__ __forceinline__ Out group_result(const int64_t *words) {
    using W = GroupWords<In, kOp>;
    if constexpr (group_extreme<kOp>) {
        const uint64_t k = uint64_t(words[0]);
        constexpr bool kMin = GroupExtreme<In, kOp>::kMin;
        if constexpr (group_inexact<In>) {  // max's NaN where it saw one; a nan form's where it saw no number
            // (a group of NaNs only, or none: the segmented nanmax's NaN for an empty range)
            const bool nan = kOp == GR_OP_MAX || kOp == GR_OP_MIN ? words[W::kFlags] != 0 : k == 0;
            const uint64_t special = nan ? 0x7ff8000000000000ULL : kMin ? 0x7ff0000000000000ULL : 0xfff0000000000000ULL;
            double d;
            memcpy(&d, &special, sizeof d);
            return nan || k == 0 ? Out(d) : GroupExtreme<In, kOp>::value(k);
        } else if (k == 0) {  // no element (or the identity itself): the lowest value for max, highest for min
            return kMin ? limits<In>::max() : limits<In>::lowest();
        } else {
            return GroupExtreme<In, kOp>::value(k);
        }
    } else if constexpr (group_inexact<In>) {
        using Acc = typename ExactInput<In>::Acc;
        ExactDigits<Acc> d;
        if constexpr (!is_same<Acc, double>::value) {
            d.clear();
            for (int j = 0; j < GroupScatter<In>::kWords; j++) {
                const int64_t v = words[j];
                if (v) d.add_scaled(uint64_t(v < 0 ? -v : v), 0, 8 * j, v < 0);
            }
        } else {
            for (int j = 0; j < GroupScatter<In>::kWords; j++) d.digit[j] = words[j];
        }
        d.flags = unsigned(words[W::kFlags]);
        Out out;
        exact_write<In, kOp>(d, uint64_t(words[W::kCount]), false, &out);
        return out;
    } else {
        return Out(words[0]);
    }
}

// An id out of [0, groups) into the caller's two notes (gr_ranges.id_notes, zero before):
// the smallest below 0, the largest at or above `groups` as id - (groups - 1).  None: the caller checked.
__device__ __forceinline__ void note_bad_id(long long *bad_ids, int64_t id, int64_t groups) {
    if (!bad_ids) return;
    if (id < 0) atomicMin(bad_ids, (long long)id);
    else atomicMax(bad_ids + 1, (long long)(id - (groups - 1)));
}

// Every element of the layout into its group's accumulator, kGroupLoads a thread in flight.  Shared: the block's
// accumulators start at zero in shared memory and end added to global memory's (zeroed by the host first).
template <class In, class Out, gr_op kOp>
__global__ void __launch_bounds__(kGroupBlock) group_scatter_kernel(const In *in, const int64_t *ids, GroupLayout g,
                                                                    int64_t *acc, long long *bad_ids) {
    using W = GroupWords<In, kOp>;
    extern __shared__ unsigned group_smem[];
    const int64_t words = g.shared ? g.c0 * g.c1 * g.groups * W::kStride : 0;
    unsigned *lo = group_smem;
    int *hi = reinterpret_cast<int *>(group_smem + words);
    for (int64_t i = threadIdx.x; i < 2 * words; i += kGroupBlock) group_smem[i] = 0;
    if (g.shared) __syncthreads();
    constexpr int64_t kTile = int64_t(kGroupBlock) * kGroupLoads;
    for (int64_t tile = int64_t(blockIdx.x) * kTile; tile < g.total; tile += int64_t(gridDim.x) * kTile) {
        In x[kGroupLoads];
        int64_t base[kGroupLoads];
        const int64_t first = tile + int64_t(threadIdx.x) * kGroupLoads;
        if (g.packed && first + kGroupLoads <= g.total) {  // a contiguous row: this thread's run in two loads
            const GroupPack<In> xs = *reinterpret_cast<const GroupPack<In> *>(in + first);
            const GroupPack<int64_t> is = *reinterpret_cast<const GroupPack<int64_t> *>(ids + first);
#pragma unroll
            for (int j = 0; j < kGroupLoads; j++) {
                const bool ok = uint64_t(is.v[j]) < uint64_t(g.groups);  // never a stray write
                if (!ok) note_bad_id(bad_ids, is.v[j], g.groups);
                base[j] = ok ? is.v[j] * W::kStride : -1;
                x[j] = xs.v[j];
            }
#pragma unroll
            for (int j = 0; j < kGroupLoads; j++)
                if (base[j] >= 0) group_add<In, kOp>(x[j], base[j], acc, lo, hi, g.shared);
            continue;
        }
#pragma unroll
        for (int j = 0; j < kGroupLoads; j++) {
            const int64_t e = g.packed ? first + j : tile + j * kGroupBlock + threadIdx.x;
            base[j] = -1;
            if (e >= g.total) continue;
            int64_t i0, i1, r;
            if (g.columns) {
                const int64_t t = int64_t(g.by_c1.quotient(uint64_t(e)));
                i1 = e - t * g.c1;
                i0 = int64_t(g.by_r.quotient(uint64_t(t)));
                r = t - i0 * g.R;
            } else {
                const int64_t item = int64_t(g.by_r.quotient(uint64_t(e)));
                r = e - item * g.R;
                i0 = int64_t(g.by_c1.quotient(uint64_t(item)));
                i1 = item - i0 * g.c1;
            }
            const int64_t id = __ldg(ids + r);
            if (uint64_t(id) >= uint64_t(g.groups)) {  // never a stray write
                note_bad_id(bad_ids, id, g.groups);
                continue;
            }
            x[j] = in[i0 * g.is0 + i1 * g.is1 + r * g.ir];
            base[j] = ((i0 * g.c1 + i1) * g.groups + id) * W::kStride;
        }
#pragma unroll
        for (int j = 0; j < kGroupLoads; j++)
            if (base[j] >= 0) group_add<In, kOp>(x[j], base[j], acc, lo, hi, g.shared);
    }
    if (!g.shared) return;
    __syncthreads();
    for (int64_t i = threadIdx.x; i < words; i += kGroupBlock) {
        if constexpr (group_extreme<kOp>) {  // the block's keys, whole 64-bit words of the same memory
            const unsigned long long k = reinterpret_cast<const unsigned long long *>(group_smem)[i];
            if (k) atomicMax(reinterpret_cast<unsigned long long *>(acc + i), k);
        } else {
            const int64_t v = int64_t((uint64_t(unsigned(hi[i])) << 32) | lo[i]);
            if (v) atomicAdd(reinterpret_cast<unsigned long long *>(acc + i), (unsigned long long)v);
        }
    }
}

// Each accumulator's words into its result: a floating sum rounded once (a mean divided by its count first), an
// integer sum as it is.
template <class In, class Out, gr_op kOp>
__global__ void __launch_bounds__(kGroupBlock) group_finish_kernel(const int64_t *acc, GroupLayout g, Out *out) {
    using W = GroupWords<In, kOp>;
    const int64_t count = g.c0 * g.c1 * g.groups;
    const int64_t stride = int64_t(gridDim.x) * kGroupBlock;
    for (int64_t a = int64_t(blockIdx.x) * kGroupBlock + threadIdx.x; a < count; a += stride) {
        const int64_t item = a / g.groups, id = a - item * g.groups, i0 = item / g.c1, i1 = item - i0 * g.c1;
        out[i0 * g.os0 + i1 * g.os1 + id * g.ok] = group_result<In, Out, kOp>(acc + a * W::kStride);
    }
}

}  // namespace gr
