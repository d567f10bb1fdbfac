// traits_check.cu -- cuda/primitives/traits.cuh against the standard library, for every element type the kernels
// take (abi/dtypes.def) and the C++ integer types: the traits at compile time, the limits' values and bits when run.
// Built and run by tests/test_traits_cpu.py (host code only; no GPU).
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>
#include "primitives/types.cuh"

namespace {
using gr::complex64;
using gr::complex128;

template <class T>
constexpr bool same_traits() {
    static_assert(gr::is_integral<T>::value == std::is_integral<T>::value, "is_integral");
    static_assert(gr::is_floating_point<T>::value == std::is_floating_point<T>::value, "is_floating_point");
    static_assert(gr::is_integral<const T>::value == std::is_integral<const T>::value, "is_integral of const");
    static_assert(gr::is_same<T, T>::value && !gr::is_same<T, const T>::value, "is_same");
    static_assert(std::is_same<gr::remove_reference_t<T &>, T>::value, "remove_reference_t");
    if constexpr (std::is_integral<T>::value && !std::is_same<T, bool>::value)
        static_assert(std::is_same<gr::make_unsigned_t<T>, std::make_unsigned_t<T>>::value, "make_unsigned_t");
    return true;
}

template <class T>
bool same_limits(const char *name) {
    using S = std::numeric_limits<T>;
    static_assert(gr::limits<T>::max() == S::max() && gr::limits<T>::lowest() == S::lowest(), "max, lowest");
    if constexpr (std::is_floating_point<T>::value) {
        const T mine[] = {gr::limits<T>::infinity(), gr::limits<T>::quiet_NaN()};
        const T theirs[] = {S::infinity(), S::quiet_NaN()};
        if (std::memcmp(mine, theirs, sizeof mine) != 0) {
            std::printf("FAIL: %s infinity or quiet_NaN bits differ from std::numeric_limits\n", name);
            return false;
        }
    }
    return true;
}

#define GR_DTYPE(NAME, name, device_type, ...) static_assert(same_traits<device_type>(), #name);
#include "abi/dtypes.def"
#undef GR_DTYPE
static_assert(same_traits<char>() && same_traits<long>() && same_traits<long long>() && same_traits<unsigned long>() &&
              same_traits<unsigned long long>() && same_traits<long double>(), "the C++ integer types");
static_assert(gr::is_same<gr::conditional_t<true, int, float>, int>::value &&
              gr::is_same<gr::conditional_t<false, int, float>, float>::value, "conditional_t");
struct Empty {};
struct Derived : Empty { int x; };
static_assert(gr::is_empty<Empty>::value && !gr::is_empty<Derived>::value, "is_empty");
static_assert(gr::is_base_of<Empty, Derived>::value && !gr::is_base_of<Derived, Empty>::value, "is_base_of");

}  // namespace

int main() {
    bool ok = same_limits<bool>("bool") && same_limits<signed char>("int8") && same_limits<short>("int16") &&
              same_limits<int>("int32") && same_limits<long>("long") && same_limits<long long>("long long") &&
              same_limits<unsigned char>("uint8") && same_limits<unsigned short>("uint16") &&
              same_limits<unsigned>("uint32") && same_limits<unsigned long>("unsigned long") &&
              same_limits<unsigned long long>("unsigned long long") && same_limits<float>("float") &&
              same_limits<double>("double");
    std::printf(ok ? "traits: all agree\n" : "traits: disagreement\n");
    return ok ? 0 : 1;
}
