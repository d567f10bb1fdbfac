"""The grouped reductions on the GPU (gpureduce.groupby_reduce; issue 40) against NumPy, for NumPy, CuPy, PyTorch
and JAX inputs.

The reference of group g is NumPy's own function over the elements whose id is g, in their order (np.bincount's
and np.add.at's groups); integers, bool, min/max and positions must match exactly, floating results lie within a
float64 reference's error bound that grows with the group's size.  Fresh random ids in any order with empty groups,
sorted ids, one group, more groups than elements, any axis, and bitwise the same result from a shuffled call
repeated (deterministic) and from ids_sorted=True on the sorted ids.
"""
import zlib

import numpy as np
import pytest

import gpureduce

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")

OPS = ["sum", "prod", "min", "max", "mean", "argmin", "argmax", "count_nonzero", "any", "var"]
EXACT = {"min", "max", "argmin", "argmax", "count_nonzero", "any"}
IDENTITY = {"sum": 0, "prod": 1, "count_nonzero": 0, "any": False}


def seeded(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def reference(op, a, ids, k, axis, dtype):
    """NumPy's answer, group by group (JAX's identities for an empty group; positions along the axis in `a`)."""
    a = np.moveaxis(a, axis, 0)
    parts = []
    f = getattr(np, op)
    for g in range(k):
        where = np.flatnonzero(ids == g)
        if where.size == 0:
            rest = a.shape[1:]
            if op in ("argmin", "argmax"):
                parts.append(np.full(rest, -1))
            elif op in ("min", "max"):
                info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
                low = -np.inf if np.dtype(dtype).kind == "f" else info.min
                high = np.inf if np.dtype(dtype).kind == "f" else info.max
                parts.append(np.full(rest, high if op == "min" else low, dtype=dtype))
            elif op in ("mean", "var"):
                parts.append(np.full(rest, np.nan))
            else:
                parts.append(np.full(rest, IDENTITY[op]))
            continue
        chunk = a[where]
        if op in ("argmin", "argmax"):
            parts.append(where[f(chunk, axis=0)])
        elif op == "var":
            parts.append(f(chunk.astype(np.float64), axis=0, ddof=0))
        elif op in ("sum", "prod", "mean"):
            parts.append(f(chunk.astype(np.float64) if np.dtype(dtype).kind == "f" else chunk, axis=0))
        else:
            parts.append(f(chunk, axis=0))
    return np.moveaxis(np.stack(parts) if parts else np.zeros((0,) + a.shape[1:]), 0, axis)


def check(op, got, want, a, ids, axis):
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    if op in EXACT or (a.dtype.kind not in "fc" and op in ("sum", "prod")):
        np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=op)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=op)
    counts = np.bincount(ids, minlength=want.shape[axis]).reshape([-1 if i == axis else 1 for i in range(a.ndim)])
    eps = np.finfo(got.dtype).eps
    if op == "prod":
        # a product beyond the result dtype's range overflows to inf there, as NumPy's own in that dtype
        huge = np.abs(want) > np.finfo(got.dtype).max / 2
        assert np.all(np.abs(got[huge]) > np.finfo(got.dtype).max / 4), (op, got[huge], want[huge])
        nan = nan | huge
        bound = 4 * eps * np.maximum(counts, 1) * np.abs(want)
    else:
        mags = reference("sum", np.abs(a.astype(np.float64)), ids, want.shape[axis], axis, np.float64)
        bound = 4 * eps * np.maximum(counts, 1) * (mags / np.maximum(counts, 1) if op in ("mean", "var") else mags)
        if op == "var":
            bound = bound * (mags / np.maximum(counts, 1) + 1)
    assert np.all(np.abs(got - want)[~nan] <= bound[~nan] + np.finfo(got.dtype).tiny), (op, np.max(np.abs(got - want)))


def to_kind(kind, x):
    if kind == "numpy":
        return x
    if kind == "cupy":
        return cp.asarray(x)
    if kind == "torch":
        torch = pytest.importorskip("torch")
        return torch.from_numpy(np.ascontiguousarray(x)).cuda()
    jax = pytest.importorskip("jax")
    try:
        device = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX has no GPU here")
    if x.dtype == np.int64 and not jax.config.read("jax_enable_x64"):
        x = x.astype(np.int32)
    return jax.device_put(x, device)


def host(r):
    if hasattr(r, "get"):
        return r.get()
    if type(r).__module__.startswith("torch"):
        return r.cpu().numpy()
    return np.asarray(r)


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kind", ["numpy", "cupy", "torch"])
def test_unsorted_ids_against_numpy(kind, op, dtype):
    rng = seeded(kind, op, dtype)
    n, k = 3000, 97
    a = (rng.standard_normal(n) * 10).astype(dtype) if dtype != "int32" else rng.integers(-9, 10, n).astype(dtype)
    a[rng.random(n) < 0.05] = 1  # ties
    ids = rng.integers(0, k - 7, n)  # the last 7 groups empty, others too by chance
    got = gpureduce.groupby_reduce(op, to_kind(kind, a), to_kind(kind, ids), k)
    assert type(got).__module__.partition(".")[0] == type(to_kind(kind, a)).__module__.partition(".")[0]
    check(op, host(got), reference(op, a, ids, k, 0, np.dtype(dtype)), a, ids, 0)


@pytest.mark.parametrize("op", ["sum", "max", "argmax", "mean"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_any_axis_of_a_2d_input(op, axis):
    rng = seeded(op, axis)
    a = rng.standard_normal((40, 300)).astype(np.float32)
    ids = rng.integers(0, 12, a.shape[axis])
    got = gpureduce.groupby_reduce(op, cp.asarray(a), cp.asarray(ids), 12, axis=axis)
    check(op, host(got), reference(op, a, ids, 12, axis % 2, np.float32), a, ids, axis % 2)


@pytest.mark.parametrize("variant", ["auto", "lanes"])
def test_deterministic_and_the_sorted_path_agrees(variant):
    """Float sums: the same bits on every call; the sort path (an algorithm named) gives the same bits as
    ids_sorted=True on the stably sorted input (auto scatters ids out of order: tests/test_grouped_scatter_gpu.py)."""
    rng = seeded("determinism")
    a = cp.asarray(rng.standard_normal(200_000).astype(np.float32))
    ids = cp.asarray(rng.integers(0, 1000, 200_000))
    first = gpureduce.groupby_reduce("sum", a, ids, 1000, variant=variant)
    for _ in range(3):
        assert bool((gpureduce.groupby_reduce("sum", a, ids, 1000, variant=variant) == first).all())
    if variant == "lanes":
        order = cp.argsort(ids, kind="stable")
        again = gpureduce.groupby_reduce("sum", a[order], ids[order], 1000, ids_sorted=True, variant=variant)
        assert bool((again == first).all())


@pytest.mark.parametrize("kind", ["cupy", "torch", "jax"])
def test_num_groups_defaults_to_the_largest_id_plus_one(kind):
    a = np.arange(10.0)
    ids = np.array([3, 0, 3, 1, 0, 0, 3, 1, 1, 3])
    got = host(gpureduce.groupby_reduce("sum", to_kind(kind, a), to_kind(kind, ids)))
    np.testing.assert_array_equal(got, np.bincount(ids, weights=a))


def test_out_of_range_ids_are_refused_on_the_device():
    a = cp.arange(6.0)
    for ids, k in (([0, 1, 2, 6, 0, 1], 6), ([0, -2, 1, 1, 1, 1], 3)):
        with pytest.raises(IndexError, match="out of range"):
            gpureduce.groupby_reduce("sum", a, cp.asarray(ids), k)


def test_edge_sizes():
    rng = seeded("edges")
    for n, k in ((0, 0), (0, 3), (1, 1), (1, 5), (5, 1), (33, 1000)):
        a = rng.standard_normal(n)
        ids = rng.integers(0, k, n) if k else np.zeros(0, np.int64)
        got = host(gpureduce.groupby_reduce("sum", cp.asarray(a), cp.asarray(ids), k))
        np.testing.assert_allclose(got, np.bincount(ids, weights=a, minlength=k)[:k] if n else np.zeros(k))


def test_stream_keyword_runs_the_whole_call_there():
    """stream=: the sort, the gather, the search and the reduction all queued on it, behind work on it."""
    rng = seeded("stream")
    s = cp.cuda.Stream(non_blocking=True)
    a_host, ids_host = rng.standard_normal(5000), rng.integers(0, 50, 5000)
    with s:
        a = cp.zeros(5000)
        a += cp.asarray(a_host)  # on s
        ids = cp.asarray(ids_host)
    got = gpureduce.groupby_reduce("argmax", a, ids, 50, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(host(got), reference("argmax", a_host, ids_host, 50, 0, np.float64))
