// ArgReducer and NanArgReducer (cuda/primitives/reducers.cuh) run on the host against NumPy's rules: argmin /
// argmax give the position of the first NaN, else of the first extreme; nanargmin / nanargmax the position of the
// first extreme of the array with its NaNs read as +inf (nanargmax: -inf), -1 where every element is NaN.  Every
// array of up to 6 elements of NaN, inf, -inf and 1, folded left to right from the identity, as the kernels fold
// the elements they read (fold_element: fold_at) and through combine, and as a pairwise tree with the operands
// swapped (the kernels combine in both orders).
// tests/test_reducers_cpu.py builds and runs it with nvcc; it prints "<name>: <bad> bad of <count>".
#include "primitives/reducers.cuh"

#include <cmath>
#include <cstdio>
#include <vector>

using namespace gr;

template <class Red, class T, bool kMin, bool kNanFirst>
static int check(const char *name) {
    const T values[4] = {T(NAN), T(INFINITY), T(-INFINITY), T(1)};
    int bad = 0, count = 0;
    for (int n = 1; n <= 6; n++) {
        int total = 1;
        for (int i = 0; i < n; i++) total *= 4;
        for (int code = 0; code < total; code++) {
            std::vector<T> x(n);
            for (int i = 0, c = code; i < n; i++, c /= 4) x[i] = values[c % 4];
            int64_t want = -1, first_nan = -1;  // NumPy's answer
            bool some_number = false;
            for (int i = n - 1; i >= 0; i--) {
                if (std::isnan(x[i])) first_nan = i;
                else some_number = true;
            }
            if (kNanFirst && first_nan >= 0) want = first_nan;  // argmin / argmax: the first NaN
            else if (some_number) {                              // the first extreme, a NaN read as the identity
                T best = 0;
                for (int i = 0; i < n; i++) {
                    const T v = std::isnan(x[i]) ? T(kMin ? INFINITY : -INFINITY) : x[i];
                    if (i == 0 || (kMin ? v < best : v > best)) want = i, best = v;
                }
            }
            typename Red::V left = Red::identity(), folded = Red::identity();
            std::vector<typename Red::V> level;
            for (int i = 0; i < n; i++) {
                left = Red::combine(left, Red::element(x[i], i));
                folded = fold_element<Red>(folded, x[i], i, 0.0);
                level.push_back(Red::element(x[i], i));
            }
            while (level.size() > 1) {
                std::vector<typename Red::V> next;
                for (size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(Red::combine(level[i + 1], level[i]));
                if (level.size() % 2) next.push_back(Red::combine(Red::identity(), level.back()));
                level = next;
            }
            const int64_t got_left = Red::finish(left), got_tree = Red::finish(level[0]);
            const int64_t got_folded = Red::finish(folded);
            count++;
            // fold_at's V is combine's exactly (value and index bits), so partials and shuffles see no difference
            const bool same_v = folded.index == left.index &&
                                (folded.value == left.value || (std::isnan(folded.value) && std::isnan(left.value)));
            if (got_left != want || got_tree != want || got_folded != want || !same_v) {
                if (bad++ < 5)
                    printf("%s: array %d of %d elements: want %lld, left fold %lld, element fold %lld, tree %lld\n",
                           name, code, n, (long long)want, (long long)got_left, (long long)got_folded,
                           (long long)got_tree);
            }
        }
    }
    printf("%s: %d bad of %d\n", name, bad, count);
    return bad;
}

int main() {
    const int bad = check<NanArgReducer<Min, float>, float, true, false>("nanargmin float32") +
                    check<NanArgReducer<Max, float>, float, false, false>("nanargmax float32") +
                    check<NanArgReducer<Min, double>, double, true, false>("nanargmin float64") +
                    check<NanArgReducer<Max, double>, double, false, false>("nanargmax float64") +
                    check<ArgReducer<Min, float>, float, true, true>("argmin float32") +
                    check<ArgReducer<Max, float>, float, false, true>("argmax float32") +
                    check<ArgReducer<Min, double>, double, true, true>("argmin float64") +
                    check<ArgReducer<Max, double>, double, false, true>("argmax float64");
    return bad != 0;
}
