"""One DLPack handshake per call (issue 39): the eager call takes its input once and hands the operand to the
planner and to NumPy's checks after the kernels, so a producer's __dlpack__ runs once, whatever the function
(nanmean's operator choice, its plan and its "Mean of empty slice" check used to take it three times).  The
runner is replaced by one that answers NaN, so no GPU is needed."""
import warnings

import numpy as np
import pytest

import gpureduce
from conftest import CountingProducer
from gpureduce import _core


@pytest.mark.parametrize("name", ["sum", "nansum", "nanmean", "nanmax", "nanvar", "mean", "max"])
def test_a_reduction_takes_its_input_once(monkeypatch, name):
    monkeypatch.setattr(_core, "run", lambda plan: np.float64(np.nan))
    x = CountingProducer(np.array([1.0, np.nan, 3.0]))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nanmax's "All-NaN slice" of the stand-in's NaN
        getattr(gpureduce, name)(x)
    assert x.calls == 1, f"gpureduce.{name} called __dlpack__ {x.calls} times"
