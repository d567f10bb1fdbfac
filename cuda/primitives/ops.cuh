// ops.cuh -- the reduction/scan operators: identity and combine, with NumPy's semantics.
//   * integer sum/prod wrap around on overflow, as NumPy's do (done in unsigned: signed overflow is UB in C++)
//   * min/max propagate NaN, as numpy.minimum/maximum do
#pragma once
#include "abi/gpureduce.h"
#include "primitives/traits.cuh"
#include "primitives/types.cuh"

namespace gr {

// bool arithmetic is NumPy's: add is "or", multiply is "and".
template <class T>
__host__ __device__ __forceinline__ T wrap_add(T a, T b) {
    if constexpr (is_same<T, bool>::value) {
        return a || b;
    } else if constexpr (is_integral<T>::value) {
        using U = make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
        return a + b;
    }
}

template <class T>
__host__ __device__ __forceinline__ T wrap_sub(T a, T b) {
    if constexpr (is_integral<T>::value && !is_same<T, bool>::value) {
        using U = make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
    } else {
        return a - b;
    }
}

template <class T>
__host__ __device__ __forceinline__ T wrap_mul(T a, T b) {
    if constexpr (is_same<T, bool>::value) {
        return a && b;
    } else if constexpr (is_integral<T>::value) {
        using U = make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
        return a * b;
    }
}

template <class T>
__host__ __device__ __forceinline__ bool is_nan(T x) {
    if constexpr (is_floating_point<T>::value) return x != x;
    // __half and __nv_bfloat16 are no floating-point types to the traits: a NaN has all exponent bits set and a
    // nonzero mantissa
    else if constexpr (is_same<T, __half>::value) return (static_cast<__half_raw>(x).x & 0x7fffu) > 0x7c00u;
    else if constexpr (is_same<T, __nv_bfloat16>::value)
        return (static_cast<__nv_bfloat16_raw>(x).x & 0x7fffu) > 0x7f80u;
    else if constexpr (is_complex<T>::value) return x.re != x.re || x.im != x.im;
    else return false;
}

struct Sum {
    static constexpr gr_op code = GR_OP_SUM;
    template <class T> __host__ __device__ static constexpr T identity() { return T(0); }
    template <class T> __host__ __device__ __forceinline__ T operator()(T a, T b) const { return wrap_add(a, b); }
};

struct Prod {
    static constexpr gr_op code = GR_OP_PROD;
    template <class T> __host__ __device__ static constexpr T identity() { return T(1); }
    template <class T> __host__ __device__ __forceinline__ T operator()(T a, T b) const { return wrap_mul(a, b); }
};

struct Min {
    static constexpr gr_op code = GR_OP_MIN;
    template <class T> __host__ __device__ static constexpr T identity() {
        if constexpr (is_complex<T>::value) {
            using P = decltype(T().re);
            return T(limits<P>::infinity(), limits<P>::infinity());
        } else if constexpr (is_floating_point<T>::value) {
            return limits<T>::infinity();
        } else {
            return limits<T>::max();
        }
    }
    // a NaN on either side wins
    template <class T> __host__ __device__ __forceinline__ T operator()(T a, T b) const {
        if constexpr (is_complex<T>::value)  // lexicographic order can rank a NaN part below a number: test first
            return is_nan(a) ? a : is_nan(b) ? b : (b < a ? b : a);
        else
            return (a < b || is_nan(a)) ? a : b;
    }
};

struct Max {
    static constexpr gr_op code = GR_OP_MAX;
    template <class T> __host__ __device__ static constexpr T identity() {
        if constexpr (is_complex<T>::value) {
            using P = decltype(T().re);
            return T(-limits<P>::infinity(), -limits<P>::infinity());
        } else if constexpr (is_floating_point<T>::value) {
            return -limits<T>::infinity();
        } else {
            return limits<T>::lowest();
        }
    }
    template <class T> __host__ __device__ __forceinline__ T operator()(T a, T b) const {
        if constexpr (is_complex<T>::value)
            return is_nan(a) ? a : is_nan(b) ? b : (b > a ? b : a);
        else
            return (a > b || is_nan(a)) ? a : b;
    }
};

// nancumsum / nancumprod: Sum and Prod whose scan reads a NaN element as the identity (scan_element); running
// values are combined as Sum's and Prod's, so a NaN made by the data (inf - inf) is kept, as NumPy's.
struct NanSum : Sum {
    static constexpr gr_op code = GR_OP_NANSUM;
    static constexpr bool kSkipsNan = true;
};
struct NanProd : Prod {
    static constexpr gr_op code = GR_OP_NANPROD;
    static constexpr bool kSkipsNan = true;
};

// logcumsumexp: log(exp(a) + exp(b)) as max + log1p(exp(-|a - b|)), which neither overflows nor underflows;
// -inf is the identity, equal infinities stay (inf - inf would be NaN), a NaN propagates.
struct LogAddExp {
    static constexpr gr_op code = GR_OP_LOGSUMEXP;
    template <class T> __host__ __device__ static constexpr T identity() {
        return -limits<T>::infinity();
    }
    template <class T> __host__ __device__ __forceinline__ T operator()(T a, T b) const {
        if (a == b) return a + T(0.6931471805599453094);  // ln 2; +-inf stay +-inf
        const T hi = a > b ? a : b, lo = a > b ? b : a;
        return is_nan(a) || is_nan(b) ? a + b : hi + log1p(exp(lo - hi));
    }
};

template <class Op, class = void> struct skips_nan : false_type {};
template <class Op> struct skips_nan<Op, void_t<decltype(Op::kSkipsNan)>> : true_type {};

// The value a scan reads for element x: x in the accumulator type, or the identity for a NaN an Op skips.  A
// select, not an early return: under `in_range ? scan_element(in[i]) : neutral` the return made nvcc branch around
// each load and wait for it (nancumsum's loads went one at a time: 1.5x cumsum's time on columns, 2.8x whole).
template <class Op, class Acc, class In>
__host__ __device__ __forceinline__ Acc scan_element(const In &x) {
    if constexpr (skips_nan<Op>::value) {
        const Acc v = convert<Acc>(x);
        return is_nan(x) ? Op::template identity<Acc>() : v;
    } else {
        return convert<Acc>(x);
    }
}

// gr_op -> its functor: the one mapping reductions, scans and the axis machinery share.
template <gr_op OP> struct op_functor;
template <> struct op_functor<GR_OP_SUM> { using type = Sum; };
template <> struct op_functor<GR_OP_PROD> { using type = Prod; };
template <> struct op_functor<GR_OP_MIN> { using type = Min; };
template <> struct op_functor<GR_OP_MAX> { using type = Max; };
template <> struct op_functor<GR_OP_NANSUM> { using type = NanSum; };
template <> struct op_functor<GR_OP_NANPROD> { using type = NanProd; };
template <> struct op_functor<GR_OP_LOGSUMEXP> { using type = LogAddExp; };

}  // namespace gr
