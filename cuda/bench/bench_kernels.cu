// bench_kernels.cu -- the yardstick the benchmarks measure against: how fast can this GPU just read?
// A reduction cannot beat one pass of plain 16-byte loads over its input, so this kernel's bandwidth is
// the "100 %" of the tables (DESIGN.md section 6).  It does no arithmetic but an XOR, kept alive by a
// store that never happens in practice (the compiler cannot prove it never does).
#include "variants/entry.cuh"

namespace gr {
namespace {

constexpr int kBlock = 256;
constexpr int kUnroll = 4;
constexpr int kBlocksPerSm = 4;

__global__ void __launch_bounds__(kBlock) read_kernel(const uint4 *__restrict__ in, int64_t count, uint4 *sink) {
    const int64_t stride = int64_t(gridDim.x) * kBlock;
    uint4 acc = make_uint4(0, 0, 0, 0);
    int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x;
    for (; i + (kUnroll - 1) * stride < count; i += kUnroll * stride) {
        uint4 x[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) x[u] = in[i + u * stride];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            acc.x ^= x[u].x;
            acc.y ^= x[u].y;
            acc.z ^= x[u].z;
            acc.w ^= x[u].w;
        }
    }
    for (; i < count; i += stride) {
        const uint4 x = in[i];
        acc.x ^= x.x;
        acc.y ^= x.y;
        acc.z ^= x.z;
        acc.w ^= x.w;
    }
    if (acc.x == 0x9e3779b9u && acc.y == 0x7f4a7c15u) *sink = acc;
}

}  // namespace
}  // namespace gr

extern "C" gr_status gr_read_ceiling(const void *ptr, size_t bytes, void *sink, int sm_count, void *stream,
                                     int *cuda_error) {
    if (!ptr || !sink || reinterpret_cast<uintptr_t>(ptr) % 16) return GR_ERR_INVALID_ARGUMENT;
    const int64_t count = int64_t(bytes / 16);
    if (count == 0) return GR_OK;
    const int64_t want = gr::ceil_div(count, int64_t(gr::kBlock) * gr::kUnroll);
    const int64_t cap = int64_t(sm_count > 0 ? sm_count : 1) * gr::kBlocksPerSm;
    gr::read_kernel<<<unsigned(want < cap ? want : cap), gr::kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const uint4 *>(ptr), count, static_cast<uint4 *>(sink));
    return gr::cuda_status(cudaGetLastError(), cuda_error);
}
