"""What decides whether a whole-array call runs from its kept plan (src/whole_calls.c, issue 38), without a GPU:
the input types it holds plans for, the key (operator as named, variant, exclusive, layout), and one handshake
with the input's producer a call, kept plan or not.  The planner's runner is replaced where a test plans, so the
plan is kept but nothing runs; a kept plan's own run reaches the C runner (CudaError without a device)."""
import numpy as np
import pytest

import gpureduce
from conftest import CountingProducer
from gpureduce import _core

REDUCE, SCAN = _core.KIND_REDUCE, _core.KIND_SCAN


class Untouchable:
    """An array-like whose every protocol fails: call_whole must not ask it anything."""

    def __dlpack__(self, **kwargs):
        raise AssertionError("asked for DLPack")

    @property
    def __cuda_array_interface__(self):
        raise AssertionError("asked for the CUDA Array Interface")

    def __array__(self, *args, **kwargs):
        raise AssertionError("asked for __array__")


def _runs_kept_plan(kind, op, a, exclusive=False):
    """Whether call_whole ran a kept plan for `a` (the runner's CudaError without a device counts as run)."""
    try:
        got = _core.call_whole(kind, op, "auto", exclusive, a)
    except gpureduce.CudaError:
        return True
    return got is not NotImplemented and type(got) is not _core.Operand


def _plan(monkeypatch, func, a, **kw):
    """Call gpureduce.func(a) with a runner that answers NaN: the planner keeps the plan, nothing runs (where a
    plan is kept already, it runs: without a device, the CudaError of that)."""
    monkeypatch.setattr(_core, "run", lambda plan: np.float64(np.nan))
    with np.errstate(all="ignore"):
        try:
            getattr(gpureduce, func)(a, **kw)
        except gpureduce.CudaError:
            pass
    monkeypatch.undo()


def test_a_type_with_no_kept_plan_is_not_asked_anything():
    assert _core.call_whole(REDUCE, "sum", "auto", False, Untouchable()) is NotImplemented
    assert _core.call_whole(SCAN, "sum", "auto", True, Untouchable()) is NotImplemented


def test_a_planned_call_is_kept_under_its_key(monkeypatch):
    a = np.arange(1000, dtype=np.float32).reshape(10, 100)
    _plan(monkeypatch, "sum", a)
    _plan(monkeypatch, "cumsum", a)
    assert _runs_kept_plan(REDUCE, "sum", a)
    assert _runs_kept_plan(REDUCE, "sum", a + 1)  # other values, the same layout
    assert _runs_kept_plan(SCAN, "sum", a)
    other = [(REDUCE, "sum", a[:, ::2], False), (REDUCE, "sum", a.astype(np.float64), False),
             (REDUCE, "sum", a.T, False), (REDUCE, "prod", a, False), (SCAN, "sum", a, True)]
    for kind, op, b, exclusive in other:  # another layout, dtype, operator or exclusive: read, not run
        assert type(_core.call_whole(kind, op, "auto", exclusive, b)) is _core.Operand
    assert type(_core.call_whole(REDUCE, "sum", "shuffle", False, a)) is _core.Operand  # another variant


def test_a_subclass_of_a_planned_type_goes_to_the_planner(monkeypatch):
    _plan(monkeypatch, "sum", np.arange(4.0))
    masked = np.ma.array(np.arange(4.0), mask=[0, 1, 0, 0])
    assert _core.call_whole(REDUCE, "sum", "auto", False, masked) is NotImplemented
    assert float(gpureduce.sum(masked)) == 5.0 if _has_device() else True


def test_the_nan_forms_of_integers_are_kept_under_the_name_called(monkeypatch):
    a = np.arange(20, dtype=np.int16)
    _plan(monkeypatch, "nansum", a)
    assert _runs_kept_plan(REDUCE, "nansum", a)


@pytest.mark.parametrize("name", ["sum", "nanmean", "max", "cumsum"])
def test_one_handshake_a_call_with_or_without_a_kept_plan(monkeypatch, name):
    monkeypatch.setattr(_core, "run", lambda plan: np.float64(np.nan))
    for shape in [(7,), (3, 5), (7,)]:  # a type with kept plans, a new layout, then a kept one
        x = CountingProducer(np.ones(shape))
        try:
            getattr(gpureduce, name)(x)
        except gpureduce.CudaError:  # a kept plan runs in C, past the stand-in runner
            pass
        assert x.calls == 1, f"gpureduce.{name} of {shape} called __dlpack__ {x.calls} times"


def test_a_bad_variant_still_raises_the_planners_error(monkeypatch):
    _plan(monkeypatch, "sum", np.arange(4.0))
    with pytest.raises(ValueError, match="variant"):
        gpureduce.sum(np.arange(4.0), variant="no such variant")
    with pytest.raises(TypeError, match="variant must be a str"):
        gpureduce.sum(np.arange(4.0), variant=3)


def _has_device():
    try:
        return _core.device_count() > 0
    except Exception:  # noqa: BLE001 -- no driver
        return False
