// reducers.cuh -- what one NumPy reduction folds, for the axis kernels (segments.cuh).
//
// A Reducer fixes the value V carried through the reduction tree and four steps:
//   identity()            the V that changes nothing (pads idle lanes, skipped elements)
//   element(x, r)         element x, at position r along the reduced axis, as a V
//   combine(a, b)         associative and commutative, so any tree gives the same answer up to rounding
//   finish(v)             V -> the result type
// and Partials: the Reducer over V itself (same V, combine, finish), for the passes that read partials, not
// the input, so they are instantiated once per V and result type instead of once per input type.
// sum/prod/min/max fold in accumulator<Out> (float16 in float32); mean carries (sum, count) and divides at the
// end; argmin/argmax carry (value, position) and keep the first extreme, NaN first, as NumPy's do; any/all
// fold each element's truth (nonzero, NaN included) with "or"/"and"; count_nonzero adds those truths in int64;
// the nan functions skip NaN (their kernels exist for floating and complex inputs only: abi/ops.def's `exact`).
// A Reducer may also read the operator's parameter (vector_norm's ord): see element_of below.
#pragma once
#include <cstdint>
#include "primitives/ops.cuh"
#include "primitives/types.cuh"

namespace gr {

template <class Op, class In, class Out>
struct FoldReducer {
    using Acc = typename accumulator<Out>::type;
    using V = Acc;
    using Result = Out;
    using Partials = FoldReducer<Op, Out, Out>;
    // Pads idle lanes and starts every partial: Op's identity, but -0.0 for a floating-point sum.  -0.0 is IEEE's
    // true additive identity (-0.0 + x == x for every x, while +0.0 + -0.0 == +0.0), so a sum of -0.0s with
    // initial=-0.0 stays -0.0 as NumPy's does; without initial the fold ends on from_initial(nullptr), +0.0,
    // NumPy's start.
    __host__ __device__ __forceinline__ static V identity() {
        if constexpr (is_same<Op, Sum>::value && is_complex<Acc>::value) {
            using P = decltype(Acc().re);
            return Acc(-P(0), -P(0));
        } else if constexpr (is_same<Op, Sum>::value && is_floating_point<Acc>::value) {
            return -Acc(0);
        } else {
            return Op::template identity<Acc>();
        }
    }
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t) { return convert<Acc>(x); }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) { return Op()(a, b); }
    __host__ __device__ __forceinline__ static Out finish(const V &v) { return convert<Out>(v); }
    // initial= of sum/prod/min/max: folded in once, at the end (host side: the value as a V)
    __host__ __device__ static V from_initial(const void *initial) {
        return initial ? convert<Acc>(*static_cast<const Out *>(initial)) : Op::template identity<Acc>();
    }
};

template <class Acc>
struct SumCount {
    Acc sum;
    int64_t count;
};

template <class In, class Out>
struct MeanReducer {
    using Acc = typename accumulator<Out>::type;
    using V = SumCount<Acc>;
    using Result = Out;
    using Partials = MeanReducer<Out, Out>;
    __host__ __device__ __forceinline__ static V identity() { return {Acc(0), 0}; }
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t) { return {convert<Acc>(x), 1}; }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) { return {a.sum + b.sum, a.count + b.count}; }
    // NumPy: sum in the accumulation type, divided by the count in that type (0/0 gives NaN)
    __host__ __device__ __forceinline__ static Out finish(const V &v) {
        if constexpr (is_complex<Acc>::value) {
            using P = decltype(Acc().re);
            return convert<Out>(v.sum / static_cast<P>(v.count));
        } else {
            return convert<Out>(v.sum / static_cast<Acc>(v.count));
        }
    }
    __host__ __device__ static V from_initial(const void *) { return identity(); }
};

template <class Acc>
struct ValueIndex {
    Acc value;
    int64_t index;
};

// Better = Min (argmin) or Max (argmax).  Ties and NaNs go to the smaller position.
template <class Better, class In>
struct ArgReducer {
    using Acc = typename accumulator<In>::type;
    using V = ValueIndex<Acc>;
    using Result = int64_t;
    using Partials = ArgReducer<Better, Acc>;
    __host__ __device__ __forceinline__ static V identity() { return {Better::template identity<Acc>(), INT64_MAX}; }
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t r) { return {convert<Acc>(x), r}; }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) {
        const bool a_nan = is_nan(a.value), b_nan = is_nan(b.value);
        if (a_nan || b_nan) {
            if (a_nan && b_nan) return a.index <= b.index ? a : b;
            return a_nan ? a : b;
        }
        if (strictly_better(a.value, b.value)) return a;
        if (strictly_better(b.value, a.value)) return b;
        return a.index <= b.index ? a : b;
    }
    // combine(v, element(x, r)) for an r past every position folded into v (fold_element's contract): a tie keeps
    // v's position unless v is still the identity, a NaN in v stays, a NaN x wins otherwise; no compare of positions.
    static constexpr bool kFoldsAtPositions = true;
    __host__ __device__ __forceinline__ static V fold_at(const V &v, const In &x, int64_t r) {
        const Acc xv = convert<Acc>(x);
        const bool take = !is_nan(v.value) && (is_nan(xv) || strictly_better(xv, v.value) || v.index == INT64_MAX);
        return {take ? xv : v.value, take ? r : v.index};
    }
    // an empty range of a segmented argmin (cuda/axis/ranges_kernels.cuh) has no position: -1, as Awkward's
    __host__ __device__ __forceinline__ static int64_t finish(const V &v) { return v.index == INT64_MAX ? -1 : v.index; }
    __host__ __device__ static V from_initial(const void *) { return identity(); }

  protected:
    __host__ __device__ __forceinline__ static bool strictly_better(const Acc &a, const Acc &b) {
        if constexpr (is_same<Better, Min>::value) return a < b;
        else return a > b;
    }
};

// nanargmin / nanargmax, as NumPy's, which fills the NaNs with +inf (nanargmax: -inf) and takes the first
// extreme: a NaN element is read as the identity's value at its own position, so it ties with a real infinity
// and the first of them wins.  Bit kNoNumber of the index says that no number has been seen: a combine keeps it
// only where both sides have it (the identity's index, INT64_MAX, has it too).  A slice of NaNs only finishes as
// -1 (gpureduce/_planning/numpy_rules.py raises NumPy's "All-NaN slice encountered").
template <class Better, class In>
struct NanArgReducer : ArgReducer<Better, In> {
    using Base = ArgReducer<Better, In>;
    using Acc = typename Base::Acc;
    using V = typename Base::V;
    using Partials = NanArgReducer<Better, Acc>;
    static constexpr int64_t kNoNumber = int64_t(1) << 62;  // positions stay below 2^62
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t r) {
        return is_nan(x) ? V{Better::template identity<Acc>(), r | kNoNumber} : Base::element(x, r);
    }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) {
        const int64_t pa = a.index & ~kNoNumber, pb = b.index & ~kNoNumber;  // (values are never NaN here)
        const bool take_a = Base::strictly_better(a.value, b.value) ||
                            (!Base::strictly_better(b.value, a.value) && pa <= pb);
        return {take_a ? a.value : b.value, (take_a ? pa : pb) | (a.index & b.index & kNoNumber)};
    }
    __host__ __device__ __forceinline__ static int64_t finish(const V &v) {
        return (v.index & kNoNumber) ? -1 : v.index;
    }
    // combine(v, element(x, r)) for an r past every position folded into v (fold_element's contract): a tie then
    // keeps v's position unless v is still the identity, so one compare of the values decides, with no compare of
    // positions; kNoNumber ends at the first number.  Selects only: no branch, no mask of v's position.
    static constexpr bool kFoldsAtPositions = true;
    __host__ __device__ __forceinline__ static V fold_at(const V &v, const In &x, int64_t r) {
        const bool number = !is_nan(x);
        const Acc xv = number ? convert<Acc>(x) : Better::template identity<Acc>();
        const bool take = Base::strictly_better(xv, v.value) || v.index == INT64_MAX;  // (only the identity's)
        const int64_t index = take ? (r | kNoNumber) : v.index;
        return {take ? xv : v.value, number ? index & ~kNoNumber : index};
    }
};

// ptp: the minimum and the maximum carried together (NaN propagating, as min's and max's), subtracted once at
// the end in the input's type: an integer range wraps around as NumPy's max - min does.
template <class Acc>
struct LowHigh {
    Acc low, high;
};

template <class In>
struct PtpReducer {
    using Acc = typename accumulator<In>::type;
    using V = LowHigh<Acc>;
    using Result = In;
    using Partials = PtpReducer<In>;
    __host__ __device__ __forceinline__ static V identity() {
        return {Min::template identity<Acc>(), Max::template identity<Acc>()};
    }
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t) {
        const Acc v = convert<Acc>(x);
        return {v, v};
    }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) {
        return {Min()(a.low, b.low), Max()(a.high, b.high)};
    }
    __host__ __device__ __forceinline__ static In finish(const V &v) { return convert<In>(wrap_sub(v.high, v.low)); }
    __host__ __device__ static V from_initial(const void *) { return identity(); }
};

// logsumexp in one read: each state holds the largest element m and s = sum(exp(x - m)) over its elements, so
// an element costs one exp (of a number <= 0: no overflow) and the result is m + log(s).  -inf elements add
// nothing but count for an all -inf slice; inf dominates; a NaN propagates.
template <class Acc>
struct MaxSum {
    Acc m, s;
};

template <class In, class Out>
struct LogSumExpReducer {
    using Acc = typename accumulator<Out>::type;
    using V = MaxSum<Acc>;
    using Result = Out;
    using Partials = LogSumExpReducer<Out, Out>;
    __host__ __device__ __forceinline__ static V identity() {
        return {-limits<Acc>::infinity(), Acc(0)};
    }
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t) { return {convert<Acc>(x), Acc(1)}; }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) {
        if (is_nan(a.m) || is_nan(b.m)) return {a.m + b.m, Acc(1)};
        const V &hi = a.m >= b.m ? a : b, &lo = a.m >= b.m ? b : a;
        if (lo.m == hi.m) return {hi.m, hi.s + lo.s};  // also both -inf or both inf: no inf - inf
        return {hi.m, hi.s + lo.s * exp(lo.m - hi.m)};
    }
    __host__ __device__ __forceinline__ static Out finish(const V &v) {
        if (v.s == Acc(0)) return convert<Out>(-limits<Acc>::infinity());  // nothing taken
        return convert<Out>(v.m + log(v.s));
    }
    __host__ __device__ static V from_initial(const void *) { return identity(); }
};

// logsumexp with SciPy's weights b (a second operand of a's dtype and layout): s is the sum of b * exp(a - m), so
// it is negative where the weights make it so; an element whose weight is 0 takes no part (SciPy's
// a[b == 0] = -inf).  What finish gives is the parameter (Python's return_sign): kLog, log(s) + m (NaN for a
// negative sum, SciPy's value without return_sign); kLogAbs, log|s| + m; kSign, the sign of the sum (1, 0, -1,
// NaN), a second pass over the data for return_sign.
template <class In, class Out>
struct WeightedLogSumExpReducer : LogSumExpReducer<In, Out> {
    enum Finish { kLog = 0, kLogAbs = 1, kSign = 2 };
    static constexpr bool kSecondOperand = true;
    static constexpr bool kReadsParam = true;
    using Acc = typename accumulator<Out>::type;
    using V = MaxSum<Acc>;
    using Partials = WeightedLogSumExpReducer<Out, Out>;
    __host__ __device__ __forceinline__ static V element(const In &x, const In &w, int64_t) {
        const Acc weight = convert<Acc>(w);
        if (weight == Acc(0)) return LogSumExpReducer<In, Out>::identity();
        return {convert<Acc>(x), weight};
    }
    __host__ __device__ __forceinline__ static Out finish(const V &v, double finish) {
        const Acc nan = limits<Acc>::quiet_NaN(), inf = limits<Acc>::infinity();
        // +inf terms of opposite signs cancel to a NaN sum, as SciPy's inf - inf
        const bool undefined = is_nan(v.m) || is_nan(v.s) || (v.s == Acc(0) && v.m == inf);
        const bool zero = v.s == Acc(0) || v.m == -inf;  // nothing taken, or every term exp(-inf) * b
        if (finish == kSign) return convert<Out>(undefined ? nan : zero ? Acc(0) : v.s > Acc(0) ? Acc(1) : Acc(-1));
        if (undefined) return convert<Out>(nan);
        if (zero) return convert<Out>(-inf);
        return convert<Out>(v.m + log(finish == kLogAbs ? fabs(v.s) : v.s));
    }
    __host__ __device__ static double param(gr_op, const void *initial) { return initial ? convert<double>(*static_cast<const Out *>(initial)) : 0.0; }
};

// any (kAll false) and all (kAll true): NumPy's logical_or / logical_and reductions of each element's truth,
// convert<bool>: nonzero, a NaN is true, a complex number is true when either part is.  Their identities,
// False and True, are the result of an empty reduction, as NumPy's.
template <bool kAll, class In>
struct TruthReducer {
    using V = bool;
    using Result = bool;
    using Partials = TruthReducer<kAll, bool>;
    __host__ __device__ __forceinline__ static V identity() { return kAll; }
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t) { return convert<bool>(x); }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) { return kAll ? (a && b) : (a || b); }
    __host__ __device__ __forceinline__ static bool finish(const V &v) { return v; }
    __host__ __device__ static V from_initial(const void *) { return identity(); }
};

// count_nonzero: the truths added in int64 (NumPy's intp); the partial counts are summed.
template <class In>
struct CountReducer {
    using V = int64_t;
    using Result = int64_t;
    using Partials = FoldReducer<Sum, int64_t, int64_t>;
    __host__ __device__ __forceinline__ static V identity() { return 0; }
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t) { return convert<bool>(x) ? 1 : 0; }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) { return a + b; }
    __host__ __device__ __forceinline__ static int64_t finish(const V &v) { return v; }
    __host__ __device__ static V from_initial(const void *) { return identity(); }
};

// nansum / nanprod: a NaN element (a complex one: either part NaN) is read as 0 / 1, as NumPy's nansum and
// nanprod replace it, so it changes nothing.  A NaN made by the data (inf - inf) is not skipped: the partials
// are folded by the plain reducer.
template <class Op, class In, class Out>
struct NanFoldReducer : FoldReducer<Op, In, Out> {
    using Acc = typename FoldReducer<Op, In, Out>::Acc;
    using V = Acc;
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t) {
        return is_nan(x) ? Op::template identity<Acc>() : convert<Acc>(x);  // +0.0, as NumPy's replacement
    }
};

// nanmin / nanmax: NaN is the identity and loses every comparison, so a slice of NaNs only (and no initial)
// ends on NaN, which NumPy's nanmin gives too (gpureduce/_planning/plan.py warns "All-NaN slice encountered").
template <class Better, class In>
struct NanExtremeReducer {
    using Acc = typename accumulator<In>::type;
    using V = Acc;
    using Result = In;
    using Partials = NanExtremeReducer<Better, In>;
    __host__ __device__ __forceinline__ static V identity() {
        if constexpr (is_complex<Acc>::value) {
            using P = decltype(Acc().re);
            return Acc(limits<P>::quiet_NaN(), limits<P>::quiet_NaN());
        } else {
            return limits<Acc>::quiet_NaN();
        }
    }
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t) { return convert<Acc>(x); }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) {
        return is_nan(a) ? b : is_nan(b) ? a : Better()(a, b);
    }
    __host__ __device__ __forceinline__ static In finish(const V &v) { return convert<In>(v); }
    __host__ __device__ static V from_initial(const void *initial) {
        return initial ? convert<Acc>(*static_cast<const In *>(initial)) : identity();
    }
};

// nanmean: a NaN element counts for nothing, (0, 0); a slice of NaNs only is 0 / 0, NaN, as NumPy's.
template <class In, class Out>
struct NanMeanReducer : MeanReducer<In, Out> {
    using V = typename MeanReducer<In, Out>::V;
    using Acc = typename MeanReducer<In, Out>::Acc;
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t) {
        return is_nan(x) ? V{Acc(0), 0} : V{convert<Acc>(x), 1};
    }
};

// var and std in one read, by shifted sums: a state holds its count n, a pivot K (one of its own
// elements) and the sums s = sum(x - K) and s2 = sum(|x - K|^2); merging moves the right state onto the left
// one's pivot exactly (s2 + 2 Re(conj(D) s) + n |D|^2, s + n D, with D = K_right - K_left, the difference of two
// data points, so small) and adds.  The variance (s2 - |s|^2 / n) / max(n - ddof, 0) then cancels only as much
// as the pivot lies from the mean in standard deviations: a large common offset (1e8 + N(0, 1), where
// sum(x^2)/n - mean^2 keeps no digit) costs nothing.  No division per element; float64 inside whatever the
// result, rounded once at the end (NumPy's float32 var rounds each of its two passes).  A complex input's
// pivot and s are complex, s2 real, the result real, as NumPy's.  ddof rides in the one initial value every
// result takes (the plan passes it there): elements and the identity carry 0 and the fold adds them up.  A
// non-finite pivot or sum (an inf or a NaN in the slice) gives NaN, NumPy's answer (its x - mean is NaN there).
template <class M>
struct Moments {
    int64_t n;
    M pivot;
    M s;
    double s2;
    double ddof;
};

// std is var's square root, taken in finish() where the parameter says so (param: 1 for std and nanstd), so that
// one set of kernels serves both (ops.def's `kernels` column: std runs var's).
template <class In, class Out, bool kSkipNan>
struct MomentsReducer {
    using M = conditional_t<is_complex<In>::value, cplx<double>, double>;
    using V = Moments<M>;
    using Result = Out;
    using Partials = MomentsReducer<M, Out, kSkipNan>;
    static constexpr bool kReadsParam = true;
    __host__ __device__ __forceinline__ static V identity() { return {0, M(0), M(0), 0.0, 0.0}; }
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t, double = 0.0) {
        if (kSkipNan && is_nan(x)) return identity();
        return {1, convert<M>(x), M(0), 0.0, 0.0};
    }
    // combine(a, element(x)), without the general case's products: the element's own sums are 0
    static constexpr bool kFoldsElements = true;
    __host__ __device__ __forceinline__ static V fold(const V &a, const In &x) {
        if (kSkipNan && is_nan(x)) return a;
        const M y = convert<M>(x);
        if (a.n == 0) return {1, y, M(0), 0.0, a.ddof};
        const M d = y - a.pivot;
        if constexpr (is_complex<M>::value)
            return {a.n + 1, a.pivot, a.s + d, a.s2 + (d.re * d.re + d.im * d.im), a.ddof};
        else
            return {a.n + 1, a.pivot, a.s + d, a.s2 + d * d, a.ddof};
    }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) {
        const double ddof = a.ddof + b.ddof;
        if (a.n == 0) return {b.n, b.pivot, b.s, b.s2, ddof};
        if (b.n == 0) return {a.n, a.pivot, a.s, a.s2, ddof};
        const double nb = double(b.n);
        if constexpr (is_complex<M>::value) {
            const double dr = b.pivot.re - a.pivot.re, di = b.pivot.im - a.pivot.im;
            const double cross = dr * b.s.re + di * b.s.im;  // Re(conj(D) s)
            return {a.n + b.n, a.pivot, M(a.s.re + b.s.re + nb * dr, a.s.im + b.s.im + nb * di),
                    a.s2 + b.s2 + 2.0 * cross + nb * (dr * dr + di * di), ddof};
        } else {
            const double d = b.pivot - a.pivot;
            return {a.n + b.n, a.pivot, a.s + b.s + nb * d, a.s2 + b.s2 + (2.0 * d * b.s + nb * d * d), ddof};
        }
    }
    __host__ __device__ __forceinline__ static Out finish(const V &v, double root) {
        double mean2;  // |s|^2 / n
        bool finite;   // no inf or NaN among the elements (an overflowing s2 is inf, as NumPy's)
        if constexpr (is_complex<M>::value) {
            mean2 = v.n ? (v.s.re * v.s.re + v.s.im * v.s.im) / double(v.n) : 0.0;
            finite = isfinite(v.pivot.re) && isfinite(v.pivot.im) && isfinite(v.s.re) && isfinite(v.s.im);
        } else {
            mean2 = v.n ? v.s * v.s / double(v.n) : 0.0;
            finite = isfinite(v.pivot) && isfinite(v.s);
        }
        const double dof = double(v.n) - v.ddof;
        const double m2 = v.s2 - mean2 < 0.0 ? 0.0 : v.s2 - mean2;  // rounding cannot make it negative
        double var = m2 / (dof > 0.0 ? dof : 0.0);
        // NumPy's var divides by max(dof, 0) (inf, or NaN for 0/0); its nanvar gives NaN wherever dof <= 0
        if (!finite || (kSkipNan && dof <= 0.0)) var = limits<double>::quiet_NaN();
        return convert<Out>(root != 0.0 ? sqrt(var) : var);
    }
    __host__ __device__ static V from_initial(const void *initial) {
        V v = identity();
        if (initial) v.ddof = convert<double>(*static_cast<const Out *>(initial));
        return v;
    }
    // ddof rides in the initial value (from_initial); the parameter is which of the two the call is
    __host__ __device__ static double param(gr_op op, const void *) {
        return op == GR_OP_STD || op == GR_OP_NANSTD ? 1.0 : 0.0;
    }
};

// vector_norm: numpy.linalg.vector_norm of order `ord`, in float64 whatever the input, rounded once at the end.
// One Reducer per kind of order, chosen by the order at run time (reducer_choice below), so each kernel folds
// without asking which order it computes: the sum of squares (ord 2, the default), the sum, largest or smallest
// |x| (1, inf, -inf), and the power sum, which reads ord as its parameter (0: the count of nonzero elements, and
// any other order p: sum(|x|^p)^(1/p)).
// The order, which the plan passes as the initial value (gpureduce/_planning/plan.py), in the result dtype as NumPy rounds it.
template <class Out>
__host__ __device__ double norm_order(const void *initial) {
    return initial ? convert<double>(*static_cast<const Out *>(initial)) : 2.0;
}

template <class In>
__host__ __device__ __forceinline__ double magnitude(const In &x) {
    if constexpr (is_complex<In>::value) return hypot(double(x.re), double(x.im));  // no overflow, as NumPy's abs
    else return fabs(convert<double>(x));
}

// The three sums of Blue's scaled 2-norm (LAPACK's dnrm2, Anderson 2017): each square goes into one of them by its
// magnitude, scaled, so no sum of squares overflows or underflows where the norm does not, and no element costs a
// division.
struct ScaledSquares {
    double big, mid, small;
};

// ord 2: |x|^2 added (a complex x's re^2 + im^2, as NumPy's (x.conj() * x).real).  Only float64 parts need the
// scaled sums: a float32 or float16 square neither overflows nor underflows float64 (the smallest float32
// subnormal is 2^-149, its square 2^-298), so their state is one double.
template <class In, class Out>
struct SumOfSquaresReducer {
    static constexpr bool kScaled = sizeof(In) == (is_complex<In>::value ? 16 : 8);
    using V = conditional_t<kScaled, ScaledSquares, double>;
    using Result = Out;
    using Partials = SumOfSquaresReducer<Out, Out>;
    // Blue's thresholds and scalings for float64: squares of |x| above kBig or below kSmall are taken scaled
    static constexpr double kSmall = 0x1p-511, kBig = 0x1p486, kScaleSmall = 0x1p537, kScaleBig = 0x1p-538;

    __host__ __device__ __forceinline__ static V identity() { return V{}; }
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t) {
        V v{};
        if constexpr (is_complex<In>::value) {
            add_square(v, fabs(double(x.re)));
            add_square(v, fabs(double(x.im)));
        } else {
            add_square(v, magnitude(x));
        }
        return v;
    }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) {
        if constexpr (kScaled) return {a.big + b.big, a.mid + b.mid, a.small + b.small};
        else return a + b;
    }
    __host__ __device__ __forceinline__ static Out finish(const V &v) {
        if constexpr (kScaled) return convert<Out>(blue_sqrt(v));
        else return convert<Out>(sqrt(v));
    }
    __host__ __device__ static V from_initial(const void *) { return identity(); }

  private:
    __host__ __device__ __forceinline__ static void add_square(V &v, double a) {
        if constexpr (kScaled) {
            if (a > kBig) v.big += (a * kScaleBig) * (a * kScaleBig);
            else if (a < kSmall) v.small += (a * kScaleSmall) * (a * kScaleSmall);
            else v.mid += a * a;  // also a NaN (every comparison false)
        } else {
            v += a * a;
        }
    }
    // sqrt(big / kScaleBig^2 + mid + small / kScaleSmall^2) without overflow or underflow (LAPACK's dnrm2 ending)
    __host__ __device__ __forceinline__ static double blue_sqrt(const ScaledSquares &v) {
        if (isnan(v.mid)) return v.mid;
        if (v.big > 0.0) return sqrt(v.big + (v.mid * kScaleBig) * kScaleBig) / kScaleBig;
        if (v.small > 0.0) {
            if (!(v.mid > 0.0)) return sqrt(v.small) / kScaleSmall;
            const double a = sqrt(v.mid), b = sqrt(v.small) / kScaleSmall;
            const double hi = a > b ? a : b, lo = a > b ? b : a;
            return hi * sqrt(1.0 + (lo / hi) * (lo / hi));
        }
        return sqrt(v.mid);
    }
};

// ord 1, inf, -inf: |x| folded with Sum, Max or Min (NaN propagating, as NumPy's max).  The identity of the
// largest is 0, NumPy's initial=0 there; the smallest of nothing is refused before it runs (gpureduce/_planning/plan.py).
template <class Op, class In, class Out>
struct AbsFoldReducer {
    using V = double;
    using Result = Out;
    using Partials = AbsFoldReducer<Op, Out, Out>;
    __host__ __device__ __forceinline__ static V identity() {
        return is_same<Op, Max>::value ? 0.0 : Op::template identity<double>();
    }
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t) { return magnitude(x); }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) { return Op()(a, b); }
    __host__ __device__ __forceinline__ static Out finish(const V &v) { return convert<Out>(v); }
    __host__ __device__ static V from_initial(const void *) { return identity(); }
};

// ord 0 and any other order p, read as the parameter: (x != 0) added (a NaN is nonzero, as NumPy's x != 0), or
// |x|^p added and the sum raised to 1/p (0 of nothing gives inf for p < 0, as NumPy's 0 ** (1/p)).
template <class In, class Out>
struct PowerSumReducer {
    static constexpr bool kReadsParam = true;
    using V = double;
    using Result = Out;
    using Partials = PowerSumReducer<Out, Out>;
    __host__ __device__ __forceinline__ static V identity() { return 0.0; }
    __host__ __device__ __forceinline__ static V element(const In &x, int64_t, double p) {
        const double a = magnitude(x);
        return p == 0.0 ? (a != 0.0 ? 1.0 : 0.0) : pow(a, p);
    }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) { return a + b; }
    __host__ __device__ __forceinline__ static Out finish(const V &v, double p) {
        return convert<Out>(p == 0.0 ? v : pow(v, 1.0 / p));
    }
    __host__ __device__ static V from_initial(const void *) { return identity(); }
    __host__ __device__ static double param(gr_op, const void *initial) { return norm_order<Out>(initial); }
};

// dot and vdot: the sum of x*y over the pairs of elements of two operands (x conjugated for vdot), in the
// accumulator of the result dtype: float16 in float32 and integers wrapping around, as NumPy's dot loops do (they
// add in a wider integer and truncate once, which wraps to the same value).  Reads two operands (kSecondOperand:
// the kernels pass it pairs through seg_load, never the vectorised one-operand paths).
template <class In, class Out, bool kConj>
struct DotReducer {
    static constexpr bool kSecondOperand = true;
    using Acc = typename accumulator<Out>::type;
    using V = Acc;
    using Result = Out;
    using Partials = FoldReducer<Sum, Out, Out>;
    __host__ __device__ __forceinline__ static V identity() { return Partials::identity(); }
    __host__ __device__ __forceinline__ static V element(const In &x, const In &y, int64_t) {
        Acc a = convert<Acc>(x);
        if constexpr (kConj && is_complex<Acc>::value) a.im = -a.im;
        return Prod()(a, convert<Acc>(y));
    }
    __host__ __device__ __forceinline__ static V combine(const V &a, const V &b) { return Sum()(a, b); }
    __host__ __device__ __forceinline__ static Out finish(const V &v) { return convert<Out>(v); }
    // the initial value only says whether to conjugate (reducer_choice): NumPy's dot starts from +0
    __host__ __device__ static V from_initial(const void *) { return Sum::identity<Acc>(); }
};

// A Reducer over pairs of elements of two operands declares kSecondOperand (DotReducer).
template <class Red, class = void>
struct takes_second : false_type {};
template <class Red>
struct takes_second<Red, void_t<decltype(Red::kSecondOperand)>> : true_type {};

// A Reducer that reads the operator's parameter declares kReadsParam and takes it as element()'s third and
// finish()'s second argument; the kernels call every Reducer through element_of / finish_of with
// SegProblem::param, which param_of takes from the call: the initial value the plan passes, or the operator.
template <class Red, class = void>
struct reads_param : false_type {};
template <class Red>
struct reads_param<Red, void_t<decltype(Red::kReadsParam)>> : true_type {};

template <class Red, class In>
__host__ __device__ __forceinline__ typename Red::V element_of(const In &x, int64_t r, double param) {
    // a Reducer of two operands is read through seg_load only: the one-operand paths that call this are planned
    // out for it (segments.cuh: reads_in_alone), but still compiled
    if constexpr (takes_second<Red>::value) return Red::identity();
    else if constexpr (reads_param<Red>::value) return Red::element(x, r, param);
    else return Red::element(x, r);
}
// A Reducer whose combine() of a running value with one element costs more than folding the element in directly
// (MomentsReducer's general case, in float64) declares kFoldsElements and fold(v, x); the kernels fold each
// element they read through fold_element.  One whose element step can use that r is past every position in v
// (NanArgReducer: no position compare on a tie) declares kFoldsAtPositions and fold_at(v, x, r).
// fold_element's contract: each accumulator's elements are folded in increasing r, after nothing but the
// identity and elements of smaller r (every caller in axis/segments_kernels.cuh reads its elements in order).
template <class Red, class = void>
struct folds_elements : false_type {};
template <class Red>
struct folds_elements<Red, void_t<decltype(Red::kFoldsElements)>> : true_type {};
template <class Red, class = void>
struct folds_at_positions : false_type {};
template <class Red>
struct folds_at_positions<Red, void_t<decltype(Red::kFoldsAtPositions)>> : true_type {};

template <class Red, class In>
__host__ __device__ __forceinline__ typename Red::V fold_element(const typename Red::V &v, const In &x, int64_t r,
                                                                 double param) {
    if constexpr (folds_elements<Red>::value && !takes_second<Red>::value) return Red::fold(v, x);
    else if constexpr (folds_at_positions<Red>::value && !takes_second<Red>::value) return Red::fold_at(v, x, r);
    else return Red::combine(v, element_of<Red>(x, r, param));
}

template <class Red>
__host__ __device__ __forceinline__ typename Red::Result finish_of(const typename Red::V &v, double param) {
    if constexpr (reads_param<Red>::value) return Red::finish(v, param);
    else return Red::finish(v);
}
template <class Red>
__host__ __device__ double param_of(gr_op op, const void *initial) {
    if constexpr (reads_param<Red>::value) return Red::param(op, initial);
    else return 0.0;
}

// The Reducer for (op, In, Out); Out is the result type the caller asked for.
template <gr_op OP, class In, class Out> struct reducer_for { using type = FoldReducer<typename op_functor<OP>::type, In, Out>; };
template <class In, class Out> struct reducer_for<GR_OP_MEAN, In, Out> { using type = MeanReducer<In, Out>; };
template <class In, class Out> struct reducer_for<GR_OP_ARGMIN, In, Out> { using type = ArgReducer<Min, In>; };
template <class In, class Out> struct reducer_for<GR_OP_ARGMAX, In, Out> { using type = ArgReducer<Max, In>; };
template <class In, class Out> struct reducer_for<GR_OP_ANY, In, Out> { using type = TruthReducer<false, In>; };
template <class In, class Out> struct reducer_for<GR_OP_ALL, In, Out> { using type = TruthReducer<true, In>; };
template <class In, class Out> struct reducer_for<GR_OP_COUNT_NONZERO, In, Out> {
    using type = CountReducer<In>;
};
template <class In, class Out> struct reducer_for<GR_OP_NANSUM, In, Out> {
    using type = NanFoldReducer<Sum, In, Out>;
};
template <class In, class Out> struct reducer_for<GR_OP_NANPROD, In, Out> {
    using type = NanFoldReducer<Prod, In, Out>;
};
template <class In, class Out> struct reducer_for<GR_OP_NANMIN, In, Out> { using type = NanExtremeReducer<Min, In>; };
template <class In, class Out> struct reducer_for<GR_OP_NANMAX, In, Out> { using type = NanExtremeReducer<Max, In>; };
template <class In, class Out> struct reducer_for<GR_OP_NANMEAN, In, Out> { using type = NanMeanReducer<In, Out>; };
template <class In, class Out> struct reducer_for<GR_OP_VAR, In, Out> { using type = MomentsReducer<In, Out, false>; };
template <class In, class Out> struct reducer_for<GR_OP_STD, In, Out> { using type = MomentsReducer<In, Out, false>; };
template <class In, class Out> struct reducer_for<GR_OP_NANARGMIN, In, Out> { using type = NanArgReducer<Min, In>; };
template <class In, class Out> struct reducer_for<GR_OP_NANARGMAX, In, Out> { using type = NanArgReducer<Max, In>; };
template <class In, class Out> struct reducer_for<GR_OP_NANVAR, In, Out> { using type = MomentsReducer<In, Out, true>; };
template <class In, class Out> struct reducer_for<GR_OP_NANSTD, In, Out> { using type = MomentsReducer<In, Out, true>; };
template <class In, class Out> struct reducer_for<GR_OP_PTP, In, Out> { using type = PtpReducer<In>; };
template <class In, class Out> struct reducer_for<GR_OP_LOGSUMEXP, In, Out> { using type = LogSumExpReducer<In, Out>; };
template <class In, class Out> struct reducer_for<GR_OP_DOT, In, Out> { using type = DotReducer<In, Out, false>; };


// The Reducers an operator may run, numbered: reducer_alternative<OP, In, Out, I>::type for I below
// reducer_choice<OP, In, Out>::kCount, and which one a call (`s`) runs, reducer_choice::index(s): reducer_for's
// only, or for vector_norm the one of its order (the initial value), for logsumexp the weighted one when b is
// given (the second operand), for dot of complex inputs the conjugating one for vdot.  A number names a Reducer
// in a kernel compiled on first use (axis/segments.cuh: JitSegKernels), so it never changes meaning.
template <gr_op OP, class In, class Out, int I>
struct reducer_alternative { using type = typename reducer_for<OP, In, Out>::type; };
template <class In, class Out> struct reducer_alternative<GR_OP_LOGSUMEXP, In, Out, 1> {
    using type = WeightedLogSumExpReducer<In, Out>;
};
template <class In, class Out> struct reducer_alternative<GR_OP_VECTOR_NORM, In, Out, 0> {
    using type = SumOfSquaresReducer<In, Out>;
};
template <class In, class Out> struct reducer_alternative<GR_OP_VECTOR_NORM, In, Out, 1> {
    using type = AbsFoldReducer<Sum, In, Out>;
};
template <class In, class Out> struct reducer_alternative<GR_OP_VECTOR_NORM, In, Out, 2> {
    using type = AbsFoldReducer<Max, In, Out>;
};
template <class In, class Out> struct reducer_alternative<GR_OP_VECTOR_NORM, In, Out, 3> {
    using type = AbsFoldReducer<Min, In, Out>;
};
template <class In, class Out> struct reducer_alternative<GR_OP_VECTOR_NORM, In, Out, 4> {
    using type = PowerSumReducer<In, Out>;
};
template <class In, class Out> struct reducer_alternative<GR_OP_DOT, In, Out, 1> { using type = DotReducer<In, Out, true>; };

template <gr_op OP, class In, class Out>
struct reducer_choice {
    static constexpr int kCount = 1;
    __host__ __device__ static int index(const gr_segments *) { return 0; }
};
template <class In, class Out>
struct reducer_choice<GR_OP_LOGSUMEXP, In, Out> {
    static constexpr int kCount = 2;
    __host__ __device__ static int index(const gr_segments *s) { return s->second ? 1 : 0; }
};
template <class In, class Out>
struct reducer_choice<GR_OP_VECTOR_NORM, In, Out> {
    static constexpr int kCount = 5;
    __host__ __device__ static int index(const gr_segments *s) {
        const double ord = norm_order<Out>(s->initial), inf = limits<double>::infinity();
        return ord == 2.0 ? 0 : ord == 1.0 ? 1 : ord == inf ? 2 : ord == -inf ? 3 : 4;
    }
};
// dot's initial value is vdot's "conjugate the first operand" flag: nonzero bytes (Python passes 1 for vdot).
template <class In, class Out>
struct reducer_choice<GR_OP_DOT, In, Out> {
    static constexpr int kCount = is_complex<In>::value ? 2 : 1;
    __host__ __device__ static int index(const gr_segments *s) {
        bool conj = false;
        for (size_t i = 0; is_complex<In>::value && s->initial && i < sizeof(Out); i++)
            conj = conj || static_cast<const char *>(s->initial)[i];
        return conj ? 1 : 0;
    }
};

// Calls f(Red{}, I) with the Reducer alternative I that runs (op, In, Out) for this call; every alternative is
// instantiated.
template <gr_op OP, class In, class Out, int I = 0, class F>
auto visit_reducer(const gr_segments *s, F &&f) {
    if constexpr (I + 1 < reducer_choice<OP, In, Out>::kCount) {
        if (reducer_choice<OP, In, Out>::index(s) != I) return visit_reducer<OP, In, Out, I + 1>(s, f);
    }
    return f(typename reducer_alternative<OP, In, Out, I>::type{}, I);
}

}  // namespace gr
