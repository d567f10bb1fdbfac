"""groupby_reduce's scatter (variant "scatter", auto's choice unless ids_sorted=True; issue 40) on the GPU: every
element added to its group's integer accumulators (cuda/axis/group_scatter_kernels.cuh), so a floating sum or mean
is the group's exact sum rounded once and integer sums wrap as NumPy's do; min and max keep an order-preserving key.

Floating results are held bitwise to gpureduce._bounds.exact_result of each group's elements (the reference the
exact variant is held to, itself checked against fractions on the CPU), integers exactly to np.add.at; the bits
must not depend on the order of the (element, id) pairs, on the number of groups (shared-memory accumulators below
48 KB of them, global ones above), on the input's kind or on its layout.
"""
import zlib

import numpy as np
import pytest

import gpureduce
from gpureduce._bounds import exact_result

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")

FLOAT_OPS = ["sum", "nansum", "mean", "nanmean"]


def seeded(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def wide_range(rng, n, dtype):
    """Values of many magnitudes with cancellation, ties and signed zeros: hard for any float accumulation."""
    dt = np.dtype(dtype) if dtype != "bfloat16" else None
    top = 10 if dtype in ("float16", "bfloat16") else 60 if dtype == "float32" else 200
    x = rng.standard_normal(n) * 2.0 ** rng.integers(-top, top // 2, n)
    x[rng.random(n) < 0.05] = 0.0
    x[rng.random(n) < 0.02] = -0.0
    big = rng.random(n) < 0.01
    x[big] = 2.0 ** (top // 2) * np.sign(rng.standard_normal(big.sum()))
    if dtype == "bfloat16":
        import ml_dtypes
        return x.astype(ml_dtypes.bfloat16)
    return x.astype(dt)


def exact_groups(op, a, ids, k, axis=0):
    """Each group's exact_result: the elements of `a` along `axis` whose id is g, correctly rounded once."""
    a = np.asarray(a)
    parts = []
    for g in range(k):
        chunk = np.take(a, np.flatnonzero(ids == g), axis=axis)
        parts.append(exact_result(op, chunk, a.dtype, axis=axis))
    return np.stack(parts, axis=axis)


def to_kind(kind, x):
    if kind == "numpy":
        return x
    if kind == "cupy":
        return cp.asarray(x)
    torch = pytest.importorskip("torch")
    if x.dtype.name == "bfloat16":
        return torch.from_numpy(np.ascontiguousarray(x).view(np.uint16)).view(torch.bfloat16).cuda()
    return torch.from_numpy(np.ascontiguousarray(x)).cuda()


def host(r):
    if hasattr(r, "get"):
        return r.get()
    if type(r).__module__.startswith("torch"):
        import torch
        if r.dtype == torch.bfloat16:
            import ml_dtypes
            return r.view(torch.uint16).cpu().numpy().view(ml_dtypes.bfloat16)
        return r.cpu().numpy()
    return np.asarray(r)


def same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    g = got.view(f"u{got.dtype.itemsize}")
    w = want.view(f"u{want.dtype.itemsize}")
    nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    bad = (g != w) & ~nan
    assert not bad.any(), (np.flatnonzero(bad)[:5], got[bad][:5], want[bad][:5])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("op", FLOAT_OPS)
@pytest.mark.parametrize("kind", ["numpy", "cupy", "torch"])
def test_floating_groups_are_exact(kind, op, dtype):
    if kind == "cupy" and dtype == "bfloat16":
        pytest.skip("CuPy has no bfloat16")
    rng = seeded(kind, op, dtype)
    n, k = 4000, 61
    a = wide_range(rng, n, dtype)
    if op.startswith("nan"):
        a[rng.random(n) < 0.03] = np.nan
    ids = rng.integers(0, k - 5, n)  # the last five groups empty
    got = gpureduce.groupby_reduce(op, to_kind(kind, a), to_kind(kind, ids), k)
    assert type(got).__module__.partition(".")[0] == type(to_kind(kind, a)).__module__.partition(".")[0]
    same_bits(host(got), exact_groups(op, a, ids, k))


@pytest.mark.parametrize("k", [1, 3, 150, 5000])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_bits_do_not_depend_on_order_or_group_count(dtype, k):
    """Shared accumulators (k = 1, 3, 150 for float32) and global ones (5000; float64 from 12 groups): the same
    bits as the exact reference, for the pairs in any order."""
    rng = seeded("order", dtype, k)
    n = 50_000
    a = wide_range(rng, n, dtype)
    ids = rng.integers(0, k, n)
    want = exact_groups("sum", a, ids, k)
    for _ in range(3):
        perm = rng.permutation(n)
        got = gpureduce.groupby_reduce("sum", cp.asarray(a[perm]), cp.asarray(ids[perm]), k)
        same_bits(host(got), want)
    same_bits(host(gpureduce.groupby_reduce("sum", cp.asarray(a), cp.asarray(ids), k, variant="scatter")), want)
    order = np.argsort(ids, kind="stable")  # ids in order: auto scatters them too (ids_sorted=True would not)
    same_bits(host(gpureduce.groupby_reduce("sum", cp.asarray(a[order]), cp.asarray(ids[order]), k)), want)


@pytest.mark.parametrize("id_dtype", ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"])
def test_ids_of_every_integer_dtype(id_dtype):
    rng = seeded("id dtypes", id_dtype)
    a = wide_range(rng, 5000, "float32")
    ids = rng.integers(0, 100, 5000).astype(id_dtype)
    want = exact_groups("sum", a, ids.astype(np.int64), 100)
    for kind in ("numpy", "cupy", "torch"):
        if kind == "torch" and id_dtype in ("uint32", "uint64"):
            continue  # (PyTorch's uint32 and uint64 tensors have few operators)
        same_bits(host(gpureduce.groupby_reduce("sum", to_kind(kind, a), to_kind(kind, ids), 100)), want)


def test_special_values():
    a = np.array([1.0, np.inf, 2.0, -np.inf, np.inf, np.nan, 3.0, 1e308, 1e308, -5.0], dtype=np.float64)
    ids = np.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 4])
    got = host(gpureduce.groupby_reduce("sum", cp.asarray(a), cp.asarray(ids), 6, variant="scatter"))
    np.testing.assert_array_equal(got, [np.inf, np.nan, np.nan, np.inf, -5.0, 0.0])
    got = host(gpureduce.groupby_reduce("nansum", cp.asarray(a), cp.asarray(ids), 6, variant="scatter"))
    np.testing.assert_array_equal(got, [np.inf, np.nan, 3.0, np.inf, -5.0, 0.0])
    got = host(gpureduce.groupby_reduce("nanmean", cp.asarray(a), cp.asarray(ids), 6, variant="scatter"))
    # the exact mean of 1e308 and 1e308 is 1e308: the sum is divided before it is rounded (NumPy's overflows)
    np.testing.assert_array_equal(got, [np.inf, np.nan, 3.0, 1e308, -5.0, np.nan])
    # an exact zero is +0.0, of -0.0 elements too (NumPy's sums start from +0.0)
    z = host(gpureduce.groupby_reduce("sum", cp.asarray(np.array([-0.0, -0.0, 1.0, -1.0])), cp.asarray([0, 0, 1, 1]),
                                      2, variant="scatter"))
    assert not np.signbit(z).any()


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"])
def test_integer_sums_wrap_as_numpy(dtype):
    rng = seeded("ints", dtype)
    n, k = 20_000, 37
    info = np.iinfo(dtype) if dtype != "bool" else None
    a = rng.integers(0, 2, n).astype(bool) if dtype == "bool" else rng.integers(info.min, info.max, n, dtype=dtype,
                                                                                 endpoint=True)
    ids = rng.integers(0, k, n)
    got = host(gpureduce.groupby_reduce("sum", cp.asarray(a), cp.asarray(ids), k))
    want = np.zeros(k, np.sum(a[:1]).dtype)
    with np.errstate(over="ignore"):
        np.add.at(want, ids, a.astype(want.dtype))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    nansum = host(gpureduce.groupby_reduce("nansum", cp.asarray(a), cp.asarray(ids), k, variant="scatter"))
    np.testing.assert_array_equal(nansum, want)


@pytest.mark.parametrize("layout", ["rows", "columns", "3d-middle", "transposed", "stepped"])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_any_axis_and_layout(layout, op):
    rng = seeded("layout", layout, op)
    base = wide_range(rng, 6 * 7 * 300, "float32")
    if layout == "rows":
        a, axis = base.reshape(42, 300), 1
    elif layout == "columns":
        a, axis = base.reshape(300, 42), 0
    elif layout == "3d-middle":
        a, axis = base.reshape(6, 300, 7), 1
    elif layout == "transposed":
        a, axis = base.reshape(42, 300).T, 0
    else:
        a, axis = base.reshape(84, 150)[::2, ::-1], 1
    k = 23
    ids = rng.integers(0, k, a.shape[axis])
    want = exact_groups(op, a, ids, k, axis)
    d = cp.asarray(np.ascontiguousarray(base)).reshape(base.shape)
    if layout == "rows":
        d = d.reshape(42, 300)
    elif layout == "columns":
        d = d.reshape(300, 42)
    elif layout == "3d-middle":
        d = d.reshape(6, 300, 7)
    elif layout == "transposed":
        d = d.reshape(42, 300).T
    else:
        d = d.reshape(84, 150)[::2, ::-1]
    got = gpureduce.groupby_reduce(op, d, cp.asarray(ids), k, axis=axis)
    same_bits(host(got), want)
    same_bits(gpureduce.groupby_reduce(op, a, ids, k, axis=axis), want)  # the host input too


def test_ids_sorted_takes_the_segmented_path_within_the_bound():
    """ids_sorted=True: the segmented reduction (no atomics, no sort); its sums lie within the fold's bound of the
    exact ones, which auto and variant="scatter" give for the same sorted ids (and ids_sorted=True with "scatter")."""
    rng = seeded("sorted")
    a = rng.standard_normal(100_000).astype(np.float32)
    ids = np.sort(rng.integers(0, 500, 100_000))
    exact = exact_groups("sum", a, ids, 500)
    got = host(gpureduce.groupby_reduce("sum", cp.asarray(a), cp.asarray(ids), 500, ids_sorted=True))
    mags = np.bincount(ids, weights=np.abs(a.astype(np.float64)), minlength=500)
    assert np.all(np.abs(got.astype(np.float64) - exact) <= 1e-5 * mags + 1e-30)
    for kw in ({}, {"variant": "scatter"}, {"variant": "scatter", "ids_sorted": True}):
        same_bits(host(gpureduce.groupby_reduce("sum", cp.asarray(a), cp.asarray(ids), 500, **kw)), exact)
    with pytest.raises(ValueError, match="not sorted"):
        gpureduce.groupby_reduce("sum", cp.asarray(a), cp.asarray(ids[::-1].copy()), 500, variant="scatter",
                                 ids_sorted=True)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "uint16", "int64", "uint64", "bool"])
@pytest.mark.parametrize("op", ["max", "min", "nanmax", "nanmin"])
def test_extremes_match_the_sort_path(op, dtype):
    """min, max and their nan forms by one order-preserving key a group: the sort path's answers (NumPy's), NaN
    where a group holds one (nan forms: where it holds no number, empty included), the identity for an empty group
    of max and min; shared accumulators (37 groups) and global ones (20,000)."""
    rng = seeded("extremes", op, dtype)
    n = 30_000
    if dtype == "bool":
        a = rng.random(n) < 0.5
    elif np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    else:
        a = wide_range(rng, n, dtype)
        a[rng.random(n) < 0.01] = np.nan
        a[rng.random(n) < 0.01] = np.inf
        a[rng.random(n) < 0.01] = -np.inf
    for k in (37, 20_000):
        ids = rng.integers(0, k - 3, n)  # the last groups empty
        if a.dtype.kind == "f":  # a group of NaNs alone
            a[ids == 0] = np.nan
        got = host(gpureduce.groupby_reduce(op, cp.asarray(a), cp.asarray(ids), k, variant="scatter"))
        want = host(gpureduce.groupby_reduce(op, cp.asarray(a), cp.asarray(ids), k, variant="lanes"))
        assert got.dtype == want.dtype == a.dtype
        np.testing.assert_array_equal(got, want)
        # auto takes the scatter: the same answer, whatever the order of the pairs
        perm = rng.permutation(n)
        np.testing.assert_array_equal(host(gpureduce.groupby_reduce(op, cp.asarray(a[perm]), cp.asarray(ids[perm]),
                                                                    k)), want)


def test_what_scatter_refuses():
    a, ids = cp.arange(10.0), cp.asarray([0, 1] * 5)
    for op, kw in (("argmax", {}), ("prod", {}), ("sum", {"dtype": np.float32}), ("var", {})):
        with pytest.raises(ValueError, match="variant 'scatter' takes"):
            gpureduce.groupby_reduce(op, a, ids, 2, variant="scatter", **kw)
        gpureduce.groupby_reduce(op, a, ids, 2, **kw)  # auto takes them by the sort
    with pytest.raises(ValueError, match="unknown variant"):
        gpureduce.groupby_reduce("sum", a, ids, 2, variant="atomics")
    with pytest.raises(ValueError, match="variant 'scatter' takes"):  # integer means: the sort's float64 sums
        gpureduce.groupby_reduce("mean", cp.arange(10), ids, 2, variant="scatter")


def test_many_groups_past_the_accumulators_limit_sort_instead():
    """float32: 34 words (272 bytes) a group, 64 MiB of them at most: 200,000 groups scatter, 2^20 sort (the same
    sums within the fold's bound)."""
    rng = seeded("many")
    n = 1 << 21
    a = rng.standard_normal(n).astype(np.float32)
    for k in (200_000, 1 << 20):
        ids = rng.integers(0, k, n)
        got = host(gpureduce.groupby_reduce("sum", cp.asarray(a), cp.asarray(ids), k))
        want = np.bincount(ids, weights=a.astype(np.float64), minlength=k)
        mags = np.bincount(ids, weights=np.abs(a.astype(np.float64)), minlength=k)
        assert np.all(np.abs(got - want) <= 1e-6 * mags + 1e-30)


def test_stream_keyword():
    """stream=: the accumulators zeroed, filled and rounded on that stream, behind the work already on it."""
    rng = seeded("stream")
    s = cp.cuda.Stream(non_blocking=True)
    a_host, ids_host = rng.standard_normal(30_000).astype(np.float32), rng.integers(0, 40, 30_000)
    with s:
        a = cp.zeros(30_000, np.float32)
        a += cp.asarray(a_host)
        ids = cp.asarray(ids_host)
    got = gpureduce.groupby_reduce("sum", a, ids, 40, variant="scatter", stream=s)
    s.synchronize()
    same_bits(host(got), exact_groups("sum", a_host, ids_host, 40))


@pytest.mark.parametrize("kind", ["cupy", "torch"])
@pytest.mark.parametrize("layout", ["row", "columns"])
@pytest.mark.parametrize("op, dtype, k", [("sum", "float32", 7), ("sum", "float32", 20_000), ("max", "int32", 50),
                                          ("sum", "int64", 300)])
def test_ids_out_of_range_are_noted_by_the_kernels(kind, layout, op, dtype, k, monkeypatch):
    """num_groups given: the scatter's kernels note the ids out of [0, k) as they read them (no pass over the ids
    first: the libraries' id_range is not called), and the call raises IndexError naming the smallest negative id,
    else the largest too large one, as the check before the call did; good ids after a refused call are summed."""
    from gpureduce._planning import libraries

    def no_pass(self, ids):
        raise AssertionError("a pass over the ids before the call")
    monkeypatch.setattr(libraries._ArrayModule, "id_range", no_pass)
    monkeypatch.setattr(libraries._Torch, "id_range", no_pass)
    rng = seeded("notes", kind, layout, op, dtype, k)
    n = 4099
    shape = (n,) if layout == "row" else (n, 3)
    a = (rng.standard_normal(shape) * 100).astype(dtype)
    good = rng.integers(0, k, n)
    at = rng.choice(n, 4, replace=False)
    for bad_values, named in (([k + 5, k, k + 2, k + 1], k + 5), ([-3, -9, 0, 1], -9), ([k + 7, -2, k, 0], -2)):
        ids = good.copy()
        ids[at] = bad_values
        with pytest.raises(IndexError, match=rf"group id {named} is out of range for {k} groups"):
            gpureduce.groupby_reduce(op, to_kind(kind, a), to_kind(kind, ids), k)
    got = host(gpureduce.groupby_reduce(op, to_kind(kind, a), to_kind(kind, good), k))
    if op == "max":
        want = np.full((k,) + shape[1:], np.iinfo(dtype).min, dtype)
        np.maximum.at(want, good, a)
        seen = np.bincount(good, minlength=k) > 0
        np.testing.assert_array_equal(got[seen], want[seen])
    elif dtype == "int64":
        want = np.zeros((k,) + shape[1:], dtype)
        np.add.at(want, good, a)
        np.testing.assert_array_equal(got, want)
    else:
        want = np.zeros((k,) + shape[1:])
        np.add.at(want, good, a.astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-3)
