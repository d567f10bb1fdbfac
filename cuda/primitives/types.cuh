// types.cuh -- element types, NumPy's result/accumulator rules, and the dtype enum <-> C++ type mapping.
#pragma once
#include <cstdint>
#include <cstring>
#ifndef __CUDACC_RTC__
#include <cstdio>  // dtype_type_name
#endif
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "primitives/traits.cuh"
#include "abi/gpureduce.h"

namespace gr {

// NumPy's complex64/complex128: two floats, real first.  Aligned like its parts (NumPy's own alignment),
// so any view NumPy or CuPy hands over can be read.
template <class T>
struct cplx {
    T re, im;
    cplx() = default;  // trivial, so it can live in __shared__ arrays
    __host__ __device__ constexpr cplx(T r, T i = T(0)) : re(r), im(i) {}
    template <class U>
    __host__ __device__ constexpr explicit cplx(const cplx<U> &o) : re(T(o.re)), im(T(o.im)) {}
};
template <class T> __host__ __device__ inline cplx<T> operator+(cplx<T> a, cplx<T> b) { return {a.re + b.re, a.im + b.im}; }
template <class T> __host__ __device__ inline cplx<T> operator-(cplx<T> a, cplx<T> b) {
    return {a.re - b.re, a.im - b.im};
}
template <class T> __host__ __device__ inline cplx<T> operator*(cplx<T> a, cplx<T> b) {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <class T> __host__ __device__ inline cplx<T> operator/(cplx<T> a, T d) { return {a.re / d, a.im / d}; }
// NumPy orders complex numbers lexicographically (real part first) for min/max/argmin/argmax.
template <class T> __host__ __device__ inline bool operator<(cplx<T> a, cplx<T> b) {
    return a.re < b.re || (a.re == b.re && a.im < b.im);
}
template <class T> __host__ __device__ inline bool operator>(cplx<T> a, cplx<T> b) { return b < a; }

template <class T> struct is_complex : false_type {};
template <class T> struct is_complex<cplx<T>> : true_type {};

using complex64 = cplx<float>;
using complex128 = cplx<double>;

// gr_dtype <-> C++ element type, for the whole enum (abi/dtypes.def's device_type column).
template <gr_dtype D> struct dtype_type;
template <class T> struct dtype_of_impl;
#define GR_DTYPE(NAME, name, device_type, ...)                                              \
    template <> struct dtype_type<GR_##NAME> { using type = device_type; };                 \
    template <> struct dtype_of_impl<device_type> { static constexpr gr_dtype value = GR_##NAME; };
#include "abi/dtypes.def"
#undef GR_DTYPE

// Bytes of one element of `d` (0 for a code outside the enum).
constexpr int64_t dtype_itemsize(gr_dtype d) {
    switch (d) {
#define GR_DTYPE(NAME, name, device_type, ...) \
    case GR_##NAME: return int64_t(sizeof(device_type));
#include "abi/dtypes.def"
#undef GR_DTYPE
    default: return 0;
    }
}

template <class T> struct dtype_of : dtype_of_impl<T> {};

#ifndef __CUDACC_RTC__
// The C++ name of dtype `d`'s element type in a first-use kernel's name expression (abi/jit.h): dtype_type's.
inline void dtype_type_name(gr_dtype d, char *buf, size_t size) {
    std::snprintf(buf, size, "gr::dtype_type<(gr_dtype)%d>::type", int(d));
}
#endif

// What dtypes.def says of each dtype, on the enum: its kind, NumPy's sum/prod/cumsum/cumprod result dtype with
// dtype=None (bool and ints narrower than 64 bits widen to int64 / uint64), its real part's dtype.
enum class dtype_kind { BOOL, INT, UINT, FLOAT, COMPLEX };
struct dtype_row {
    dtype_kind kind;
    gr_dtype sum_as, real;
};
constexpr dtype_row kDtypeRows[GR_DTYPE_COUNT] = {
#define GR_DTYPE(NAME, name, device_type, kind, bytes, numpy, dlpack, sum_as, accumulate_as, real, ...) \
    {dtype_kind::kind, GR_##sum_as, GR_##real},
#include "abi/dtypes.def"
#undef GR_DTYPE
};

constexpr bool is_inexact_dtype(gr_dtype d) {
    return d >= 0 && d < GR_DTYPE_COUNT &&
           (kDtypeRows[d].kind == dtype_kind::FLOAT || kDtypeRows[d].kind == dtype_kind::COMPLEX);
}

// The real dtype of a complex one (the type of its parts); other dtypes are their own.
constexpr gr_dtype real_dtype(gr_dtype d) { return d >= 0 && d < GR_DTYPE_COUNT ? kDtypeRows[d].real : d; }

// NumPy's sum result dtype (the sum_as column): what gr_default_result_dtype and the axis ABI report.
constexpr gr_dtype default_sum_dtype(gr_dtype in) {
    return in >= 0 && in < GR_DTYPE_COUNT ? kDtypeRows[in].sum_as : in;
}

// The same rule on C++ types, for the kernels' result types.
template <class In> struct sum_result { using type = typename dtype_type<default_sum_dtype(dtype_of_impl<In>::value)>::type; };

// Each operator's result-dtype rule, the `result` column of abi/ops.def.
constexpr gr_result_rule kResultRule[GR_OP_COUNT] = {
#define GR_OP(NAME, name, scans, flat, result, ...) GR_RESULT_##result,
#include "abi/ops.def"
#undef GR_OP
};

// The operator that serves integer and bool inputs, the `exact` column of abi/ops.def (nansum: sum).
constexpr gr_op kExactAs[GR_OP_COUNT] = {
#define GR_OP(NAME, name, scans, flat, result, exact, ...) GR_OP_##exact,
#include "abi/ops.def"
#undef GR_OP
};

// Whose axis kernels run each operator, the `kernels` column of abi/ops.def (std: var's).
constexpr gr_op kKernelsOf[GR_OP_COUNT] = {
#define GR_OP(NAME, name, scans, flat, result, exact, operands, keywords, identity, ufunc, zero_d_axis, param, \
              reference, bound, kernels, ...)                                                                  \
    GR_OP_##kernels,
#include "abi/ops.def"
#undef GR_OP
};

// NumPy's result dtype of each operator with dtype=None (mean of bool/ints: float64; arg*: int64).
constexpr gr_dtype result_dtype(gr_op op, gr_dtype in) {
    if (op < 0 || op >= GR_OP_COUNT) return GR_DTYPE_COUNT;
    switch (kResultRule[op]) {
    case GR_RESULT_SUM: return default_sum_dtype(in);
    case GR_RESULT_SAME: return in;
    case GR_RESULT_MEAN: return is_inexact_dtype(in) ? in : GR_FLOAT64;
    case GR_RESULT_INDEX: return GR_INT64;
    case GR_RESULT_BOOL: return GR_BOOL;
    case GR_RESULT_COUNT: return GR_INT64;
    case GR_RESULT_VAR:
    case GR_RESULT_NORM: return real_dtype(is_inexact_dtype(in) ? in : GR_FLOAT64);
    case GR_RESULT_LOG: return real_dtype(in) != in ? GR_DTYPE_COUNT : is_inexact_dtype(in) ? in : GR_FLOAT64;
    }
    return GR_DTYPE_COUNT;
}

// 16 bytes of T: the widest load or store one thread issues (LDG.128 / STG.128).  Its pointers must be
// 16-byte aligned; the kernels that use it handle a scalar head and tail around the aligned body.
template <class T>
struct alignas(16) Vec16 {
    static constexpr int kLanes = 16 / sizeof(T);
    T lane[kLanes];
};

// A load that skips L1, for values other blocks wrote (read from L2), of any trivially copyable V.
template <class V>
__device__ __forceinline__ V load_cg(const V *p) {
    V r;
    if constexpr (sizeof(V) % 4 == 0 && alignof(V) >= 4) {
        unsigned w[sizeof(V) / 4];
#pragma unroll
        for (int i = 0; i < int(sizeof(V) / 4); i++) w[i] = __ldcg(reinterpret_cast<const unsigned *>(p) + i);
        memcpy(&r, w, sizeof(V));
    } else {
        unsigned char b[sizeof(V)];
#pragma unroll
        for (int i = 0; i < int(sizeof(V)); i++) b[i] = __ldcg(reinterpret_cast<const unsigned char *>(p) + i);
        memcpy(&r, b, sizeof(V));
    }
    return r;
}

// The type arithmetic is done in.  Equal to the result type, except that float16 and bfloat16 results are
// accumulated in float32 (NumPy does the same for float16, PyTorch for both; seed 004's half sum that came out
// 28.0 is why).
template <class Out> struct accumulator { using type = Out; };  // accumulate_as of dtypes.def for its dtypes
#define GR_DTYPE(NAME, name, device_type, kind, bytes, numpy, dlpack, sum_as, accumulate_as, ...) \
    template <> struct accumulator<device_type> { using type = typename dtype_type<GR_##accumulate_as>::type; };
#include "abi/dtypes.def"
#undef GR_DTYPE

// Value conversion with NumPy's casting semantics where C++ has none: float16 and bfloat16 go through float32
// (rounded to nearest even), complex -> real keeps the real part, anything -> bool is "!= 0".
template <class To, class From>
__host__ __device__ __forceinline__ To convert(const From &x) {
    if constexpr (is_same<From, bool>::value) {
        // NumPy reads any nonzero byte as True (a uint8 array viewed as bool holds 0xff, say): the byte is
        // read as stored, not trusted to be 0 or 1 -- also into bool, so that max and argmax compare True as True
        unsigned char byte;
        memcpy(&byte, &x, 1);
        if constexpr (is_same<To, bool>::value) return byte != 0;
        else return convert<To>(static_cast<unsigned char>(byte != 0));
    } else if constexpr (is_same<To, From>::value) {
        return x;
    } else if constexpr (is_same<From, __half>::value) {
        return convert<To>(__half2float(x));
    } else if constexpr (is_same<From, __nv_bfloat16>::value) {
        return convert<To>(__bfloat162float(x));
    } else if constexpr (is_same<To, __half>::value) {
        if constexpr (is_complex<From>::value) return __float2half(static_cast<float>(x.re));
        else if constexpr (is_same<From, double>::value) return __double2half(x);
        else return __float2half(static_cast<float>(x));
    } else if constexpr (is_same<To, __nv_bfloat16>::value) {
        if constexpr (is_complex<From>::value) return __float2bfloat16(static_cast<float>(x.re));
        else if constexpr (is_same<From, double>::value) return __double2bfloat16(x);
        else return __float2bfloat16(static_cast<float>(x));
    } else if constexpr (is_complex<To>::value) {
        using P = decltype(To().re);
        if constexpr (is_complex<From>::value) return To(static_cast<P>(x.re), static_cast<P>(x.im));
        else return To(static_cast<P>(x), P(0));
    } else if constexpr (is_complex<From>::value) {
        if constexpr (is_same<To, bool>::value) return x.re != 0 || x.im != 0;
        else return static_cast<To>(x.re);
    } else if constexpr (is_same<To, bool>::value) {
        return x != From(0);
    } else {
        return static_cast<To>(x);
    }
}

}  // namespace gr
