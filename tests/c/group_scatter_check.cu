// The grouped scatter's arithmetic (cuda/axis/group_scatter_kernels.cuh, issue 40) run on the host:
// tests/test_group_scatter_cpu.py writes arrays to a file; this reduces each as one group the way the kernels do
// -- group_element into an accumulator's words, then group_result -- and prints the result's bits; the test
// compares them with the exact sum rounded once (Python's fractions) and with NumPy's max and min.  Each array is
// also cut into `pieces` runs whose words are combined as the blocks combine theirs (sums added, keys maxed, flags
// or-ed), and the bits must not change.
// Input: records of (int32 type: 0 float32, 1 float64, 2 float16, 3 int64, 4 int8; int32 pieces; int64 n; n
// elements); output: one line per record: for a floating type the bits of sum, nansum, mean, nanmean, max, min,
// nanmax, nanmin; for an integer type those of sum (int64), max, min; each "whole/cut" in hexadecimal.
#include "axis/group_scatter_kernels.cuh"

#include <cinttypes>
#include <cstdio>
#include <vector>

using namespace gr;

// An accumulator's words in plain host memory: what the kernels' atomics do, in order.
struct HostWords {
    int64_t *w;
    int flags;
    // (host and device, as group_element is, though only the host runs them)
    __host__ __device__ void add(int64_t word, int64_t v) { w[word] = int64_t(uint64_t(w[word]) + uint64_t(v)); }
    __host__ __device__ void max(uint64_t k) {
        if (k > uint64_t(w[0])) w[0] = int64_t(k);
    }
    __host__ __device__ void or_flags(unsigned f) { w[flags] |= int64_t(f); }
};

template <class In, class Out, gr_op kOp>
static uint64_t reduce(const std::vector<In> &x, int pieces) {
    using W = GroupWords<In, kOp>;
    std::vector<int64_t> total(W::kStride, 0);
    const size_t n = x.size();
    for (int p = 0; p < pieces; p++) {  // each piece a block's words, combined as the blocks' flush does
        std::vector<int64_t> words(W::kStride, 0);
        HostWords h{words.data(), W::kFlags};
        for (size_t i = n * p / pieces; i < n * (p + 1) / pieces; i++) group_element<In, kOp>(x[i], h);
        for (int j = 0; j < W::kStride; j++) {
            if (group_extreme<kOp> && j == 0) total[0] = uint64_t(words[0]) > uint64_t(total[0]) ? words[0] : total[0];
            else if (j == W::kFlags) total[j] |= words[j];
            else total[j] = int64_t(uint64_t(total[j]) + uint64_t(words[j]));
        }
    }
    const Out r = group_result<In, Out, kOp>(total.data());
    uint64_t bits = 0;
    memcpy(&bits, &r, sizeof r);
    return bits;
}

template <class In, class Out, gr_op kOp>
static void print(const std::vector<In> &x, int pieces) {
    printf(" %" PRIx64 "/%" PRIx64, reduce<In, Out, kOp>(x, 1), reduce<In, Out, kOp>(x, pieces));
}

template <class In>
static bool read(FILE *in, int64_t n, std::vector<In> &x) {
    x.resize(size_t(n));
    return !n || fread(x.data(), sizeof(In), size_t(n), in) == size_t(n);
}

template <class In>
static void floating(FILE *in, int type, int pieces, int64_t n) {
    std::vector<In> x;
    if (!read(in, n, x)) return;
    printf("%d", type);
    print<In, In, GR_OP_SUM>(x, pieces);
    print<In, In, GR_OP_NANSUM>(x, pieces);
    print<In, In, GR_OP_MEAN>(x, pieces);
    print<In, In, GR_OP_NANMEAN>(x, pieces);
    print<In, In, GR_OP_MAX>(x, pieces);
    print<In, In, GR_OP_MIN>(x, pieces);
    print<In, In, GR_OP_NANMAX>(x, pieces);
    print<In, In, GR_OP_NANMIN>(x, pieces);
    printf("\n");
}

template <class In>
static void integral(FILE *in, int type, int pieces, int64_t n) {
    std::vector<In> x;
    if (!read(in, n, x)) return;
    printf("%d", type);
    print<In, int64_t, GR_OP_SUM>(x, pieces);
    print<In, In, GR_OP_MAX>(x, pieces);
    print<In, In, GR_OP_MIN>(x, pieces);
    printf("\n");
}

int main(int argc, char **argv) {
    FILE *in = argc > 1 ? fopen(argv[1], "rb") : stdin;
    if (!in) return 2;
    int32_t head[2];
    int64_t n;
    while (fread(head, sizeof head, 1, in) == 1 && fread(&n, sizeof n, 1, in) == 1) {
        switch (head[0]) {
        case 0: floating<float>(in, head[0], head[1], n); break;
        case 1: floating<double>(in, head[0], head[1], n); break;
        case 2: floating<__half>(in, head[0], head[1], n); break;
        case 3: integral<int64_t>(in, head[0], head[1], n); break;
        case 4: integral<int8_t>(in, head[0], head[1], n); break;
        default: return 3;
        }
    }
    return 0;
}
