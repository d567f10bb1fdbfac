"""Whole-array calls run again from their kept plan (src/whole_calls.c, issue 38): the second and later calls of a
key take the C path, and must give what the planner gives -- a new result each call in the input's kind, on the
caller's stream, NumPy's warnings and errors of the nan functions, a new plan for a new layout, the caller's
stream= -- with fresh data every call (a stale or shared result would repeat the first answer)."""
import warnings

import numpy as np
import pytest

import gpureduce
from conftest import DLPackOnly, _cupy, _torch
from gpureduce import _core
from gpureduce._planning import plan as planning
from gpureduce._planning.results import result_maker
from gpureduce.testing import error_bound, to_numpy

pytestmark = pytest.mark.gpu


def _kept(kind, op, a, exclusive=False):
    """Whether call_whole holds a plan for this call: it runs it (anything but NotImplemented)."""
    return _core.call_whole(kind, op, "auto", exclusive, a) is not NotImplemented


def _device(kind, host):
    if kind == "cupy":
        return _cupy().asarray(host)
    if kind == "torch":
        return _torch().from_numpy(host).cuda()
    if kind == "dlpack":
        return DLPackOnly(_cupy().asarray(host))
    return host


def _close(got, want, host):
    got = np.asarray(to_numpy(got), dtype=np.float64)
    bound = error_bound("sum", host, host.dtype)
    assert abs(got - want) <= bound, (got, want, bound)


@pytest.mark.parametrize("kind", ["numpy", "cupy", "torch", "dlpack"])
def test_every_call_gets_its_own_result_with_its_own_values(kind, rng):
    results, wants = [], []
    for i in range(6):  # new data each time, in the same layout: one key
        host = rng.standard_normal(4099).astype(np.float32)
        a = _device(kind, host)
        results.append(gpureduce.sum(a))
        wants.append((host.astype(np.float64).sum(), host))
        if i == 1:
            assert _kept(_core.KIND_REDUCE, "sum", a)
    for r, (want, host) in zip(results, wants):  # none overwrote another
        _close(r, want, host)
    if kind == "cupy":
        assert len({r.data.ptr for r in results}) == len(results)
        assert all(type(r) is _cupy().ndarray and r.shape == () for r in results)
    if kind == "torch":
        assert len({r.data_ptr() for r in results}) == len(results)
        assert all(r.shape == () and r.is_cuda for r in results)
    if kind == "numpy":
        assert all(isinstance(r, np.float32) for r in results)


@pytest.mark.parametrize("kind", ["numpy", "cupy", "torch"])
@pytest.mark.parametrize("exclusive", [False, True])
def test_whole_array_scans_run_again_from_the_kept_plan(kind, exclusive, rng):
    for i in range(4):
        host = rng.integers(-50, 50, (33, 65)).astype(np.int32)
        a = _device(kind, host)
        got = to_numpy(gpureduce.cumsum(a, exclusive=exclusive))
        want = np.cumsum(host.astype(np.int64))
        if exclusive:
            want = np.concatenate([[0], want[:-1]])
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.int64
    assert _kept(_core.KIND_SCAN, "sum", a, exclusive)


@pytest.mark.parametrize("kind", ["numpy", "cupy", "torch"])
def test_a_new_layout_is_planned_anew(kind, rng):
    host = rng.standard_normal((64, 63)).astype(np.float64)
    a = _device(kind, host)
    for view, want in [(a, host), (a[::2], host[::2]), (a[:, 1:], host[:, 1:]), (a.T, host.T), (a, host)]:
        for _ in range(2):
            _close(gpureduce.sum(view), want.sum(), want)
            np.testing.assert_array_equal(to_numpy(gpureduce.argmax(view)), np.argmax(want))


@pytest.mark.parametrize("kind", ["numpy", "cupy", "torch"])
def test_the_nan_functions_raise_and_warn_on_every_call(kind):
    nans = _device(kind, np.full(100, np.nan, np.float32))
    for _ in range(3):
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            gpureduce.nanargmin(nans)
    if kind == "numpy":  # a host input's NaN results are looked at (a device result is not waited for)
        for _ in range(3):
            with pytest.warns(RuntimeWarning, match="All-NaN slice encountered"):
                gpureduce.nanmax(nans)
            with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
                gpureduce.nanmean(nans)
    numbers = _device(kind, np.array([np.nan, 2.0, -1.0, np.nan], np.float32))
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert int(to_numpy(gpureduce.nanargmin(numbers))) == 2
            assert float(to_numpy(gpureduce.nanmax(numbers))) == 2.0


@pytest.mark.parametrize("kind", ["numpy", "cupy", "torch"])
def test_the_nan_functions_of_integers_are_their_plain_forms(kind, rng):
    host = rng.integers(-1000, 1000, 5000).astype(np.int16)
    a = _device(kind, host)
    for _ in range(3):
        assert int(to_numpy(gpureduce.nansum(a))) == int(host.astype(np.int64).sum())
        assert int(to_numpy(gpureduce.nanmin(a))) == int(host.min())
        np.testing.assert_array_equal(to_numpy(gpureduce.nancumsum(a)), np.cumsum(host.astype(np.int64)))


def test_stream_keyword_on_the_kept_plan(rng):
    torch = _torch()
    side = torch.cuda.Stream()
    for _ in range(4):
        host = rng.standard_normal(10_000).astype(np.float32)
        with torch.cuda.stream(side):
            t = torch.from_numpy(host).cuda(non_blocking=False)
            r = gpureduce.sum(t, stream=side)  # its stream, named: the result is read there
            side.synchronize()
        _close(r, host.astype(np.float64).sum(), host)


def test_the_current_stream_orders_the_kept_plan(rng):
    """A tensor written on a side stream and reduced there without stream=: the call runs on the current stream
    (the side one), after the write, each time."""
    torch = _torch()
    side = torch.cuda.Stream()
    t = torch.zeros(1 << 20, device="cuda")
    side.wait_stream(torch.cuda.current_stream())  # the zeros first
    for i in range(1, 5):
        with torch.cuda.stream(side):
            t.fill_(float(i))
            r = gpureduce.sum(t)
        side.synchronize()
        assert float(r) == float(i) * (1 << 20)


class _CountingDevice:
    """A device array exporting only DLPack, counting its handshakes."""

    def __init__(self, array):
        self.array, self.calls = array, 0

    def __dlpack__(self, **kwargs):
        self.calls += 1
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


@pytest.mark.parametrize("name", ["sum", "nanmean", "nanargmin", "nanmax", "nanvar", "cumsum"])
def test_one_handshake_a_call_on_a_kept_plan(name, rng):
    """The nan functions' checks after a kept plan read the operand call_whole took (with_operand), not `a` again."""
    base = _cupy().asarray(rng.standard_normal(3000))
    for _ in range(3):  # planned, then kept
        x = _CountingDevice(base)
        getattr(gpureduce, name)(x)
        assert x.calls == 1, f"gpureduce.{name} called __dlpack__ {x.calls} times"


@pytest.mark.parametrize("kind", ["cupy", "torch"])
def test_a_library_that_makes_no_result_hands_the_call_to_the_planner(kind, rng):
    """A kept call whose result the library fails to allocate (out of memory) goes to the planner, which raises
    the library's error as gpureduce's; the next call runs from the kept plan again."""
    host = rng.standard_normal(2049).astype(np.float32)
    a = _device(kind, host)
    gpureduce.sum(a)
    assert _kept(_core.KIND_REDUCE, "sum", a)
    x = _core.intake(a)
    plan, _ = planning.prepare_reduce("sum", x)

    def refuse(*args):
        raise MemoryError("no memory for the result")

    maker = (refuse, (), int)
    _core.remember_whole(_core.KIND_REDUCE, "sum", "auto", False, x, plan.with_operands(None), maker, None, None)
    assert type(_core.call_whole(_core.KIND_REDUCE, "sum", "auto", False, a)) is _core.Operand
    _close(gpureduce.sum(a), host.astype(np.float64).sum(), host)  # planned again, and kept with its own maker
    assert not isinstance(_core.call_whole(_core.KIND_REDUCE, "sum", "auto", False, a), _core.Operand)

    def interrupt(*args):
        raise KeyboardInterrupt

    _core.remember_whole(_core.KIND_REDUCE, "sum", "auto", False, x, plan.with_operands(None), (interrupt, (), int),
                         None, None)
    with pytest.raises(KeyboardInterrupt):
        _core.call_whole(_core.KIND_REDUCE, "sum", "auto", False, a)
    real = result_maker(a, (), np.dtype(np.float32))[:3]
    _core.remember_whole(_core.KIND_REDUCE, "sum", "auto", False, x, plan.with_operands(None), real, None, None)
    _close(gpureduce.sum(a), host.astype(np.float64).sum(), host)
