// reduce_two_pass.cu -- variant `two_pass` (seed 003 section 4, "multi-level reduction").
//
// Exactly two launches whatever n is: level 1 runs a fixed grid (at most kMaxPartials blocks, each
// thread folding a grid-stride slice, then a shuffle block reduction) and writes one partial per block;
// level 2 is a single block of kMaxPartials threads that reduces those partials into the result.
// The fixed partial count is what bounds level 2 to one block.
#include "primitives/block.cuh"
#include "variants/entry.cuh"

namespace gr {
namespace {

constexpr int kMaxPartials = 1024;  // = level-2 block size

template <class Acc, class Op>
__global__ void __launch_bounds__(kMaxPartials) level2_kernel(const Acc *partials, Acc *out, int count) {
    __shared__ Acc warp_partials[kMaxPartials / kWarp];
    Acc v = threadIdx.x < count ? partials[threadIdx.x] : Op::template identity<Acc>();
    v = block_reduce_shfl<Op, kMaxPartials>(v, warp_partials);
    if (threadIdx.x == 0) *out = v;
}

int level1_blocks(int64_t n) {
    const int64_t want = ceil_div(n, kBlock);
    return int(want < kMaxPartials ? want : kMaxPartials);
}

struct TwoPass {
    template <class In, class Acc, class Op>
    static cudaError_t workspace(int64_t n, int, size_t *bytes) {
        Scratch s(nullptr);
        s.take<Acc>(level1_blocks(n));
        *bytes = s.used;
        return cudaSuccess;
    }
    template <class In, class Acc, class Op>
    static cudaError_t run(const In *in, Acc *out, int64_t n, const Ctx &c) {
        Scratch s(c.scratch);
        const int blocks = level1_blocks(n);
        Acc *partials = s.take<Acc>(blocks);
        grid_stride_partials_kernel<kBlock, In, Acc, Op><<<blocks, kBlock, 0, c.stream>>>(in, partials, n);
        GR_CUDA_TRY(cudaGetLastError());
        level2_kernel<Acc, Op><<<1, kMaxPartials, 0, c.stream>>>(partials, out, blocks);
        return cudaGetLastError();
    }
};

}  // namespace
}  // namespace gr

GR_REDUCE_VARIANT(two_pass, gr::TwoPass)
