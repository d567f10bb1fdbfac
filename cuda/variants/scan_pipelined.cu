// scan_pipelined.cu -- variant `pipelined`: the run-to-run deterministic single-pass scan on the warp-specialised
// tile kernel of pipeline_tiles.cuh (bulk copies into a ring of shared-memory stages, tiles finished a few tiles
// after they are reduced), with prefixes that never wait on another tile's prefix.
//
// What it fixes in `lookahead` (lookahead_prefix.cuh): there the window prefixes form a chain, P(w+1) published
// by window w's last tile once it has P(w).  Tiles that finish later than they are reduced all finish close
// together, and the chain then had to pass two windows per round of tiles: 665-930 us at 2^28 in float32 on the
// pipelined kernel, where a non-deterministic look-back took 570.  Here every tile needs the aggregates only,
// which every tile publishes as soon as it is reduced:
//   * tiles are grouped in windows of 64; S(u), window u's sum, and E(j), the sum of a window's first j tiles,
//     are folded in one fixed shape (lane i folds tiles 2i and 2i+1, then a warp scan of the lanes);
//   * P(w) = S(0) op S(1) op ... op S(w-1), folded left to right;
//   * tile 64w+j's exclusive prefix is P(w) op E(j) (E(j) alone in window 0).
// Each block keeps the last P it computed (its tiles come in increasing order, so it only ever folds forward,
// about two windows per tile at one block per SM), loads the aggregates of up to kFoldWindows windows and of its
// own window's first j tiles at once (one round trip), and publishes every P it computes; a block that falls
// far behind starts from the nearest published P instead.  P(w) is the same left fold whoever computes it, so
// every prefix is bitwise the same on every run.
//
// Where the bulk copies cannot run (a GPU before Hopper, too little shared memory, or an output whose 16-byte
// alignment differs from the input's), the variant runs `lookahead` instead: deterministic too.
#include <atomic>
#include "variants/lookahead_prefix.cuh"
#include "variants/pipeline_tiles.cuh"

namespace gr {
namespace {

// Each lane waits for the words idx[k] it wants (all loads in flight at once) and gets their values, `fill`
// for the others.
template <int K, class Acc>
__device__ __forceinline__ void wait_words(const TileStatus<Acc> &s, const int64_t (&idx)[K], const bool (&want)[K],
                                           Acc fill, Acc (&v)[K]) {
    unsigned st[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        st[k] = want[k] ? unsigned(kEmpty) : unsigned(kAggregate);
        v[k] = fill;
    }
    for (;;) {
        bool pending = false;
#pragma unroll
        for (int k = 0; k < K; ++k)
            if (st[k] == kEmpty) st[k] = s.peek(idx[k], &v[k]);
#pragma unroll
        for (int k = 0; k < K; ++k) pending |= st[k] == kEmpty;
        if (!__any_sync(kFullMask, pending)) break;
    }
}

struct WindowFoldPrefix {
    static constexpr int kWindowLanes = 2;  // tiles per lane of a window
    static constexpr int kWindow = kWarp * kWindowLanes;
    static constexpr int64_t kWindowTiles = kWindow;
    static constexpr int kFoldWindows = 3;  // windows folded per round trip

    template <class Acc>
    struct Cache {
        int64_t window = 0;  // P(window) is `prefix`; P(0) is the empty fold
        Acc prefix;
    };

    template <class Op, class Acc, class Status>
    __device__ static void publish(const Status &tiles, int64_t tile, Acc aggregate) {
        tiles.publish(tile, kAggregate, aggregate);
    }

    // The fixed shape: lane i holds the fold of its two tiles; the fold of the lanes in order, in every lane.
    template <class Op, class Acc>
    __device__ static Acc fold_window(Acc a, Acc b) {
        const unsigned lane = threadIdx.x % kWarp;
        return __shfl_sync(kFullMask, warp_inclusive_scan<Op>(Op()(a, b), lane), kWarp - 1);
    }

    // Run by the 32 lanes of one warp for tile `tile` > 0 of a block whose earlier tiles were smaller; returns
    // the tile's exclusive prefix in every lane.
    template <class Op, class Acc, class Status>
    __device__ static Acc exclusive(const Status &tiles, const Status &windows, int64_t tile, Cache<Acc> &cache) {
        const int lane = threadIdx.x % kWarp;
        const Acc neutral = scan_neutral<Op, Acc>();
        const int64_t w = tile / kWindow;
        const int j = int(tile % kWindow);
        if (cache.window == 0) cache.prefix = neutral;  // neutral op S(0) is S(0), bitwise
        if (w - cache.window > kFoldWindows) {  // far behind: the nearest P published within 32 windows
            const int64_t u = w - 1 - lane;     // windows[u] holds P(u + 1)
            Acc v = neutral;
            const unsigned st = u >= cache.window ? windows.peek(u, &v) : unsigned(kEmpty);
            const unsigned found = __ballot_sync(kFullMask, st == kPrefix);
            if (found) {
                const int f = __ffs(found) - 1;
                cache.prefix = __shfl_sync(kFullMask, v, f);
                cache.window = w - f;
            }
        }
        for (;;) {
            const int64_t fold = w - cache.window < kFoldWindows ? w - cache.window : kFoldWindows;
            const bool last = w - cache.window <= kFoldWindows;  // this round reaches window w: E(j) too
            constexpr int K = kWindowLanes * (kFoldWindows + 1);
            int64_t idx[K];
            bool want[K];
#pragma unroll
            for (int q = 0; q <= kFoldWindows; ++q)
#pragma unroll
                for (int k = 0; k < kWindowLanes; ++k) {
                    const int slot = lane * kWindowLanes + k;
                    const int64_t window = q < kFoldWindows ? cache.window + q : w;
                    idx[q * kWindowLanes + k] = window * kWindow + slot;
                    want[q * kWindowLanes + k] = q < kFoldWindows ? q < fold : last && slot < j;
                }
            Acc v[K];
            wait_words(tiles, idx, want, neutral, v);
#pragma unroll
            for (int q = 0; q < kFoldWindows; ++q)
                if (q < fold)
                    cache.prefix = Op()(cache.prefix, fold_window<Op>(v[q * kWindowLanes], v[q * kWindowLanes + 1]));
            cache.window += fold;
            if (fold > 0 && lane == 0) windows.publish(cache.window - 1, kPrefix, cache.prefix);
            if (last) {
                const Acc e = fold_window<Op>(v[kFoldWindows * kWindowLanes], v[kFoldWindows * kWindowLanes + 1]);
                if (w == 0) return e;
                return j == 0 ? cache.prefix : Op()(cache.prefix, e);
            }
        }
    }
};
static_assert(WindowFoldPrefix::kWindowLanes == 2 && WindowFoldPrefix::kFoldWindows >= 1,
              "fold_window folds two tiles per lane");

template <class Prefix>
struct Pipelined {
    // Whether the kernel for (In, Out, Op) can run on the current device: Hopper or newer with the shared memory
    // it asks for (set once per device), and code compiled for sm_90 or newer (a build for an older architecture
    // runs on Hopper through its PTX, where the kernel is a stub).  Anything else runs `lookahead`.
    template <class In, class Out, class Op>
    static bool device_ready() {
        using Acc = typename accumulator<Out>::type;
        const auto kernel = pipelined_scan_kernel<PipelineShape<In, Out>, Prefix, In, Out, Acc, Op>;
        constexpr int kDevices = 64;
        static std::atomic<signed char> state[kDevices];  // 0 unknown, 1 ready, -1 not
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kDevices) {
            (void)cudaGetLastError();
            return false;
        }
        const signed char known = state[dev].load(std::memory_order_acquire);
        if (known) return known > 0;
        int major = 0, optin = 0;
        bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) == cudaSuccess &&
                  major >= 9 && size_t(optin) >= PipelineShape<In, Out>::kSharedBytes + 1024;
        cudaFuncAttributes code;
        ok = ok && cudaFuncGetAttributes(&code, kernel) == cudaSuccess && code.ptxVersion >= 90;
        ok = ok && cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        int(PipelineShape<In, Out>::kSharedBytes)) == cudaSuccess;
        if (!ok) (void)cudaGetLastError();  // a refused attribute is an answer, not an error of this call
        state[dev].store(ok ? 1 : -1, std::memory_order_release);
        return ok;
    }

    template <class In, class Out, class Op>
    static cudaError_t workspace(int64_t n, int sm_count, size_t *bytes) {
        using Acc = typename accumulator<Out>::type;
        Scratch s(nullptr);
        LookbackPlan<Prefix, TileStatus<Acc>> p(s, n, kMaxTileShift<In>, PipelineShape<In, Out>::kTile);
        size_t fallback = 0;
        GR_CUDA_TRY((Lookback<LookaheadPrefix>::template workspace<In, Out, Op>(n, sm_count, &fallback)));
        *bytes = s.used > fallback ? s.used : fallback;
        return cudaSuccess;
    }

    template <class In, class Out, class Op>
    static cudaError_t run(const In *in, Out *out, int64_t n, bool exclusive, const Ctx &c) {
        using Acc = typename accumulator<Out>::type;
        using Sh = PipelineShape<In, Out>;
        const int64_t shift = tile_shift(in);
        // a full tile's result must start on a 16-byte boundary too, for its bulk store
        const bool aligned = (reinterpret_cast<uintptr_t>(out) - uintptr_t(shift) * sizeof(Out)) % 16 == 0;
        if (!aligned || !device_ready<In, Out, Op>())
            return Lookback<LookaheadPrefix>::template run<In, Out, Op>(in, out, n, exclusive, c);
        Scratch s(c.scratch);
        const LookbackPlan<Prefix, TileStatus<Acc>> p(s, n, shift, Sh::kTile);
        if (s.used > c.scratch_bytes) return cudaErrorInvalidValue;
        GR_CUDA_TRY(check_grid(p.tiles));
        GR_CUDA_TRY(p.prepare(c.stream));
        const int64_t blocks = p.tiles < c.sm_count ? p.tiles : c.sm_count;  // persistent: one block per SM
        pipelined_scan_kernel<Sh, Prefix, In, Out, Acc, Op>
            <<<unsigned(blocks), Sh::kThreads, Sh::kSharedBytes, c.stream>>>(in, out, n, shift, exclusive, p.tiles,
                                                                          p.status, p.window_status, c.flags);
        return cudaGetLastError();
    }
};

}  // namespace
}  // namespace gr

GR_SCAN_VARIANT(pipelined, gr::Pipelined<gr::WindowFoldPrefix>)
