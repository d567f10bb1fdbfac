"""The grouped reductions' checks (gpureduce.groupby_reduce; issue 40), without a GPU: every bad argument is
refused with a clear exception before any device work."""
import numpy as np
import pytest

import gpureduce

A = np.arange(5.0)


@pytest.mark.parametrize("call, error, words", [
    (lambda: gpureduce.groupby_reduce("sum", A, [0, 1, 2]), ValueError, "one id per element"),
    (lambda: gpureduce.groupby_reduce("sum", A, [[0, 1, 2, 3, 4]]), ValueError, "1-d"),
    (lambda: gpureduce.groupby_reduce("sum", A, [0, 1, 2, 3, 9], 4), IndexError, "group id 9 is out of range"),
    (lambda: gpureduce.groupby_reduce("sum", A, [-1, 0, 0, 0, 0]), IndexError, "group id -1"),
    (lambda: gpureduce.groupby_reduce("sum", A, [0.5] * 5), TypeError, "must be integers"),
    (lambda: gpureduce.groupby_reduce("sum", A, [1, 0, 2, 3, 3], 4, ids_sorted=True), ValueError, "not sorted"),
    (lambda: gpureduce.groupby_reduce("nope", A, [0] * 5), ValueError, "unknown operator 'nope'"),
    (lambda: gpureduce.groupby_reduce(len, A, [0] * 5), TypeError, "operator's name"),
    (lambda: gpureduce.groupby_reduce("sum", A, [0] * 5, -1), ValueError, "non-negative"),
    (lambda: gpureduce.groupby_reduce("sum", A, [0] * 5, 2.5), TypeError, "num_groups must be an int"),
    (lambda: gpureduce.groupby_reduce("sum", A, [0] * 5, axis=1), np.exceptions.AxisError, "axis 1"),
    (lambda: gpureduce.groupby_reduce("sum", np.float64(1.0), [0]), TypeError, "0-d"),
    (lambda: gpureduce.groupby_reduce("sum", np.ma.masked_array(A), [0] * 5), TypeError, "takes a NumPy array"),
    (lambda: gpureduce.groupby_reduce("sum", A, [0] * 5, stream="1"), TypeError, "stream"),
    (lambda: gpureduce.groupby_reduce("sum", A, [0] * 5, variant="atomics"), ValueError, "unknown variant 'atomics'"),
    (lambda: gpureduce.groupby_reduce("prod", A, [1, 0, 1, 0, 1], variant="scatter"), ValueError,
     "variant 'scatter' takes"),
    (lambda: gpureduce.groupby_reduce("mean", np.arange(5), [1, 0, 1, 0, 1], variant="scatter"), ValueError,
     "variant 'scatter' takes"),
])
def test_bad_arguments_are_refused_before_any_device_work(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_the_signature_reads_as_jaxs_segment_functions():
    import inspect
    parameters = inspect.signature(gpureduce.groupby_reduce).parameters
    assert list(parameters)[:6] == ["op", "a", "group_ids", "num_groups", "axis", "dtype"]
    assert parameters["ids_sorted"].kind is inspect.Parameter.KEYWORD_ONLY
    assert parameters["stream"].default is None


@pytest.mark.parametrize("count, dtype", [(0, np.int16), (1, np.int16), (32768, np.int16), (32769, np.int32),
                                          (2**31, np.int32), (2**31 + 1, np.int64)])
def test_ids_sort_in_the_narrowest_dtype_that_holds_them(count, dtype):
    from gpureduce._planning.groups import narrowest_id_dtype
    assert narrowest_id_dtype(count) == np.dtype(dtype)


@pytest.mark.parametrize("n", [2, 1000, (1 << 16) + 3])  # below and above the size from which the range is sought
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"])
def test_the_stable_order_of_ids_of_any_range(n, dtype):
    """groupby_reduce's and groupby_scan's sort: the stable order of the ids whatever their dtype and range (negative
    ids, ids far from 0, a range wider than 2^31), sorted in their narrowest dtype, and None (no sort, no gather)
    for ids in order already."""
    from gpureduce._planning.groups import stable_order
    from gpureduce._planning.libraries import library_of

    rng = np.random.default_rng(n)
    info = np.iinfo(dtype)
    lib = library_of(np.zeros(1))
    for low, high in [(0, 3), (info.min, info.min + 40000), (-5, 70000), (info.min, info.max)]:
        low, high = max(low, int(info.min)), min(high, int(info.max))
        ids = rng.integers(low, high, n, dtype=dtype, endpoint=True)
        want = np.argsort(ids, kind="stable")
        order = stable_order(lib, ids)
        assert order is None if (want == np.arange(n)).all() and n >= (1 << 16) else \
            np.array_equal(order, want), (dtype, low, high)
        if not (want == np.arange(n)).all():
            assert np.array_equal(stable_order(lib, ids, lib.bounds(ids)), want), (dtype, low, high)
        ordered = np.sort(ids)  # in order: no sort where the range is sought (from 2^16 ids, or bounds given)
        assert stable_order(lib, ordered, lib.bounds(ordered)) is None
        if n >= (1 << 16):
            assert stable_order(lib, ordered) is None
        else:
            assert np.array_equal(stable_order(lib, ordered), np.arange(n))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "uint64"])
def test_the_ids_bounds_come_home_in_one_wait(dtype, monkeypatch):
    """lib.bounds: the ids' smallest and largest (any uint64 id: brought home in the ids' dtype) and whether they
    are in order, in one copy to the host (three for device ids before: a wait each)."""
    from gpureduce._planning import libraries

    copies = []
    real = libraries.to_host
    monkeypatch.setattr(libraries, "to_host", lambda a: copies.append(1) or real(a))
    lib = libraries.library_of(np.zeros(1))
    info = np.iinfo(dtype)
    rng = np.random.default_rng(7)
    spread = rng.integers(info.min, info.max, 1000, dtype=dtype, endpoint=True)
    for ids in (np.array([info.max], dtype), np.array([info.min, info.max], dtype),
                np.array([info.max, info.min], dtype), spread, np.sort(spread)):
        copies.clear()
        want = (int(ids.min()), int(ids.max()), bool(np.all(ids[1:] >= ids[:-1])))
        assert lib.bounds(ids) == want and len(copies) == 1, (dtype, ids[:4], lib.bounds(ids), want)


def test_what_the_scatter_takes():
    """The grouped scatter (cuda/axis/reduce_groups_scatter.cu): floating sums and means into the input's dtype,
    integer and bool sums into NumPy's sum dtype, min, max and their nan forms into the input's dtype, at most 64 MiB
    of accumulators (a float32 sum's 34 words a group, a float64 sum's 70, an integer sum's or an extreme's 3)."""
    from gpureduce import _core
    from gpureduce._planning.groups import scatter_runs
    from gpureduce._planning.operands import dtype_code
    from gpureduce._registry import OPERATORS
    code = {op.name: op.code for op in OPERATORS}
    f32, f64, i8, i64 = (dtype_code(np.dtype(t)) for t in ("float32", "float64", "int8", "int64"))
    def runs(op, in_code, out_code, accumulators, length=100):
        return _core.groups_scatter_runs(op, in_code, out_code, length, accumulators)
    for op in ("sum", "nansum", "mean", "nanmean"):
        assert runs(code[op], f32, f32, 1) and runs(code[op], f64, f64, 1)
        assert not runs(code[op], f32, f64, 1)
    assert not runs(code["prod"], f64, f64, 1) and not runs(code["argmax"], f32, f32, 1)
    for op in ("max", "min", "nanmax", "nanmin"):
        assert runs(code[op], f32, f32, 1) and runs(code[op], i8, i8, 1) and not runs(code[op], i8, i64, 1)
    assert runs(code["max"], f64, f64, limit_extreme := (64 << 20) // 24)
    assert not runs(code["max"], f64, f64, limit_extreme + 1)
    assert runs(code["sum"], i8, i64, 1) and not runs(code["sum"], i8, i8, 1) and not runs(code["mean"], i64, f64, 1)
    limit = 64 << 20
    assert runs(code["sum"], f32, f32, limit // 272) and not runs(code["sum"], f32, f32, limit // 272 + 1)
    assert runs(code["sum"], f64, f64, limit // 560) and not runs(code["sum"], f64, f64, limit // 560 + 1)
    assert runs(code["sum"], i64, i64, limit // 24) and not runs(code["sum"], i64, i64, limit // 24 + 1)
    # a sum's words absorb 2^31 elements a group: a longer axis sorts; an extreme's key has no such limit
    assert runs(code["sum"], f32, f32, 1, 2 ** 31 - 1) and not runs(code["sum"], f32, f32, 1, 2 ** 31)
    assert runs(code["max"], f32, f32, 1, 2 ** 31)
    # the accumulators of a 2-d input: its kept elements times the groups
    a = np.zeros((100, 8), np.float32)
    assert scatter_runs("sum", a, 0, None, limit // 272 // 8)
    assert not scatter_runs("sum", a, 0, None, limit // 272 // 8 + 1)
    assert scatter_runs("nansum", np.zeros(4, np.int32), 0, None, 3)  # nansum of ints: the sum
    assert not scatter_runs("sum", a, 0, np.float64, 3)
