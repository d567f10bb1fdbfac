// types.cuh -- element types, NumPy's result/accumulator rules, and the dtype enum <-> C++ type mapping.
#pragma once
#include <cstdint>
#include <cuda/std/type_traits>
#include "gpureduce.h"

namespace gr {

// gr_dtype -> C++ element type.  Only the types some variant is instantiated for are mapped.
template <gr_dtype D> struct dtype_type;
template <> struct dtype_type<GR_INT32>   { using type = int32_t; };
template <> struct dtype_type<GR_INT64>   { using type = int64_t; };
template <> struct dtype_type<GR_FLOAT32> { using type = float; };
template <> struct dtype_type<GR_FLOAT64> { using type = double; };

template <class T> struct dtype_of;
template <> struct dtype_of<int32_t> { static constexpr gr_dtype value = GR_INT32; };
template <> struct dtype_of<int64_t> { static constexpr gr_dtype value = GR_INT64; };
template <> struct dtype_of<float>   { static constexpr gr_dtype value = GR_FLOAT32; };
template <> struct dtype_of<double>  { static constexpr gr_dtype value = GR_FLOAT64; };

// NumPy's result type for sum/prod/cumsum/cumprod with dtype=None: signed ints narrower than int64
// become int64 (unsigned ones uint64); floats keep their type.  min/max keep the input type.
template <class In> struct sum_result { using type = In; };
template <> struct sum_result<int32_t> { using type = int64_t; };

// 16 bytes of T: the widest load or store one thread issues (LDG.128 / STG.128).  Its pointers must be
// 16-byte aligned; the kernels that use it handle a scalar head and tail around the aligned body.
template <class T>
struct alignas(16) Vec16 {
    static constexpr int kLanes = 16 / sizeof(T);
    T lane[kLanes];
};

// The type arithmetic is done in.  Equal to the result type, except that float16 results are
// accumulated in float32 (NumPy does the same; seed 004's half sum that came out 28.0 is why).
template <class Out> struct accumulator { using type = Out; };

}  // namespace gr
