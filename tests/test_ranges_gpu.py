"""The segmented reductions against NumPy on the GPU (gpureduce.reduceat, gpureduce.segmented_reduce; issue 40).

The reference of a range is NumPy's own function of that operator over the range's slice (``numpy.add.reduceat``
itself where it exists, to hold its rules too); integers, bool, min/max and the positions must match exactly,
floating results lie within a float64 reference's error bound that grows with the range's length.  Fresh random
data, range lengths across every algorithm's regime (1-16, around a warp, around a block's 2048 switch, long ranges
cut into parts), empty, overlapping, reversed and negative bounds, every layout of the axis, host and device inputs,
host and device bounds, out= poisoned before each run, and more than 2^31 elements.
"""
import math

import numpy as np
import pytest

import gpureduce
from conftest import DEVICE_LIBRARIES, reduction_data
from gpureduce._planning.ranges import OPS

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")

VARIANTS = list(gpureduce.segmented_variants())
DTYPES = ["bool", "int8", "uint16", "int32", "int64", "uint64", "float16", "float32", "float64", "complex64"]
EXACT_RESULTS = {"min", "max", "argmin", "argmax", "nanmin", "nanmax", "nanargmin", "nanargmax", "any", "all",
                 "count_nonzero", "ptp"}
NAN_OPS = {op for op in OPS if op.startswith("nan")}
NO_IDENTITY = {"min", "max", "argmin", "argmax", "nanmin", "nanmax", "nanargmin", "nanargmax", "ptp"}


def numpy_function(op):
    from gpureduce.testing import NUMPY_FUNCTIONS
    return NUMPY_FUNCTIONS[op]


def takes(op, dtype):
    """Whether NumPy (and gpureduce) take `op` over `dtype`."""
    dt = np.dtype(dtype)
    return not ((op == "logsumexp" and dt.kind == "c") or (op == "ptp" and dt == np.bool_))


def range_bounds(form, bounds, n):
    """[(r0, r1)] of each range by NumPy's rules."""
    if form == "reduceat":
        (idx,) = bounds
        ends = list(idx[1:]) + [n]
        return [(int(s), int(e) if e > s else int(s) + 1) for s, e in zip(idx, ends)]
    starts, stops = bounds
    out = []
    for s, e in zip(starts, stops):
        s, e = slice(int(s), int(e)).indices(n)[:2]
        out.append((s, max(s, e)))
    return out


def reference(op, a, form, bounds, axis, kw):
    """NumPy's answer: its reduceat where it has one, else the function over each range's slice."""
    f = numpy_function(op)
    parts = []
    for r0, r1 in range_bounds(form, bounds, a.shape[axis]):
        piece = np.take(a, np.arange(r0, r1), axis=axis)
        with np.errstate(all="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                parts.append(np.asarray(f(piece, axis=axis, **kw)))
    return np.stack(parts, axis=axis) if parts else None


def upcast(a):
    dt = a.dtype
    if dt.kind == "c":
        return a.astype(np.complex128)
    if dt.kind == "f" or dt.name == "bfloat16":
        return a.astype(np.float64)
    return a


def check(op, got, a, form, bounds, axis, kw, case):
    got = cp.asnumpy(got) if isinstance(got, cp.ndarray) else np.asarray(got)
    want = reference(op, a, form, bounds, axis, kw)
    if want is None:
        assert got.size == 0, case
        return
    assert got.shape == want.shape, f"{case}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{case}: dtype {got.dtype} != {want.dtype}"
    if op in EXACT_RESULTS or got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=case)
        return
    # floating: a float64 reference of the same slices, an error bound growing with the range's length
    kw64 = {k: v for k, v in kw.items() if k != "dtype"}
    exact = reference(op, upcast(a), form, bounds, axis, kw64)
    lengths = np.array([r1 - r0 for r0, r1 in range_bounds(form, bounds, a.shape[axis])])
    shape = [1] * a.ndim
    shape[axis] = len(lengths)
    longest = np.maximum(lengths, 1).reshape(shape)
    eps = np.finfo(got.dtype if got.dtype.kind != "c" else got.real.dtype).eps
    if op in ("sum", "nansum", "mean", "nanmean"):
        scale = reference("nansum" if op.startswith("nan") else "sum", np.abs(upcast(a)), form, bounds, axis, {})
        if op in ("mean", "nanmean"):
            scale = scale / longest
        bound = 4 * eps * (np.log2(longest) + 2) * np.abs(scale) + 4 * eps * np.abs(exact)
    elif op in ("prod", "nanprod"):
        bound = 4 * eps * (longest + 2) * np.abs(exact)
    else:  # var, std, logsumexp, vector_norm: well-conditioned data
        bound = 64 * eps * (np.log2(longest) + 2) * (np.abs(exact) + 1)
    err = np.abs(got.astype(exact.dtype) - exact)
    both_nan = np.isnan(got) & np.isnan(exact) if got.dtype.kind != "c" else np.isnan(got) & np.isnan(exact)
    same_inf = (got == exact) | ((got == want) & ~np.isfinite(want))  # NumPy's own overflow (float16 products)
    ok = (err <= bound) | both_nan | same_inf
    assert ok.all(), f"{case}: worst error {err[~ok].max()} > bound {bound[~ok].min()} at {np.argwhere(~ok)[:3]}"


def ranges_of(kind, n, rng, count=None):
    """(starts, stops) of a length distribution over an axis of n elements."""
    if kind == "tiny":
        lengths = rng.integers(1, 17, size=count or max(1, n // 8))
    elif kind == "thousand":
        lengths = rng.integers(900, 1100, size=count or max(1, n // 1000))
    elif kind == "long":
        lengths = np.full(count or 3, max(1, n // (count or 3)))
    elif kind == "power":
        lengths = np.minimum((rng.pareto(1.2, size=count or max(1, n // 40)) * 4).astype(np.int64) + 1, n)
    else:
        raise ValueError(kind)
    ends = np.minimum(np.cumsum(lengths), n)
    starts = np.concatenate([[0], ends[:-1]])
    keep = starts < n  # every range holds elements (max, argmax refuse empty ones)
    return starts[keep], ends[keep]


# ---------------------------------------------------------------- every operator x dtype, both forms

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_every_operator_and_dtype_matches_numpy(op, dtype, rng):
    if not takes(op, dtype):
        pytest.skip(f"{op} takes no {dtype}")
    n = 3001
    a = reduction_data(rng, dtype, (n,), "prod" if op == "nanprod" else op)  # products near 1: no overflow
    if op == "nanprod" and a.dtype.kind in "fc":
        a[rng.random(n) < 0.05] = np.nan
    idx = np.sort(rng.choice(n, size=40, replace=False))
    idx[5], idx[6] = idx[6], idx[5]  # one reversed pair: reduceat's one-element rule
    starts = rng.integers(-n, n, size=50)
    stops = starts + rng.integers(1, 400, size=50)
    kw = {}
    for x, where in ((a, "host"), (cp.asarray(a), "cupy")):
        try:
            reference(op, a, "reduceat", (idx,), 0, kw)
        except ValueError:  # NumPy's "All-NaN slice encountered" of nanargmin/nanargmax: ours too
            with pytest.raises(ValueError, match="All-NaN slice encountered"):
                gpureduce.reduceat(op, x, idx)
            continue
        got = gpureduce.reduceat(op, x, idx, **kw)
        check(op, got, a, "reduceat", (idx,), 0, kw, f"reduceat {op} {dtype} {where}")
        if op in NO_IDENTITY:  # no empty range: starts within the axis, stops beyond them
            s = np.abs(starts) % n
            e = np.minimum(s + np.abs(stops - starts), n)
            bounds = (s, e)
        else:
            bounds = (starts, stops)
        try:
            reference(op, a, "segmented_reduce", bounds, 0, kw)
        except ValueError:
            with pytest.raises(ValueError, match="All-NaN slice encountered"):
                gpureduce.segmented_reduce(op, x, *bounds)
            continue
        got = gpureduce.segmented_reduce(op, x, *bounds)
        check(op, got, a, "segmented_reduce", bounds, 0, kw, f"segmented_reduce {op} {dtype} {where}")


# ---------------------------------------------------------------- every algorithm, every length regime

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kind", ["tiny", "thousand", "long", "power"])
@pytest.mark.parametrize("op, dtype", [("sum", "float32"), ("sum", "int64"), ("max", "float32"),
                                       ("argmax", "float32"), ("mean", "float16"), ("nanmin", "float64"),
                                       ("var", "float32")])
def test_every_algorithm_in_every_length_regime(variant, kind, op, dtype, rng):
    n = 1 << 17 if kind != "long" else (1 << 21) + 5
    a = reduction_data(rng, dtype, (n,), op)
    if op == "argmax":
        a[rng.integers(0, n, 50)] = a.max()  # ties: the first position of each range wins
    starts, stops = ranges_of(kind, n, rng)
    x = cp.asarray(a)
    got = gpureduce.segmented_reduce(op, x, starts, stops, variant=variant)
    check(op, got, a, "segmented_reduce", (starts, stops), 0, {}, f"{op} {dtype} {kind} {variant}")
    again = gpureduce.segmented_reduce(op, x, starts, stops, variant=variant)
    np.testing.assert_array_equal(cp.asnumpy(again), cp.asnumpy(got), err_msg="not deterministic")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("count", [1, 2, 7, 64])
def test_few_long_ranges_cut_into_parts(variant, count, rng):
    n = (1 << 22) + 3
    a = rng.standard_normal(n).astype(np.float32)
    starts, stops = ranges_of("long", n, rng, count)
    got = gpureduce.segmented_reduce("sum", cp.asarray(a), starts, stops, variant=variant)
    check("sum", got, a, "segmented_reduce", (starts, stops), 0, {}, f"long x{count} {variant}")
    got = gpureduce.segmented_reduce("argmin", cp.asarray(a), starts, stops, variant=variant)
    check("argmin", got, a, "segmented_reduce", (starts, stops), 0, {}, f"argmin long x{count} {variant}")


def tiny_and_huge(rng, huge, tiny=500_000):
    """CSR offsets of `tiny` ranges of 1-4 elements with `huge` ranges of 65,536-70,000 among them (auto's lanes
    leave those to the LONG kernel, which cuts up to 192 of them into parts)."""
    lengths = rng.integers(1, 5, size=tiny + huge)
    lengths[rng.choice(tiny + huge, size=huge, replace=False)] = rng.integers(65_536, 70_001, size=huge)
    return np.concatenate([[0], np.cumsum(lengths)])


@pytest.mark.parametrize("huge", [1, 5, 192, 193])
@pytest.mark.parametrize("op, dtype", [("sum", "float32"), ("sum", "int64"), ("argmax", "float32"),
                                       ("max", "int32"), ("mean", "float64")])
def test_huge_ranges_among_tiny_ones(huge, op, dtype, rng):
    # 192 huge ranges are cut into parts by every block of the grid, 193 are not (each a block): both NumPy's
    # answer, deterministic; every tenth in a second row (a kept dimension before the axis)
    offsets = tiny_and_huge(rng, huge)
    n = int(offsets[-1])
    a = reduction_data(rng, dtype, (n,), op)
    x = cp.asarray(a)
    starts, stops = cp.asarray(offsets[:-1]), cp.asarray(offsets[1:])
    got = gpureduce.segmented_reduce(op, x, starts, stops)
    again = gpureduce.segmented_reduce(op, x, starts, stops)
    np.testing.assert_array_equal(cp.asnumpy(again), cp.asnumpy(got), err_msg="not deterministic")
    got = cp.asnumpy(got)
    lengths = np.diff(offsets)
    big = np.flatnonzero(lengths >= 65_536)
    assert len(big) == huge
    if op == "argmax":
        np.testing.assert_array_equal(a[offsets[:-1] + got], np.maximum.reduceat(a, offsets[:-1]))
        for k in big:
            assert got[k] == np.argmax(a[offsets[k]:offsets[k + 1]]), f"range {k}"
        return
    if op == "max" or a.dtype.kind in "iu":
        want = np.maximum.reduceat(a, offsets[:-1]) if op == "max" else np.add.reduceat(a, offsets[:-1])
        np.testing.assert_array_equal(got, want)
        return
    exact = np.add.reduceat(a.astype(np.float64), offsets[:-1])
    scale = np.add.reduceat(np.abs(a.astype(np.float64)), offsets[:-1])
    if op == "mean":
        exact, scale = exact / lengths, scale / lengths
    eps = np.finfo(a.dtype).eps
    bound = 4 * eps * (np.log2(lengths) + 2) * scale + 4 * eps * np.abs(exact)
    err = np.abs(got - exact)
    assert (err <= bound).all(), f"worst {err.max()} at {np.argmax(err - bound)}"
    if huge <= 5:  # the huge ranges as a second row's (i0 = 1): the same answer
        two = cp.stack([x, x[::-1]])
        rows = cp.asnumpy(gpureduce.segmented_reduce(op, two, starts, stops, axis=1))
        np.testing.assert_array_equal(rows[0], got)


@pytest.mark.parametrize("length", [1, 2, 3, 15, 16, 17, 31, 32, 33, 255, 256, 257, 2047, 2048, 2049, 8193])
def test_lengths_around_every_switch(length, rng):
    n = length * 37 + 5
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    starts = np.arange(0, n - length + 1, length)
    stops = starts + length
    for variant in VARIANTS:
        got = gpureduce.segmented_reduce("sum", cp.asarray(a), starts, stops, variant=variant)
        check("sum", got, a, "segmented_reduce", (starts, stops), 0, {}, f"length {length} {variant}")


# ---------------------------------------------------------------- NumPy's rules

def test_numpys_reduceat_examples():
    a = np.arange(8)
    for idx in ([0, 4, 1, 5], [3, 3, 5], [5, 2], [0, 0, 0], [7]):
        np.testing.assert_array_equal(gpureduce.reduceat("sum", cp.asarray(a), idx).get(), np.add.reduceat(a, idx))
    np.testing.assert_array_equal(gpureduce.reduceat("min", a, [0, 3, 3, 6]), np.minimum.reduceat(a, [0, 3, 3, 6]))
    np.testing.assert_array_equal(gpureduce.reduceat("max", a, [0, 3, 3, 6]), np.maximum.reduceat(a, [0, 3, 3, 6]))
    three = np.arange(3)
    np.testing.assert_array_equal(gpureduce.reduceat("sum", three, [0, 0, 0, 1, 1, 2, 2]),
                                  np.add.reduceat(three, [0, 0, 0, 1, 1, 2, 2]))
    b = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(gpureduce.reduceat("sum", b, [0, 2, 3], axis=1), np.add.reduceat(b, [0, 2, 3], axis=1))
    np.testing.assert_array_equal(gpureduce.reduceat("sum", b, [0, 2, 3], axis=-1), np.add.reduceat(b, [0, 2, 3], axis=1))
    # test_reduceat_shifting_sum (numpy/_core/tests/test_ufunc.py)
    L = 6
    x = np.arange(L)
    idx = np.array(list(zip(np.arange(L - 2), np.arange(L - 2) + 2))).ravel()
    np.testing.assert_array_equal(gpureduce.reduceat("sum", x, idx)[::2], [1, 3, 5, 7])
    # NaN: maximum propagates it (fmax does not: gpureduce's nanmax)
    f = np.array([1, np.nan, 3, np.nan])
    np.testing.assert_array_equal(gpureduce.reduceat("min", f, [0, 2]), np.minimum.reduceat(f, [0, 2]))
    np.testing.assert_array_equal(gpureduce.reduceat("nanmin", f, [0, 2]), np.fmin.reduceat(f, [0, 2]))


def test_reduceat_empty_indices():
    # test_reduceat_empty (numpy/_core/tests/test_umath.py)
    x = np.ones((5, 2))
    assert gpureduce.reduceat("sum", x, [], axis=0).shape == (0, 2)
    assert gpureduce.reduceat("sum", x, [], axis=1).shape == (5, 0)
    assert gpureduce.reduceat("sum", cp.asarray(x), [], axis=1).shape == (5, 0)


def test_the_segmented_reduce_prs_examples():
    a = np.arange(8)
    cases = [(([0, 4], [4, 8]), {}, [6, 22]), (([1, 5], [3, 7]), {}, [3, 11]), (([0, 2], [5, 4]), {}, [10, 5]),
             (([0, 4], [0, 4]), {}, [0, 0]), (([0, 4], [4, 8]), {"initial": 100}, [106, 122])]
    for (starts, stops), kw, want in cases:
        assert gpureduce.segmented_reduce("sum", a, starts, stops, **kw).tolist() == want
        assert gpureduce.segmented_reduce("sum", cp.asarray(a), starts, stops, **kw).get().tolist() == want
    t = np.arange(10.0)
    assert gpureduce.segmented_reduce("sum", t, [-3, -10], [-1, 3]).tolist() == [15, 3]
    assert gpureduce.segmented_reduce("sum", t, [-100, 8], [100, 100]).tolist() == [45, 17]
    assert gpureduce.segmented_reduce("sum", t, [5], [2]).tolist() == [0]
    assert gpureduce.segmented_reduce("sum", np.zeros(0), [0, 5], [10, 20]).tolist() == [0, 0]
    assert gpureduce.segmented_reduce("max", np.zeros((0, 5)), [0, 2], [0, 5], axis=1).shape == (0, 2)
    # an empty range gives the identity or initial
    assert gpureduce.segmented_reduce("prod", t, [0, 3], [3, 3]).tolist() == [0.0, 1.0]
    assert gpureduce.segmented_reduce("min", t, [0, 3], [3, 3], initial=-5.0).tolist() == [-5.0, -5.0]
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        m = gpureduce.segmented_reduce("mean", t, [0, 3], [3, 3])
    assert m[0] == 1.0 and np.isnan(m[1])


# ---------------------------------------------------------------- layouts, kinds, out=

@pytest.mark.parametrize("shape, axis", [((64, 1000), 1), ((1000, 64), 0), ((7, 300, 5), 1), ((300, 7, 5), 0),
                                         ((5, 7, 300), 2), ((3, 1, 200), 2), ((200, 1), 0), ((1, 200), 1)])
@pytest.mark.parametrize("view", ["c", "transposed", "strided"])
def test_every_layout(shape, axis, view, rng):
    a = rng.standard_normal(shape).astype(np.float32)
    if view == "transposed":
        a = np.ascontiguousarray(a.T).T
    elif view == "strided":
        a = np.repeat(a, 2, axis=-1)[..., ::2]
    n = a.shape[axis]
    idx = np.sort(rng.choice(n, size=min(n, 9), replace=False))
    starts, stops = ranges_of("tiny", n, rng)
    for x in (a, cp.asarray(a)):
        for op in ("sum", "argmax", "max"):
            check(op, gpureduce.reduceat(op, x, idx, axis=axis), a, "reduceat", (idx,), axis, {}, f"{op} {shape} {axis}")
            check(op, gpureduce.segmented_reduce(op, x, starts, stops, axis=axis), a, "segmented_reduce",
                  (starts, stops), axis, {}, f"{op} {shape} {axis} {view}")


@pytest.mark.parametrize("library", sorted(DEVICE_LIBRARIES))
def test_device_inputs_of_every_library_give_their_kind(library, rng):
    make = DEVICE_LIBRARIES[library]
    a = rng.standard_normal((40, 100)).astype(np.float32)
    x = make(a)
    got = gpureduce.reduceat("sum", x, [0, 10, 50], axis=1)
    assert type(got) is type(x) or library == "numba"
    check("sum", gpureduce.testing.to_numpy(got), a, "reduceat", ([0, 10, 50],), 1, {}, library)


@pytest.mark.parametrize("bounds_dtype", ["int32", "int64", "uint8"])
def test_device_bounds(bounds_dtype, rng):
    a = rng.standard_normal(5000).astype(np.float64)
    starts = np.sort(rng.integers(0, 250, 20)).astype(bounds_dtype)
    stops = (starts + rng.integers(0, 5, 20)).astype(bounds_dtype)
    x = cp.asarray(a)
    got = gpureduce.segmented_reduce("sum", x, cp.asarray(starts), cp.asarray(stops))
    check("sum", got, a, "segmented_reduce", (starts.astype(np.int64), stops.astype(np.int64)), 0, {}, bounds_dtype)
    got = gpureduce.reduceat("max", x, cp.asarray(starts[::3][np.argsort(starts[::3])]))
    check("max", got, a, "reduceat", (np.sort(starts[::3]).astype(np.int64),), 0, {}, bounds_dtype)
    strided = cp.asarray(np.repeat(starts, 2))[::2]  # a strided device array of bounds
    got = gpureduce.segmented_reduce("sum", x, strided, cp.asarray(stops))
    check("sum", got, a, "segmented_reduce", (starts.astype(np.int64), stops.astype(np.int64)), 0, {}, "strided")


@pytest.mark.parametrize("library", ["cupy", "torch"])
def test_device_csr_offsets_are_read_in_place(library, rng):
    """Contiguous int64 device starts and stops (CSR offsets' two views, or two arrays) are the plan's bounds and
    stops themselves, read in place, nothing copied (issue 40: the copy took 40% of a tiny-range call); a strided or
    narrower one is copied alone; out= overlapping the stops is refused; scans read them the same way."""
    from gpureduce._planning.ranges import prepare_ranges, prepare_scan_ranges
    lengths = rng.integers(1, 17, 300)  # no empty range: NumPy's reference raises for max of one
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    a = rng.standard_normal(int(offsets[-1])).astype(np.float32)
    if library == "torch":
        torch = pytest.importorskip("torch")
        x, off = torch.from_numpy(a).cuda(), torch.from_numpy(offsets).cuda()
        obj_ptr = lambda o: o.data_ptr()  # noqa: E731
    else:
        x, off = cp.asarray(a), cp.asarray(offsets)
        obj_ptr = lambda o: o.data.ptr  # noqa: E731
    starts, stops = off[:-1], off[1:]
    plan = prepare_ranges("segmented_reduce", "sum", x, (starts, stops))[0]
    bounds, apart = plan.ranges[0], plan.ranges[6]
    assert obj_ptr(bounds.obj) == obj_ptr(starts) and obj_ptr(apart.obj) == obj_ptr(stops)
    for op in ("sum", "max", "argmin"):
        got = gpureduce.segmented_reduce(op, x, starts, stops)
        check(op, gpureduce.testing.to_numpy(got), a, "segmented_reduce", (offsets[:-1], offsets[1:]), 0, {}, library)
    plan = prepare_scan_ranges("sum", x, starts, stops)[0]
    assert obj_ptr(plan.ranges[0].obj) == obj_ptr(starts) and obj_ptr(plan.ranges[6].obj) == obj_ptr(stops)
    want = np.concatenate([np.cumsum(a[s:e], dtype=np.float64) for s, e in zip(offsets[:-1], offsets[1:])])
    got = gpureduce.testing.to_numpy(gpureduce.segmented_scan("sum", x, starts, stops))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    if library == "cupy":
        narrow = cp.asarray(offsets[1:].astype(np.int32))  # copied alone, the starts still read in place
        plan = prepare_ranges("segmented_reduce", "sum", x, (starts, narrow))[0]
        assert plan.ranges[0].obj.data.ptr == starts.data.ptr and plan.ranges[6].dtype == np.int64
        got = gpureduce.segmented_reduce("sum", x, starts, narrow)
        check("sum", got, a, "segmented_reduce", (offsets[:-1], offsets[1:]), 0, {}, "narrow stops")
        out = cp.zeros(len(offsets) - 1, np.int64)
        with pytest.raises(ValueError, match="shares memory with the ranges' bounds"):
            gpureduce.segmented_reduce("sum", cp.asarray(a.astype(np.int64)), starts, out, out=out)


def test_empty_device_ranges_give_the_identity():
    a = cp.asarray(np.arange(8.0))
    starts, stops = cp.asarray([0, 4]), cp.asarray([4, 4])
    assert gpureduce.segmented_reduce("max", a, starts, stops).get().tolist() == [3.0, -np.inf]
    assert gpureduce.segmented_reduce("argmax", a, starts, stops).get().tolist() == [3, -1]
    assert gpureduce.segmented_reduce("sum", a, starts, stops).get().tolist() == [6.0, 0.0]
    assert gpureduce.segmented_reduce("max", cp.arange(8), starts, stops).get().tolist() == [3, np.iinfo(np.int64).min]


def test_device_indices_out_of_range_are_an_index_error():
    with pytest.raises(IndexError, match="out-of-bounds in add.reduceat"):
        gpureduce.reduceat("sum", cp.arange(8), cp.asarray([0, 9]))


@pytest.mark.parametrize("where", ["host", "device"])
def test_out_is_written_and_returned(where, rng):
    a = rng.standard_normal((30, 200)).astype(np.float32)
    idx = [0, 50, 120]
    want = np.add.reduceat(a.astype(np.float64), idx, axis=1)
    xp = np if where == "host" else cp
    x = a if where == "host" else cp.asarray(a)
    for dt in (np.float32, np.float64):
        out = xp.full((30, 3), np.nan, dt)  # poisoned
        got = gpureduce.reduceat("sum", x, idx, axis=1, out=out)
        assert got is out
        np.testing.assert_allclose(xp.asnumpy(out) if xp is cp else out, want, rtol=1e-5, atol=1e-4)
    out_t = xp.full((3, 30), np.nan, np.float32).T  # a transposed out=
    gpureduce.reduceat("sum", x, idx, axis=1, out=out_t)
    np.testing.assert_allclose(cp.asnumpy(out_t) if xp is cp else out_t, want, rtol=1e-5, atol=1e-4)
    with pytest.raises(ValueError, match="shape"):
        gpureduce.reduceat("sum", x, idx, axis=1, out=xp.zeros((30, 4), np.float32))


def test_dtype_and_initial(rng):
    a = rng.integers(0, 100, 1000).astype(np.int8)
    idx = [0, 100, 999]
    np.testing.assert_array_equal(gpureduce.reduceat("sum", cp.asarray(a), idx, dtype=np.int8).get(),
                                  np.add.reduceat(a, idx, dtype=np.int8))
    np.testing.assert_array_equal(gpureduce.reduceat("sum", a, idx, dtype=np.float32),
                                  np.add.reduceat(a, idx, dtype=np.float32))
    got = gpureduce.segmented_reduce("max", a, [0, 5, 5], [5, 5, 900], initial=50)
    want = [max(50, a[0:5].max()), 50, max(50, a[5:900].max())]
    assert got.tolist() == want


def test_the_stream_of_a_device_input_is_used(rng):
    a = rng.standard_normal(1 << 20).astype(np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.asarray(a)
        got = gpureduce.segmented_reduce("sum", x, [0, 1000], [1000, 1 << 20])
        host = got.get(stream=s)
    np.testing.assert_allclose(host, [a[:1000].sum(dtype=np.float64), a[1000:].sum(dtype=np.float64)], rtol=1e-4)


def test_beyond_2_to_the_31_elements():
    free, _ = cp.cuda.runtime.memGetInfo()
    n = (1 << 31) + 1000
    if free < 3 * n:
        pytest.skip("not enough device memory")
    x = cp.ones(n, dtype=cp.int8)
    x[-1] = 5
    starts = [0, (1 << 31) - 10, n - 1, 5]
    stops = [n, (1 << 31) + 10, n, 5]
    got = gpureduce.segmented_reduce("sum", x, starts, stops).get()
    assert got.tolist() == [n + 4, 20, 5, 0]
    got = gpureduce.segmented_reduce("argmax", x, starts[:3], stops[:3]).get()
    assert got.tolist() == [n - 1, 0, 0]
    del x
