// atomics.cuh -- combine a value into a device-memory cell atomically, for every operator and type.
// Native instructions where the hardware has them (add, integer min/max); a compare-and-swap loop
// over the value's bits otherwise (prod, floating min/max with NaN propagation).
#pragma once
#include "primitives/traits.cuh"
#include "primitives/ops.cuh"

namespace gr {

template <class Op, class T>
__device__ __forceinline__ void atomic_combine_cas(T *cell, T v) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "CAS combine needs a 32- or 64-bit type");
    using Bits = conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
    Bits *addr = reinterpret_cast<Bits *>(cell);
    Bits old = *addr, assumed;
    do {
        assumed = old;
        T cur;
        memcpy(&cur, &assumed, sizeof(T));
        T next = Op()(cur, v);
        Bits next_bits;
        memcpy(&next_bits, &next, sizeof(T));
        if (next_bits == assumed) return;  // nothing would change (e.g. max already larger)
        old = atomicCAS(addr, assumed, next_bits);
    } while (old != assumed);
}

template <class Op, class T>
__device__ __forceinline__ void atomic_combine(T *cell, T v) {
    constexpr bool is_int = is_integral<T>::value;
    if constexpr (is_same<Op, Sum>::value && is_floating_point<T>::value) {
        atomicAdd(cell, v);
    } else if constexpr (is_same<Op, Sum>::value && is_int) {
        // two's-complement add wraps exactly like NumPy's integer sum
        using U = conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
        atomicAdd(reinterpret_cast<U *>(cell), static_cast<U>(v));
    } else if constexpr (is_int && (is_same<Op, Min>::value || is_same<Op, Max>::value)) {
        using S = conditional_t<sizeof(T) == 4, int, long long>;
        if constexpr (is_same<Op, Min>::value) atomicMin(reinterpret_cast<S *>(cell), static_cast<S>(v));
        else atomicMax(reinterpret_cast<S *>(cell), static_cast<S>(v));
    } else {
        atomic_combine_cas<Op>(cell, v);
    }
}

}  // namespace gr
