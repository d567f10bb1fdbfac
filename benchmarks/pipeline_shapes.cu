// pipeline_shapes.cu -- the shape probe of variant `pipelined` (benchmarks/results/scans_h200.md): the library's
// kernel (cuda/variants/pipeline_tiles.cuh) with other items per thread, stages, lags and prefix leads (-1: the
// prefix in the first consumer warp; k >= 0: a prefix warp starting once the tile k after has landed), at 2^28
// elements, kernel time with a cold L2 against CUB and a device-to-device copy in the same process.  Not part of
// the build; on a Hopper machine:
//   nvcc -std=c++17 -O3 -arch=sm_90 -I cuda -I cuda/abi -o /tmp/pipeline_shapes benchmarks/pipeline_shapes.cu
//   /tmp/pipeline_shapes 28             (the runs of scans_h200.md)
//   /tmp/pipeline_shapes 28 ceilings    (what reading In and writing Out alone takes, per pair; for the widening
//                                        pairs also with every store coalesced)
//   /tmp/pipeline_shapes 28 library     (the library's shape of each pair)
//   /tmp/pipeline_shapes 28 widening    (int32 -> int64: the shapes that half the result stored in place allows)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cstring>
#include <cub/device/device_scan.cuh>
#include "variants/scan_entry.cuh"
#undef GR_SCAN_VARIANT
#define GR_SCAN_VARIANT(name, Policy)
#include "variants/scan_pipelined.cu"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)
using namespace gr;
static char *g_flush;
template <class F>
static float time_median(F f, int reps = 9) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<float> t;
    f(); CK(cudaDeviceSynchronize());
    for (int r = 0; r < reps; ++r) {
        CK(cudaMemsetAsync(g_flush, 1, size_t(512) << 20));
        CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms * 1000);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}
// The scan's traffic without the scan: every element read as In and written as Out, 16-byte loads and stores, four
// loads in flight per thread.  The copy ceiling of an (In, Out) pair: for int32 -> int64 a widening copy, whose
// mix of one byte read to two written may run slower than a copy's one to one.
template <class In, class Out>
__global__ void convert_copy(const In *in, Out *out, int64_t n) {
    constexpr int kIn = Vec16<In>::kLanes, kOut = Vec16<Out>::kLanes;
    const int64_t vecs = n / kIn, stride = int64_t(gridDim.x) * blockDim.x;
    for (int64_t v = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; v < vecs; v += 4 * stride) {
        Vec16<In> x[4];
#pragma unroll
        for (int u = 0; u < 4; ++u)
            if (v + u * stride < vecs) x[u] = reinterpret_cast<const Vec16<In> *>(in)[v + u * stride];
#pragma unroll
        for (int u = 0; u < 4; ++u)
            if (v + u * stride < vecs) {
                Vec16<Out> *o = reinterpret_cast<Vec16<Out> *>(out + (v + u * stride) * kIn);
#pragma unroll
                for (int k = 0; k < kIn / kOut; ++k) {
                    Vec16<Out> w;
#pragma unroll
                    for (int l = 0; l < kOut; ++l) w.lane[l] = static_cast<Out>(x[u].lane[k * kOut + l]);
                    o[k] = w;
                }
            }
    }
}

// The widening copy with every store coalesced (2 output vectors per input vector, e.g. int32 -> int64): a warp loads
// 32 consecutive input vectors, four per lane in flight, and writes its 64 output vectors as two stores of 32
// consecutive vectors each, a lane taking the half of the input vector it needs from its owner by shuffles.
// convert_copy above stores each lane's two output vectors side by side, so each store of a warp writes every
// other 16 bytes of a 1 KiB span (1450 us at 2^28 on the H200, slower than the scan).
template <class In, class Out>
__global__ void widening_copy(const In *in, Out *out, int64_t n) {
    static_assert(Vec16<In>::kLanes == 2 * Vec16<Out>::kLanes, "two output vectors per input vector");
    constexpr int kOut = Vec16<Out>::kLanes;
    const int lane = threadIdx.x % 32;
    const int64_t vecs = n / Vec16<In>::kLanes, warps = int64_t(gridDim.x) * blockDim.x / 32;
    const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    for (int64_t base = warp * 32; base < vecs; base += 4 * warps * 32) {  // 4 chunks of 32 vectors in flight
        Vec16<In> x[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int64_t v = base + u * warps * 32 + lane;
            if (v < vecs) x[u] = reinterpret_cast<const Vec16<In> *>(in)[v];
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int64_t chunk = base + u * warps * 32;
#pragma unroll
            for (int k = 0; k < 2; ++k) {  // output vectors chunk*2 + k*32 + lane, from input vector k*16 + lane/2
                const int src = k * 16 + lane / 2, half = lane % 2;
                unsigned w[4];
                memcpy(w, &x[u], 16);
#pragma unroll
                for (int i = 0; i < 4; ++i) w[i] = __shfl_sync(0xffffffffu, w[i], src);
                Vec16<In> got;
                memcpy(&got, w, 16);
                if (chunk + src < vecs) {
                    Vec16<Out> o;
#pragma unroll
                    for (int l = 0; l < kOut; ++l) o.lane[l] = static_cast<Out>(got.lane[half * kOut + l]);
                    reinterpret_cast<Vec16<Out> *>(out)[chunk * 2 + k * 32 + lane] = o;
                }
            }
        }
    }
}

template <class In, class Out>
struct Bench {
    using Acc = typename accumulator<Out>::type;
    int64_t n; In *in; Out *out, *ref; char *ws; int sms = 0;
    std::vector<Out> h_ref, h_out;
    std::vector<double> h_abs;  // running sum of |x|: the scale of a floating prefix's rounding
    Bench(const char *name, int64_t n_, int pattern = 0) : n(n_) {
        CK(cudaMalloc(&in, n * sizeof(In))); CK(cudaMalloc(&out, n * sizeof(Out))); CK(cudaMalloc(&ref, n * sizeof(Out)));
        CK(cudaMalloc(&ws, size_t(64) << 20)); CK(cudaMemset(ws, 0, size_t(64) << 20));
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
        std::vector<In> h(n); srand(1);
        // pattern 0: small values (/1000 for floats); 1: whole numbers; 2: random bits of every byte
        for (int64_t i = 0; i < n; ++i) {
            if (pattern == 0) h[i] = In((rand() % 2001) - 1000) / In(In(0.5) != 0 ? 1000 : 1);
            else if (pattern == 1) h[i] = In((rand() % 2001) - 1000);
            else {
                if (In(0.5) != 0) h[i] = In(double(rand()) / RAND_MAX * 2.0 - 1.0);
                else { uint64_t r = (uint64_t(rand()) << 33) ^ (uint64_t(rand()) << 11) ^ uint64_t(rand()); std::memcpy(&h[i], &r, sizeof(In)); }
            }
        }
        CK(cudaMemcpy(in, h.data(), n * sizeof(In), cudaMemcpyHostToDevice));
        size_t tb = 0; cub::DeviceScan::InclusiveSum(nullptr, tb, in, ref, n);
        void *tmp; CK(cudaMalloc(&tmp, tb));
        float t = time_median([&] { cub::DeviceScan::InclusiveSum(tmp, tb, in, ref, n); });
        float tc = time_median([&] { CK(cudaMemcpyAsync(out, in, n * sizeof(In), cudaMemcpyDeviceToDevice)); });
        float tw = time_median([&] { convert_copy<<<unsigned(sms) * 8, 256>>>(in, out, n); });
        float tv = 0;
        int64_t copy_bad = 0;
        if constexpr (Vec16<In>::kLanes == 2 * Vec16<Out>::kLanes) {
            tv = time_median([&] { widening_copy<<<unsigned(sms) * 8, 256>>>(in, out, n); });
            std::vector<Out> o(n);  // every element converted in place (n a multiple of the vectors)
            CK(cudaMemcpy(o.data(), out, n * sizeof(Out), cudaMemcpyDeviceToHost));
            for (int64_t i = 0; i < n; ++i) copy_bad += o[i] != static_cast<Out>(h[i]);
        }
        printf("\n== %s pattern %d n=%lld: cub %.1f us, memcpy in->out %.1f us, read In + write Out %.1f us"
               " (coalesced widening copy %.1f us, %lld wrong)\n", name, pattern, (long long)n, t, tc, tw, tv,
               (long long)copy_bad);
        h_ref.resize(n); h_out.resize(n);
        CK(cudaMemcpy(h_ref.data(), ref, n * sizeof(Out), cudaMemcpyDeviceToHost)); CK(cudaFree(tmp));
        h_abs.resize(n);
        double a = 0;
        for (int64_t i = 0; i < n; ++i) h_abs[i] = a += std::abs(double(h[i]));
    }
    template <int kI, int kS, int kL, int kP = -1>
    void run() { run_shape<PipelineShapeOf<In, Out, kI, kS, kL, kP>>(); }
    void run_library() { run_shape<PipelineShape<In, Out>>(); }  // the shape the library takes for the pair
    template <class Sh>
    void run_shape() {
        using P = WindowFoldPrefix;
        auto kern = pipelined_scan_kernel<Sh, P, In, Out, Acc, Sum>;
        CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Sh::kSharedBytes)));
        Scratch s(ws + 4096);
        const LookbackPlan<P, TileStatus<Acc>> p(s, n, 0, Sh::kTile);
        const int64_t blocks = std::min<int64_t>(p.tiles, sms);
        auto launch = [&] {
            CK(p.prepare(0));
            kern<<<unsigned(blocks), Sh::kThreads, Sh::kSharedBytes>>>(in, out, n, 0, false, p.tiles, p.status, p.window_status, reinterpret_cast<unsigned *>(ws));
        };
        CK(cudaMemset(out, 0xff, n * sizeof(Out)));
        launch(); CK(cudaDeviceSynchronize()); CK(cudaGetLastError());
        float t = time_median(launch);
        CK(cudaMemcpy(h_out.data(), out, n * sizeof(Out), cudaMemcpyDeviceToHost));
        int64_t bad = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double r = double(h_ref[i]), o = double(h_out[i]);
            // integers exactly (CUB's is exact too); floats within both scans' rounding of the running sum of |x|
            const double tol = In(0.5) != 0 ? 1e-4 * h_abs[i] : 0.0;
            if (!(std::abs(r - o) <= tol)) ++bad;
        }
        printf("items %2d stages %2d lag %d lead %d  tile %6d smem %6zu  %8.1f us  bad %lld\n", Sh::kItems, Sh::kStages,
               Sh::kLag, Sh::kPrefixLead, Sh::kTile, Sh::kSharedBytes, t, (long long)bad);
    }
};
int main(int argc, char **argv) {
    const int64_t n = int64_t(1) << (argc > 1 ? atoi(argv[1]) : 28);
    CK(cudaMalloc(&g_flush, size_t(512) << 20));
    if (argc > 2 && std::strcmp(argv[2], "ceilings") == 0) {  // the copy ceilings of the four pairs alone
        Bench<float, float> f32("float32", n);
        Bench<double, double> f64("float64", n);
        Bench<int64_t, int64_t> i64("int64", n);
        Bench<int32_t, int64_t> w("int32->int64", n);
        w.run_library();
        return 0;
    }
    if (argc > 2 && std::strcmp(argv[2], "library") == 0) {  // the library's shape of each pair
        { Bench<float, float> b("float32", n); b.run_library(); }
        { Bench<double, double> b("float64", n); b.run_library(); }
        { Bench<int64_t, int64_t> b("int64", n); b.run_library(); }
        { Bench<int32_t, int64_t> b("int32->int64", n); b.run_library(); }
        return 0;
    }
    if (argc > 2 && std::strcmp(argv[2], "widening") == 0) {  // int32 -> int64 shapes, half the result in place
        Bench<int32_t, int64_t> b("int32->int64", n);
        b.run<20, 6, 2>(); b.run<28, 5, 1>(); b.run<36, 4, 1>(); b.run<36, 4, 1, 0>(); b.run<36, 4, 1, 1>();
        b.run<36, 4, 1>();
        return 0;
    }
    // the runs of scans_h200.md's 7d40fcd section
    { Bench<float, float> b("float32", n); b.run<36, 6, 2>(); b.run<36, 6, 2, 1>(); b.run<36, 6, 2, 2>(); b.run<36, 6, 2, 3>(); b.run<44, 5, 1, 1>(); }
    { Bench<double, double> b("float64", n); b.run<22, 4, 1, 0>(); b.run<22, 4, 1>(); b.run<22, 4, 1, 1>(); b.run<14, 7, 2, 2>(); b.run<26, 4, 1, 1>(); }
    { Bench<int64_t, int64_t> b("int64", n); b.run<22, 4, 1>(); b.run<22, 4, 1, 1>(); b.run<22, 4, 1, 0>(); b.run<14, 7, 2, 2>(); }
    { Bench<int32_t, int64_t> b("int32->int64", n); b.run<20, 6, 2>(); b.run<20, 6, 2, 2>(); b.run<20, 5, 1, 1>(); }
    // whether the data matter: small values, whole numbers, random bits
    for (int pattern = 0; pattern < 3; ++pattern) {
        { Bench<double, double> b("float64", n, pattern); b.run<22, 4, 1, 0>(); }
        { Bench<int64_t, int64_t> b("int64", n, pattern); b.run<22, 4, 1>(); }
    }
    return 0;
}
