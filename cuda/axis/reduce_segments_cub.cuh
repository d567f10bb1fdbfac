// reduce_segments_cub.cuh -- variant `cub` of the axis reductions, the host half: CUB's segmented reduction
// (axis/reduce_segments_cub_kernels.cuh) launched as cub::DeviceSegmentedReduce::Reduce launches it -- a block of
// the policy's threads per segment, at most 2^31 - 1 segments a launch -- into a value per segment in the
// workspace, then a small kernel finishes them into out.  The baseline the axis kernels (segments.cuh) are
// measured against.  Its kernels come from a kernel set, as gpureduce's do: the hot set's compiled here
// (AotCubSegKernels), the others by NVRTC on first use (JitCubSegKernels), CUB's own templates either way.
#pragma once
#include <cstdio>
#include "axis/kernel_source.cuh"
#include "axis/reduce_segments.cuh"  // seg_problem; no axis kernel is instantiated here
#include "axis/reduce_segments_cub_kernels.cuh"

namespace gr {

enum class CubSegKernel { SEGMENTED_REDUCE, FINISH, COUNT };

template <class Red>
using FinishSignature = void (*)(SegProblem, const typename Red::V *, typename Red::V);

// The arguments are what cub_segments_run passes by address for CubSegments::Signature's parameters.
template <class Red, class In>
constexpr bool kLaunchedUntyped = sizeof(VirtualInput<Red, In>) == sizeof(VirtualLayout) &&
                                  cuda::std::is_empty<CombineOp<Red>>::value;

// The kernels compiled here, for a hot (Reducer, input type): their addresses (instantiating them).
template <class Red, class In>
struct AotCubSegKernels {
    gr_status get(CubSegKernel k, const void **kernel, int *) const {
        using C = CubSegments<Red, In>;
        using V = typename Red::V;
        static_assert(kLaunchedUntyped<Red, In>, "cub_segments_run passes a VirtualLayout and one byte of CombineOp");
        switch (k) {
        case CubSegKernel::SEGMENTED_REDUCE:
            return aot_kernel<typename C::Signature>(
                kernel, &cub::detail::reduce::DeviceSegmentedReduceKernel<typename C::Policy, VirtualInput<Red, In>, V *,
                                                                          SegmentStarts, SegmentStarts, int64_t,
                                                                          CombineOp<Red>, V, V>);
        case CubSegKernel::FINISH:
            return aot_kernel<FinishSignature<Red>>(kernel, &finish_segments_kernel<typename Red::Partials>);
        case CubSegKernel::COUNT: break;
        }
        return GR_ERR_INVALID_ARGUMENT;
    }
};

// The kernels compiled on first use (abi/jit.h: GR_JIT_REDUCE_SEGMENTS_CUB) for a (Reducer, input type) outside
// the hot set: the same templates, named by the operator, the kernel types and the Reducer's number.
struct JitCubSegKernels : ReducerNames {
    using ReducerNames::ReducerNames;
    // The name expression of kernel `k` into buf.
    void name(CubSegKernel k, char *buf, size_t size) const {
        switch (k) {
        case CubSegKernel::SEGMENTED_REDUCE:
            std::snprintf(buf, size,
                          "cub::detail::reduce::DeviceSegmentedReduceKernel<gr::CubSegments<%s, %s>::Policy, "
                          "gr::VirtualInput<%s, %s>, %s::V *, gr::SegmentStarts, gr::SegmentStarts, int64_t, "
                          "gr::CombineOp<%s>, %s::V, %s::V>",
                          red, in, red, in, red, red, red, red);
            return;
        case CubSegKernel::FINISH: std::snprintf(buf, size, "gr::finish_segments_kernel<%s::Partials>", red); return;
        case CubSegKernel::COUNT: break;
        }
        if (size) buf[0] = '\0';
    }
    gr_status get(CubSegKernel k, const void **kernel, int *cuda_error) const {
        return jit_kernel<GR_JIT_REDUCE_SEGMENTS_CUB>(*this, k, kernel, cuda_error);
    }
};

// Bytes of workspace: CUB's value of each segment (its segmented reduction needs no temporary storage).
inline size_t cub_segments_workspace(const SegProblem &p, size_t value_size) {
    return align_up(size_t(p.c0 * p.c1) * value_size, GR_WORKSPACE_ALIGN);
}

// Runs p with the kernels of `kernels` (AotCubSegKernels or JitCubSegKernels).  Empty segments (R == 0) never
// come here: the router sends them to the axis kernels (segments_api.cu).  Written once for every (Reducer, input
// type): the arguments go by address (kernel_source.cuh), Red::V's as bytes: `identity` (CUB's initial value) and
// `init` (the state of initial=, for the finish), each value_size bytes.
template <class Kernels>
gr_status cub_segments_run(const SegProblem &p, size_t value_size, const void *identity, const void *init,
                           char *scratch, int sm_count, cudaStream_t stream, const Kernels &kernels, int *cuda_error) {
    const int64_t S = p.c0 * p.c1;
    if (S == 0) return GR_OK;
    const void *k = nullptr;
    gr_status st = kernels.get(CubSegKernel::SEGMENTED_REDUCE, &k, cuda_error);
    if (st != GR_OK) return st;
    // the block the policy chose for this architecture, which the kernel's __launch_bounds__ states
    cudaFuncAttributes attributes;
    cudaError_t e = cudaFuncGetAttributes(&attributes, k);
    if (e != cudaSuccess) return cuda_status(e, cuda_error);
    const VirtualLayout in{p, Divisor::of(uint64_t(p.R)), Divisor::of(uint64_t(p.c1)), 0};
    const char combine = 0;  // CombineOp<Red>, empty
    const int64_t per_launch = int64_t(INT32_MAX);  // grid.x's limit
    for (int64_t first = 0; first < S; first += per_launch) {
        const int64_t n = S - first < per_launch ? S - first : per_launch;
        // CubSegments::Signature: (VirtualInput, V *, SegmentStarts, SegmentStarts, CombineOp, V)
        void *values = scratch + size_t(first) * value_size;
        const SegmentStarts begins{p.R, first}, ends{p.R, first + 1};
        e = launch_by_address(k, dim3(unsigned(n)), dim3(unsigned(attributes.maxThreadsPerBlock)), stream,
                              {&in, &values, &begins, &ends, &combine, identity});
        if (e != cudaSuccess) return cuda_status(e, cuda_error);
    }
    st = kernels.get(CubSegKernel::FINISH, &k, cuda_error);
    if (st != GR_OK) return st;
    const int64_t blocks = ceil_div(S, 256), cap = int64_t(sm_count) * 32;
    const void *values = scratch;
    e = launch_by_address(k, dim3(unsigned(blocks < cap ? blocks : cap)), dim3(256), stream, {&p, &values, init});
    return cuda_status(e, cuda_error);
}

template <gr_op OP>
gr_status reduce_segments_cub_op(const gr_args *a, const gr_segments *s, size_t *ws_bytes, int *cuda_error) {
    return with_segment_types<true, GR_KIND_REDUCE, OP>(a->in_dtype, a->out_dtype, [&](auto in_tag, auto out_tag) -> gr_status {
        using In = tag_type<decltype(in_tag)>;
        using Out = tag_type<decltype(out_tag)>;
        // the Reducer of this call (vector_norm's depends on its order, logsumexp's on b, dot's on vdot)
        return visit_reducer<OP, In, Out>(s, [&](auto red, int alternative) -> gr_status {
            using Red = decltype(red);
            const SegProblem p = seg_problem<Red>(a, s);
            using V = typename Red::V;
            const size_t need = GR_WORKSPACE_ZEROED_BYTES + cub_segments_workspace(p, sizeof(V));
            if (ws_bytes) {
                *ws_bytes = need;
                return GR_OK;
            }
            const bool writes = p.c0 * p.c1 > 0;
            if (!segment_args_ok<In, typename Red::Result>(a, writes, writes && p.R > 0, need))
                return GR_ERR_INVALID_ARGUMENT;
            char *scratch = static_cast<char *>(a->workspace) + GR_WORKSPACE_ZEROED_BYTES;
            const cudaStream_t stream = static_cast<cudaStream_t>(a->stream);
            // the hot set's kernels are compiled here; the others on first use (their host half only is here)
            const V identity = Red::identity(), init = Red::from_initial(s->initial);
            if constexpr (is_hot_cub_kernel(GR_KIND_REDUCE, OP, dtype_of<In>::value, dtype_of<Out>::value)) {
                return cub_segments_run(p, sizeof(V), &identity, &init, scratch, a->sm_count, stream,
                                        AotCubSegKernels<Red, In>{}, cuda_error);
            } else {
                const JitCubSegKernels kernels(OP, dtype_of<In>::value, dtype_of<Out>::value, alternative);
                return cub_segments_run(p, sizeof(V), &identity, &init, scratch, a->sm_count, stream, kernels,
                                        cuda_error);
            }
        });
    });
}

}  // namespace gr

#define GR_REDUCE_SEGMENTS_CUB_OP(OP)                                                                        \
    extern "C" gr_status gr_reduce_segments_cub_##OP(const gr_args *a, const gr_segments *s, size_t *ws, int *err) { \
        return gr::reduce_segments_cub_op<GR_OP_##OP>(a, s, ws, err);                                        \
    }
