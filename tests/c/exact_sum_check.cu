// ExactDigits and ExactWindow (cuda/primitives/exact_sum.cuh) run on the host: tests/test_exact_sum_cpu.py writes
// arrays to a file, this sums each three ways and prints the result's bits, and the test compares them with the
// exact sum rounded to nearest-even in Python's fractions.
//   digits  every element added to one ExactDigits
//   window  the array cut into `pieces` runs, each summed by its own ExactWindow spilling into its own
//           ExactDigits, the digit arrays then added word by word (as blocks combine on the device)
//   reverse the same pieces, each walked backwards
// then the same digits rounded other ways: divided by the count (the exact mean) in the elements' format, and
// for float32 elements the sum in float16 and in bfloat16 (round_bits, round_quotient_bits).
// Input: records of (int32 bytes per element: 4 or 8, int32 pieces, int64 n, n elements); output: one line per
// record, "<bytes> <digits> <window> <reverse> <mean>[ <float16> <bfloat16>]", the bits in hexadecimal.
#include "primitives/exact_sum.cuh"

#include <cinttypes>
#include <cstdio>
#include <vector>

using namespace gr;

template <class T>
static T by_window(const std::vector<T> &x, int pieces, bool backwards) {
    ExactDigits<T> total;
    total.clear();
    const size_t n = x.size();
    for (int p = 0; p < pieces; p++) {
        const size_t a = n * p / pieces, b = n * (p + 1) / pieces;
        ExactDigits<T> spill;
        spill.clear();
        ExactWindow<T> w;
        for (size_t i = a; i < b; i++) {
            w.add(x[backwards ? a + b - 1 - i : i], spill);
            if ((i - a + 1) % ExactWindow<T>::kSpillEvery == 0) w.spill_window(spill);  // as the kernel does
        }
        w.finish(spill);
        for (int d = 0; d < ExactFormat<T>::kDigits; d++) total.digit[d] += spill.digit[d];
        total.flags |= spill.flags;
    }
    return total.round();
}

template <class T>
static void one(FILE *in, int pieces, int64_t n) {
    std::vector<T> x(n);
    if (n && fread(x.data(), sizeof(T), n, in) != size_t(n)) {
        fprintf(stderr, "short read\n");
        return;
    }
    ExactDigits<T> all;
    all.clear();
    for (const T &v : x) all.add_element(v);
    ExactDigits<T> again = all;  // (round normalizes its digits)
    const T results[3] = {all.round(), by_window(x, pieces, false), by_window(x, pieces, true)};
    printf("%d", int(sizeof(T)));
    for (const T &r : results) {
        typename ExactFormat<T>::Bits bits;
        memcpy(&bits, &r, sizeof bits);
        printf(" %" PRIx64, uint64_t(bits));
    }
    ExactDigits<T> mean = again;
    printf(" %" PRIx64, uint64_t(mean.template round_quotient_bits<ExactTarget<T>>(uint64_t(n))));
    if (sizeof(T) == 4) {
        ExactDigits<T> half = again, brain = again;
        printf(" %x %x", unsigned(half.template round_bits<ExactHalf>()),
               unsigned(brain.template round_bits<ExactBfloat16>()));
    }
    printf("\n");
}

int main(int argc, char **argv) {
    FILE *in = argc > 1 ? fopen(argv[1], "rb") : stdin;
    if (!in) return 2;
    int32_t head[2];
    int64_t n;
    while (fread(head, sizeof head, 1, in) == 1 && fread(&n, sizeof n, 1, in) == 1) {
        if (head[0] == 4) one<float>(in, head[1], n);
        else one<double>(in, head[1], n);
    }
    return 0;
}
