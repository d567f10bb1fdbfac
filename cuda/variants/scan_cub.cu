// scan_cub.cu -- variant `cub`: cub::DeviceScan from the CUDA Toolkit, the baseline every scan is measured against.
//
// Same operators (NaN-propagating min/max, wrapping integer arithmetic) and the same accumulator as every other
// variant, so the comparison is like for like.  CUB deduces its accumulator from the operator's result type:
// a call operator over Acc (not a template) makes it Acc, so int32 cumsum accumulates in int64 and cannot
// overflow at 2^31.  The inclusive scan takes no initial value (the first output is in[0] itself, as NumPy's);
// the exclusive one starts from the operator's identity.
// Not flagged deterministic: CUB documents that its scans (decoupled look-back) are not run-to-run deterministic
// for pseudo-associative operators such as floating-point addition (cub/device/device_scan.cuh).
#include <cub/device/device_scan.cuh>
#include "variants/scan_entry.cuh"

namespace gr {
namespace {

template <class Op, class Acc>
struct AccScanOp {
    __host__ __device__ __forceinline__ Acc operator()(const Acc &a, const Acc &b) const { return Op()(a, b); }
};

// A floating sum is handed to CUB as cuda::std::plus, the operator its tuning policies recognise, so the
// baseline runs at its best (same arithmetic as gr::Sum for floats).  Integer sums keep gr::Sum's wrapping
// arithmetic (plus on signed integers would overflow in C++ terms).
template <class Op, class Acc>
using CubScanOp = cuda::std::conditional_t<cuda::std::is_same<Op, Sum>::value && cuda::std::is_floating_point<Acc>::value,
                                           cuda::std::plus<Acc>, AccScanOp<Op, Acc>>;

template <class In, class Out, class Op>
cudaError_t cub_scan(void *temp, size_t &bytes, const In *in, Out *out, int64_t n, bool exclusive, cudaStream_t s) {
    using Acc = typename accumulator<Out>::type;
    if (exclusive)
        return cub::DeviceScan::ExclusiveScan(temp, bytes, in, out, CubScanOp<Op, Acc>{}, Op::template identity<Acc>(), n,
                                              s);
    return cub::DeviceScan::InclusiveScan(temp, bytes, in, out, CubScanOp<Op, Acc>{}, n, s);
}

struct Cub {
    template <class In, class Out, class Op>
    static cudaError_t workspace(int64_t n, int, size_t *bytes) {
        // The larger of the two requests: the workspace size cannot depend on `exclusive` (not an argument here).
        size_t inclusive = 0, exclusive = 0;
        cudaError_t e = cub_scan<In, Out, Op>(nullptr, inclusive, static_cast<const In *>(nullptr),
                                              static_cast<Out *>(nullptr), n, false, nullptr);
        if (e == cudaSuccess)
            e = cub_scan<In, Out, Op>(nullptr, exclusive, static_cast<const In *>(nullptr), static_cast<Out *>(nullptr),
                                      n, true, nullptr);
        *bytes = inclusive > exclusive ? inclusive : exclusive;
        return e;
    }
    template <class In, class Out, class Op>
    static cudaError_t run(const In *in, Out *out, int64_t n, bool exclusive, const Ctx &c) {
        size_t bytes = c.scratch_bytes;
        return cub_scan<In, Out, Op>(c.scratch, bytes, in, out, n, exclusive, c.stream);
    }
};

}  // namespace
}  // namespace gr

GR_SCAN_VARIANT(cub, gr::Cub)
