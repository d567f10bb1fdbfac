// reduce_segments_cub.cuh -- variant `cub` of the axis reductions: cub::DeviceSegmentedReduce from the CUDA
// Toolkit, the baseline the axis kernels (segments.cuh) are measured against.  CUB wants segments as
// offset ranges of one sequence, so the strided layout is presented as a virtual sequence: element i is
// position i % R of segment i / R, loaded through the same Reducer (mask, position, conversion) as the axis
// kernels; CUB writes one value per segment to the workspace and a small kernel finishes them into out.
#pragma once
#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include "axis/divisor.cuh"
#include "axis/reduce_segments.cuh"  // seg_problem; no axis kernel is instantiated here

namespace gr {

template <class Red, class In>
struct VirtualElement {  // flat index -> the Reducer's value of that element
    SegProblem p;
    Divisor by_R, by_c1;  // no 64-bit division in CUB's unrolled loads (divisor.cuh)
    __host__ __device__ typename Red::V operator()(int64_t i) const {
        const int64_t s = int64_t(by_R.quotient(uint64_t(i))), r = i - s * p.R;
        const int64_t i0 = int64_t(by_c1.quotient(uint64_t(s))), i1 = s - i0 * p.c1;
        return seg_load<Red, In>(p, i0 * p.is0 + i1 * p.is1, i0 * p.ms0 + i1 * p.ms1, r);
    }
};

struct SegmentStart {
    int64_t R;
    __host__ __device__ int64_t operator()(int64_t s) const { return s * R; }
};

template <class Red>
struct CombineOp {
    __host__ __device__ typename Red::V operator()(const typename Red::V &a, const typename Red::V &b) const {
        return Red::combine(a, b);
    }
};

template <class Red>
__global__ void finish_segments_kernel(SegProblem p, const typename Red::V *values, typename Red::V init) {
    const int64_t S = p.c0 * p.c1;
    for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s < S; s += int64_t(gridDim.x) * blockDim.x)
        seg_store<Red>(p, s, 0, 1, values[s], nullptr, init);
}

// Bytes of workspace (values + CUB's temporary storage), or the run when scratch != nullptr.
template <class Red, class In>
cudaError_t cub_segments(const SegProblem &p, const void *initial, unsigned *flags, char *scratch, size_t *bytes,
                         int sm_count, cudaStream_t stream) {
    using V = typename Red::V;
    const int64_t S = p.c0 * p.c1;
    if (S == 0) {
        *bytes = 0;
        return cudaSuccess;
    }
    // Empty segments (R == 0) never come here: the router sends them to the axis kernels (segments_api.cu).
    const VirtualElement<Red, In> element{p, Divisor::of(uint64_t(p.R)), Divisor::of(uint64_t(p.c1))};
    auto in = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), element);
    auto starts = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), SegmentStart{p.R});
    const size_t values_bytes = align_up(size_t(S) * sizeof(V), GR_WORKSPACE_ALIGN);
    size_t temp = 0;
    GR_CUDA_TRY(cub::DeviceSegmentedReduce::Reduce(nullptr, temp, in, static_cast<V *>(nullptr), S, starts, starts + 1,
                                                   CombineOp<Red>{}, Red::identity(), stream));
    if (!scratch) {
        *bytes = values_bytes + temp;
        return cudaSuccess;
    }
    V *values = reinterpret_cast<V *>(scratch);
    GR_CUDA_TRY(cub::DeviceSegmentedReduce::Reduce(scratch + values_bytes, temp, in, values, S, starts, starts + 1,
                                                   CombineOp<Red>{}, Red::identity(), stream));
    const int64_t blocks = ceil_div(S, 256), cap = int64_t(sm_count) * 32;
    finish_segments_kernel<typename Red::Partials><<<unsigned(blocks < cap ? blocks : cap), 256, 0, stream>>>(p, values,
                                                                                          Red::from_initial(initial));
    return cudaGetLastError();
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
            size_t scratch = 0;
            cudaError_t e = cub_segments<Red, In>(p, s->initial, nullptr, nullptr, &scratch, a->sm_count,
                                                  static_cast<cudaStream_t>(a->stream));
            if (e != cudaSuccess) return cuda_status(e, cuda_error);
            const size_t need = GR_WORKSPACE_ZEROED_BYTES + scratch;
            if (ws_bytes) {
                *ws_bytes = need;
                return GR_OK;
            }
            const bool writes = p.c0 * p.c1 > 0;
            if (!segment_args_ok<In, typename Red::Result>(a, writes, writes && p.R > 0, need))
                return GR_ERR_INVALID_ARGUMENT;
            size_t unused = 0;
            e = cub_segments<Red, In>(p, s->initial, static_cast<unsigned *>(a->workspace),
                                      static_cast<char *>(a->workspace) + GR_WORKSPACE_ZEROED_BYTES, &unused,
                                      a->sm_count, static_cast<cudaStream_t>(a->stream));
            return cuda_status(e, cuda_error);
        });
    });
}

}  // namespace gr

#define GR_REDUCE_SEGMENTS_CUB_OP(OP)                                                                        \
    extern "C" gr_status gr_reduce_segments_cub_##OP(const gr_args *a, const gr_segments *s, size_t *ws, int *err) { \
        return gr::reduce_segments_cub_op<GR_OP_##OP>(a, s, ws, err);                                        \
    }
