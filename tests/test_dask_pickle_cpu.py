"""gpureduce.dask's graphs survive pickling, as Dask's distributed scheduler ships them to worker processes: every
function's graph, pickled and unpickled, computes NumPy's result (NumPy's functions standing in for gpureduce's on
each chunk, as in tests/test_dask_cpu.py).  A default argument compared by identity (a "not given" sentinel) is
a new object after unpickling unless it is pickled as the one instance; the threaded scheduler never shows this."""
import pickle

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
gd = pytest.importorskip("gpureduce.dask")
cloudpickle = pytest.importorskip("cloudpickle")

from test_dask_cpu import NUMPY_KERNELS, reference  # noqa: E402

SCANS = {"cumsum", "cumprod", "cummax", "cummin", "nancumsum", "nancumprod", "logcumsumexp"}


def _computed_after_pickling(result):
    """`result` computed by the synchronous scheduler from its graph after a round trip through cloudpickle (as
    distributed pickles tasks)."""
    graph = cloudpickle.loads(cloudpickle.dumps(dict(result.__dask_graph__())))
    return np.asarray(da.Array(graph, result.name, result.chunks, meta=result._meta).compute(scheduler="sync"))


@pytest.mark.parametrize("op", gd.OPERATORS)
def test_every_graph_computes_after_pickling(monkeypatch, op, rng):
    monkeypatch.setattr(gd.chunks, "kernels", NUMPY_KERNELS)
    x = rng.integers(-5, 6, (30, 40)).astype(np.int64)
    d = da.from_array(x, chunks=(7, 9))
    axis = 0 if op in SCANS else None
    got = _computed_after_pickling(getattr(gd, op)(d, axis=axis))
    want = reference(op, x, axis=axis)
    if np.asarray(want).dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op,initial", [("sum", 7), ("max", 100), ("min", -100)])
def test_initial_given_and_not_given_after_pickling(monkeypatch, op, initial, rng):
    monkeypatch.setattr(gd.chunks, "kernels", NUMPY_KERNELS)
    x = rng.integers(-5, 6, (30, 40)).astype(np.int64)
    d = da.from_array(x, chunks=(7, 9))
    np.testing.assert_array_equal(_computed_after_pickling(getattr(gd, op)(d, axis=1, initial=initial)),
                                  getattr(np, op)(x, axis=1, initial=initial))
    np.testing.assert_array_equal(_computed_after_pickling(getattr(gd, op)(d, axis=1)), getattr(np, op)(x, axis=1))


def test_the_not_given_default_is_one_object_after_pickling():
    from gpureduce._planning.numpy_rules import NoValue

    assert pickle.loads(pickle.dumps(NoValue)) is NoValue
    assert cloudpickle.loads(cloudpickle.dumps(NoValue)) is NoValue
