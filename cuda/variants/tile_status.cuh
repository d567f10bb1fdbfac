// tile_status.cuh -- the words through which the tiles of a single-pass scan publish their sums: a status
// (EMPTY, AGGREGATE: the tile's own total, PREFIX: the total of every element up to the tile's end) and a value,
// read and written as one word, so a reader never sees a flag without its value.
//
// CUDA/PTX memory model, device scope; every access is ld/st.relaxed.gpu, never through the non-coherent L1:
//   * 32-bit accumulators in a cleared array: status and value share one 64-bit word (64-bit relaxed atomics);
//   * otherwise one 128-bit word, {status, value}, with single 128-bit ld/st.relaxed.gpu.b128 (a flag with a
//     separate value needed release/acquire fences: 1.8x slower at 2^28).
// Two kinds of array:
//   * TileStatus: zeroed before each launch by a cudaMemsetAsync in the same stream (LookbackPlan::prepare);
//   * TaggedTileStatus: each word carries a 62-bit tag of its launch (launch_tag), so a word an earlier or
//     aborted launch left, or whatever else the workspace held, reads as EMPTY and nothing needs clearing.  The
//     memset costs 2.4 us of every call on the H200 (an empty kernel 2.9-3.1 us, 5.4-5.5 with an 8 KiB memset
//     before it): 18% of a 2^20 float64 cumsum.
// ptxas may split a 128-bit relaxed load whose status half is used only in part into two loads of one 32-byte
// sector, status first (it does for `pipelined`'s int64 reads: benchmarks/results/scans_h200.md); the PTX above
// is what the memory model is stated for, and forcing one 128-bit load there measured 1058 -> 1184 us at 2^28.
// Tagged words use all 64 status bits: every read of them stays one LD.E.128 (cuobjdump -sass, sm_90).
#pragma once
#include <atomic>
#include <chrono>
#include <cuda/atomic>
#include "primitives/warp.cuh"
#include "variants/driver.cuh"

namespace gr {

// A tag for one launch's status words, its two low bits clear for the status: splitmix64 of a count of launches
// that every variant file shares (an inline function's static is one object in the program), started from the
// clock and an address so that another process's words (in memory it freed) are not tagged alike.  splitmix64
// is a bijection, so two launches share a tag with probability 2^-62 (the two bits dropped); never 0, what
// zeroed memory holds.
inline unsigned long long launch_tag() {
    static std::atomic<unsigned long long> launches{
        static_cast<unsigned long long>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        reinterpret_cast<uintptr_t>(&launches)};
    for (;;) {
        unsigned long long z = launches.fetch_add(1, std::memory_order_relaxed) + 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z = (z ^ (z >> 31)) & ~3ull;
        if (z) return z;
    }
}

namespace {

enum : unsigned { kEmpty = 0, kAggregate = 1, kPrefix = 2 };

using Word = unsigned long long;
using DeviceWord = cuda::atomic_ref<Word, cuda::thread_scope_device>;

template <class T>
__device__ __forceinline__ Word bits_of(T v) {
    static_assert(sizeof(T) <= sizeof(Word), "32- or 64-bit accumulators");
    if constexpr (sizeof(T) == 4) {
        unsigned b;
        memcpy(&b, &v, 4);
        return b;
    } else {
        Word b;
        memcpy(&b, &v, 8);
        return b;
    }
}

template <class T>
__device__ __forceinline__ T value_of(Word b) {
    T v;
    if constexpr (sizeof(T) == 4) {
        const unsigned lo = unsigned(b);
        memcpy(&v, &lo, 4);
    } else {
        memcpy(&v, &b, 8);
    }
    return v;
}

// The status array that a launch finds cleared: laid out in the workspace by take(), all zero bytes EMPTY, and
// zeroed by LookbackPlan::prepare before every launch.  `pipelined` keeps it: at 2^28 its int64 cumsum took 1058 us
// with these words, 1284-1320 with TaggedTileStatus (memset kept), its int32 -> int64 799 against 922-937.
template <class Acc, bool kPacked = sizeof(Acc) == 4>
struct TileStatus;

template <class Acc>
struct TileStatus<Acc, true> {  // one 64-bit word per tile: status << 32 | value bits
    static constexpr bool kTagged = false;
    Word *word;
    static TileStatus take(Scratch &s, int64_t tiles) { return TileStatus{s.take<Word>(tiles)}; }
    __device__ void publish(int64_t tile, unsigned status, Acc v) const {
        DeviceWord(word[tile]).store(Word(status) << 32 | bits_of(v), cuda::memory_order_relaxed);
    }
    // One look at tile `tile`'s word, without waiting: its status (EMPTY if not yet published) and value.
    __device__ unsigned peek(int64_t tile, Acc *v) const {
        const Word w = DeviceWord(word[tile]).load(cuda::memory_order_relaxed);
        *v = value_of<Acc>(w);
        return unsigned(w >> 32);
    }
    // Warp-collective: every lane waits for tile `tile` (when `exists`) to have published, and gets its status
    // and value; lanes without a tile get (PREFIX, fill).
    __device__ void wait(int64_t tile, bool exists, Acc fill, unsigned *status, Acc *v) const {
        Word w = Word(kPrefix) << 32 | bits_of(fill);
        do {
            if (exists) w = DeviceWord(word[tile]).load(cuda::memory_order_relaxed);
        } while (__any_sync(kFullMask, unsigned(w >> 32) == kEmpty));
        *status = unsigned(w >> 32);
        *v = value_of<Acc>(w);
    }
    // Each lane waits for the first `count` (0..K) of the K tiles from `first` on, all of whose loads are in
    // flight at once, and gets their values (`fill` for the others).
    template <int K>
    __device__ void wait_each(int64_t first, int count, Acc fill, Acc (&v)[K]) const {
        Word w[K];
#pragma unroll
        for (int k = 0; k < K; ++k) w[k] = k < count ? Word(kEmpty) << 32 : Word(kAggregate) << 32 | bits_of(fill);
        for (;;) {
            bool pending = false;
#pragma unroll
            for (int k = 0; k < K; ++k)
                if (unsigned(w[k] >> 32) == kEmpty) w[k] = DeviceWord(word[first + k]).load(cuda::memory_order_relaxed);
#pragma unroll
            for (int k = 0; k < K; ++k) pending |= unsigned(w[k] >> 32) == kEmpty;
            if (!__any_sync(kFullMask, pending)) break;
        }
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] = value_of<Acc>(w[k]);
    }
};

// 128-bit relaxed atomics at device scope (PTX ISA 8.3's scalar .b128 type, sm_70 on): one access moves a
// whole {status, value} word, so a reader never sees a flag without its value.  (CUB's 16-byte status word
// uses a .v2.u64 vector access, which the memory model treats as two 64-bit accesses.)
struct alignas(16) WordPair {
    Word status;
    Word value;
};

__device__ __forceinline__ void store_pair_relaxed(WordPair *p, Word status, Word value) {
    asm volatile("{\n\t.reg .b128 w;\n\tmov.b128 w, {%1, %2};\n\tst.relaxed.gpu.b128 [%0], w;\n\t}"
                 :
                 : "l"(p), "l"(status), "l"(value)
                 : "memory");
}

__device__ __forceinline__ WordPair load_pair_relaxed(const WordPair *p) {
    WordPair w;
    asm volatile("{\n\t.reg .b128 w;\n\tld.relaxed.gpu.b128 w, [%2];\n\tmov.b128 {%0, %1}, w;\n\t}"
                 : "=l"(w.status), "=l"(w.value)
                 : "l"(p)
                 : "memory");
    return w;
}

template <class Acc>
struct TileStatus<Acc, false> {  // one 128-bit word per tile: {status, value bits}
    static constexpr bool kTagged = false;
    WordPair *word;
    static TileStatus take(Scratch &s, int64_t tiles) { return TileStatus{s.take<WordPair>(tiles)}; }
    __device__ void publish(int64_t tile, unsigned status, Acc v) const {
        store_pair_relaxed(word + tile, status, bits_of(v));
    }
    __device__ unsigned peek(int64_t tile, Acc *v) const {
        const WordPair w = load_pair_relaxed(word + tile);
        *v = value_of<Acc>(w.value);
        return unsigned(w.status);
    }
    __device__ void wait(int64_t tile, bool exists, Acc fill, unsigned *status, Acc *v) const {
        WordPair w{kPrefix, bits_of(fill)};
        do {
            if (exists) w = load_pair_relaxed(word + tile);
        } while (__any_sync(kFullMask, unsigned(w.status) == kEmpty));
        *status = unsigned(w.status);
        *v = value_of<Acc>(w.value);
    }
    template <int K>
    __device__ void wait_each(int64_t first, int count, Acc fill, Acc (&v)[K]) const {
        WordPair w[K];
#pragma unroll
        for (int k = 0; k < K; ++k) w[k] = k < count ? WordPair{kEmpty, 0} : WordPair{kAggregate, bits_of(fill)};
        for (;;) {
            bool pending = false;
#pragma unroll
            for (int k = 0; k < K; ++k)
                if (unsigned(w[k].status) == kEmpty) w[k] = load_pair_relaxed(word + first + k);
#pragma unroll
            for (int k = 0; k < K; ++k) pending |= unsigned(w[k].status) == kEmpty;
            if (!__any_sync(kFullMask, pending)) break;
        }
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] = value_of<Acc>(w[k].value);
    }
};

// The status array that needs no clearing: one 128-bit word per tile, {tag | status, value bits}, `tag` drawn
// for the launch when the array is laid out in a real workspace (take()).  A word that does not carry the tag
// reads as EMPTY.
template <class Acc>
struct TaggedTileStatus {
    static constexpr bool kTagged = true;
    WordPair *word;
    Word tag;
    static TaggedTileStatus take(Scratch &s, int64_t tiles) {
        return TaggedTileStatus{s.take<WordPair>(tiles), s.base ? launch_tag() : 0};
    }
    // Brings tile `tile`'s word into L2 ahead of its publish and of the polls on it: no memset put it there.
    __device__ void prefetch(int64_t tile) const { asm volatile("prefetch.global.L2 [%0];" ::"l"(word + tile)); }
    // AGGREGATE or PREFIX where this launch published the word, else EMPTY
    __device__ unsigned state_of(Word status) const {
        return status == (tag | kAggregate) ? unsigned(kAggregate)
               : status == (tag | kPrefix)  ? unsigned(kPrefix)
                                            : unsigned(kEmpty);
    }
    __device__ void publish(int64_t tile, unsigned status, Acc v) const {
        store_pair_relaxed(word + tile, tag | status, bits_of(v));
    }
    // One look at tile `tile`'s word, without waiting: its status (EMPTY if not yet published) and value.
    __device__ unsigned peek(int64_t tile, Acc *v) const {
        const WordPair w = load_pair_relaxed(word + tile);
        *v = value_of<Acc>(w.value);
        return state_of(w.status);
    }
    // Warp-collective: every lane waits for tile `tile` (when `exists`) to have published, and gets its status
    // and value; lanes without a tile get (PREFIX, fill).
    __device__ void wait(int64_t tile, bool exists, Acc fill, unsigned *status, Acc *v) const {
        unsigned st = kPrefix;
        Acc value = fill;
        do {
            if (exists) st = peek(tile, &value);
        } while (__any_sync(kFullMask, st == kEmpty));
        *status = st;
        *v = value;
    }
    // Each lane waits for the first `count` (0..K) of the K tiles from `first` on, all of whose loads are in
    // flight at once, and gets their values (`fill` for the others).
    template <int K>
    __device__ void wait_each(int64_t first, int count, Acc fill, Acc (&v)[K]) const {
        unsigned st[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            st[k] = k < count ? unsigned(kEmpty) : unsigned(kAggregate);
            v[k] = fill;
        }
        for (;;) {
            bool pending = false;
#pragma unroll
            for (int k = 0; k < K; ++k)
                if (st[k] == kEmpty) st[k] = peek(first + k, &v[k]);
#pragma unroll
            for (int k = 0; k < K; ++k) pending |= st[k] == kEmpty;
            if (!__any_sync(kFullMask, pending)) break;
        }
    }
};

}  // namespace
}  // namespace gr
