// gpu_to_gpu_reduce.cu -- CCCL's "gpu_to_gpu" deterministic reduction (cub::DeviceReduce::Sum with the execution
// environment cuda::execution::require(cuda::execution::determinism::gpu_to_gpu), CCCL >= 3.1) as a small C
// library, the peer benchmarks/bench_exact.py times the variant "exact" against (issue 41).  CUDA 13.0's own CCCL
// (3.0) lacks the environment API: compile against a newer CCCL's headers, such as the cuda-cccl wheel's
// (cuda/cccl/headers/include).  Not part of the build; on the GPU machine:
//   nvcc -std=c++17 -O3 -arch=sm_90 -shared -Xcompiler -fPIC -I <cccl>/include -o /tmp/gpu_to_gpu_reduce.so \
//        benchmarks/gpu_to_gpu_reduce.cu
//   python benchmarks/bench_exact.py --gpu-to-gpu /tmp/gpu_to_gpu_reduce.so
#include <cub/device/device_reduce.cuh>
#include <cuda/execution.determinism.h>
#include <cuda/stream_ref>

namespace {
template <class T>
int sum(const T *in, T *out, long long n, void *stream) {
    const auto env = cuda::std::execution::env{cuda::execution::require(cuda::execution::determinism::gpu_to_gpu),
                                               cuda::stream_ref{static_cast<cudaStream_t>(stream)}};
    return static_cast<int>(cub::DeviceReduce::Sum(in, out, n, env));
}
}  // namespace

// The sum of in[0, n) into *out (device memory) on `stream`, gpu_to_gpu deterministic; a cudaError_t.
extern "C" int gpu_to_gpu_sum_float32(const float *in, float *out, long long n, void *stream) {
    return sum(in, out, n, stream);
}
extern "C" int gpu_to_gpu_sum_float64(const double *in, double *out, long long n, void *stream) {
    return sum(in, out, n, stream);
}
