// reduce_cub.cu -- variant `cub`: cub::DeviceReduce::Reduce from the CUDA Toolkit, the baseline.
// Same operators (NaN-propagating min/max, wrapping integer arithmetic) and the same accumulator type
// as every other variant, so the comparison is like for like.
#include <cub/device/device_reduce.cuh>
#include "variants/entry.cuh"

namespace gr {
namespace {

// CUB deduces its accumulator from op(init, item): a non-template call operator over Acc makes that Acc.
template <class Op, class Acc>
struct AccOp {
    __host__ __device__ __forceinline__ Acc operator()(const Acc &a, const Acc &b) const { return Op()(a, b); }
};

struct Cub {
    template <class In, class Acc, class Op>
    static cudaError_t workspace(int64_t n, int, size_t *bytes) {
        *bytes = 0;
        return cub::DeviceReduce::Reduce(nullptr, *bytes, static_cast<const In *>(nullptr), static_cast<Acc *>(nullptr),
                                         n, AccOp<Op, Acc>{}, Op::template identity<Acc>());
    }
    template <class In, class Acc, class Op>
    static cudaError_t run(const In *in, Acc *out, int64_t n, const Ctx &c) {
        size_t bytes = c.scratch_bytes;
        return cub::DeviceReduce::Reduce(c.scratch, bytes, in, out, n, AccOp<Op, Acc>{}, Op::template identity<Acc>(),
                                         c.stream);
    }
};

}  // namespace
}  // namespace gr

GR_REDUCE_VARIANT(cub, gr::Cub)
