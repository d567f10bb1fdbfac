// traits.cuh -- the type traits and numeric limits the kernels use (gr::is_same, gr::limits, ...), with the
// standard's meaning for the types the kernels take.  Written here instead of taken from <cuda/std/type_traits>
// and <cuda/std/limits>: NVRTC parses those two headers in about 0.65 s, most of a first-use kernel's compile
// (0.9 s with them, 0.25 s without, benchmarks/results/build_times.md), where the kernels need a dozen traits.
// CUB's headers bring libcu++ anyway (axis/*_cub_kernels.cuh), and code nvcc alone compiles (host dispatch,
// the CUB baselines) may use cuda::std.
#pragma once

namespace gr {

template <class T, T v>
struct integral_constant {
    static constexpr T value = v;
    using value_type = T;
    using type = integral_constant;
    __host__ __device__ constexpr operator T() const { return v; }
};
using true_type = integral_constant<bool, true>;
using false_type = integral_constant<bool, false>;

template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};

template <bool B, class T, class F> struct conditional { using type = T; };
template <class T, class F> struct conditional<false, T, F> { using type = F; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;

template <class...> using void_t = void;

template <class T> struct remove_cv { using type = T; };
template <class T> struct remove_cv<const T> { using type = T; };
template <class T> struct remove_cv<volatile T> { using type = T; };
template <class T> struct remove_cv<const volatile T> { using type = T; };
template <class T> struct remove_reference { using type = T; };
template <class T> struct remove_reference<T &> { using type = T; };
template <class T> struct remove_reference<T &&> { using type = T; };
template <class T> using remove_reference_t = typename remove_reference<T>::type;

// the compiler's own answers, as the standard library's
template <class Base, class Derived> struct is_base_of : integral_constant<bool, __is_base_of(Base, Derived)> {};
template <class T> struct is_empty : integral_constant<bool, __is_empty(T)> {};

namespace traits_detail {
template <class T> struct integral : false_type {};
template <class T> struct floating : false_type {};
template <class T> struct unsigned_of {};  // make_unsigned of the integers other than bool
#define GR_INTEGRAL(T, U)                                       \
    template <> struct integral<T> : true_type {};              \
    template <> struct unsigned_of<T> { using type = U; };
GR_INTEGRAL(char, unsigned char)
GR_INTEGRAL(signed char, unsigned char)
GR_INTEGRAL(unsigned char, unsigned char)
GR_INTEGRAL(short, unsigned short)
GR_INTEGRAL(unsigned short, unsigned short)
GR_INTEGRAL(int, unsigned int)
GR_INTEGRAL(unsigned int, unsigned int)
GR_INTEGRAL(long, unsigned long)
GR_INTEGRAL(unsigned long, unsigned long)
GR_INTEGRAL(long long, unsigned long long)
GR_INTEGRAL(unsigned long long, unsigned long long)
#undef GR_INTEGRAL
template <> struct integral<bool> : true_type {};
template <> struct floating<float> : true_type {};
template <> struct floating<double> : true_type {};
template <> struct floating<long double> : true_type {};
}  // namespace traits_detail

// bool and the standard integers (not __half or __nv_bfloat16, which are classes, as for the standard's traits)
template <class T> struct is_integral : traits_detail::integral<typename remove_cv<T>::type> {};
template <class T> struct is_floating_point : traits_detail::floating<typename remove_cv<T>::type> {};
template <class T> using make_unsigned_t = typename traits_detail::unsigned_of<typename remove_cv<T>::type>::type;

// numeric_limits' members the kernels use: infinity and quiet_NaN of float and double (their bits: NVRTC has no
// __builtin_huge_val, libcu++ writes them so there too), max and lowest of those and of bool and the integers
template <class T>
struct limits {
    static_assert(is_integral<T>::value, "gr::limits: bool, an integer, float or double");
    __host__ __device__ static constexpr T max() {
        if constexpr (is_same<T, bool>::value) return true;
        else if constexpr (T(-1) < T(0)) return T(make_unsigned_t<T>(~make_unsigned_t<T>(0)) >> 1);
        else return T(~T(0));
    }
    __host__ __device__ static constexpr T lowest() {
        if constexpr (is_same<T, bool>::value) return false;
        else if constexpr (T(-1) < T(0)) return T(-max() - 1);
        else return T(0);
    }
};
// a binary floating type from its bits: the largest finite value's are infinity's less one
template <class T, class Bits, Bits kInfinity, Bits kQuietNaN>
struct float_limits {
    __host__ __device__ static constexpr T infinity() { return __builtin_bit_cast(T, kInfinity); }
    __host__ __device__ static constexpr T quiet_NaN() { return __builtin_bit_cast(T, kQuietNaN); }
    __host__ __device__ static constexpr T max() { return __builtin_bit_cast(T, Bits(kInfinity - 1)); }
    __host__ __device__ static constexpr T lowest() { return -max(); }
};
template <> struct limits<float> : float_limits<float, unsigned int, 0x7f800000u, 0x7fc00000u> {};
template <>
struct limits<double> : float_limits<double, unsigned long long, 0x7ff0000000000000ull, 0x7ff8000000000000ull> {};

}  // namespace gr
