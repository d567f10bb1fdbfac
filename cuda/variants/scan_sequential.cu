// scan_sequential.cu -- variant `sequential` (seed 001 "serial scan"): one thread walks the array.
//
// The baseline, slow on purpose: O(n) work and no parallelism at all -- the definition every parallel scan must
// reproduce (exactly for integers, within rounding for floats).  Two concessions so that 2^24 elements still take
// well under a second: the thread loads a chunk of kChunk elements before scanning it (one memory latency per
// chunk instead of one per element) and asks L2 to prefetch a few chunks ahead.  Reading a whole chunk before
// writing any of it also keeps in == out (an in-place scan) correct.
#include "primitives/scan_block.cuh"
#include "variants/scan_entry.cuh"

namespace gr {
namespace {

constexpr int kChunk = 32;
constexpr int kPrefetchBytes = 8192;  // how far ahead of the current chunk L2 is asked to fetch

__device__ __forceinline__ void prefetch_l2(const void *p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

template <class In, class Out, class Acc, class Op>
__global__ void sequential_scan_kernel(const In *in, Out *out, int64_t n, bool exclusive) {
    constexpr int64_t kAhead = kPrefetchBytes / sizeof(In);
    Acc running = scan_neutral<Op, Acc>();
    int64_t i = 0;
    for (; i + kChunk <= n; i += kChunk) {
        if (i + kAhead < n) prefetch_l2(in + i + kAhead);
        Acc x[kChunk];
#pragma unroll
        for (int k = 0; k < kChunk; ++k) x[k] = static_cast<Acc>(in[i + k]);
#pragma unroll
        for (int k = 0; k < kChunk; ++k) {
            const Acc next = Op()(running, x[k]);
            out[i + k] = static_cast<Out>(exclusive ? running : next);
            running = next;
        }
    }
    for (; i < n; ++i) {
        const Acc next = Op()(running, static_cast<Acc>(in[i]));
        out[i] = static_cast<Out>(exclusive ? running : next);
        running = next;
    }
    // The running value started from the neutral element (-0.0 for a float sum); an exclusive scan's first
    // output is the identity.
    if (exclusive) out[0] = static_cast<Out>(Op::template identity<Acc>());
}

struct Sequential {
    template <class In, class Out, class Op>
    static cudaError_t workspace(int64_t, int, size_t *bytes) {
        *bytes = 0;
        return cudaSuccess;
    }
    template <class In, class Out, class Op>
    static cudaError_t run(const In *in, Out *out, int64_t n, bool exclusive, const Ctx &c) {
        using Acc = typename accumulator<Out>::type;
        sequential_scan_kernel<In, Out, Acc, Op><<<1, 1, 0, c.stream>>>(in, out, n, exclusive);
        return cudaGetLastError();
    }
};

}  // namespace
}  // namespace gr

GR_SCAN_VARIANT(sequential, gr::Sequential)
