"""NumPy's warnings of nanmean, nanvar and nanstd look at the values the intake read, not at the object passed: a
host DLPack producer (no __array__) whose result had a NaN raised TypeError from numpy.isnan (an object array).  The
runner is replaced by one that answers NaN, so no GPU is needed."""
import warnings

import numpy as np
import pytest

import gpureduce
from gpureduce import _core


class HostDLPackOnly:
    """A DLPack producer of a host array, with nothing else NumPy could read."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**{k: v for k, v in kwargs.items() if k != "stream"})

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


@pytest.mark.parametrize("name, warning", [("nanmean", "Mean of empty slice"), ("nanvar", "Degrees of freedom"),
                                           ("nanstd", "Degrees of freedom")])
def test_nan_warnings_of_a_host_dlpack_producer(monkeypatch, name, warning):
    monkeypatch.setattr(_core, "run", lambda plan: np.full(2, np.nan))
    x = HostDLPackOnly(np.array([[np.nan, np.nan], [1.0, np.nan]]))
    with pytest.warns(RuntimeWarning, match=warning):
        getattr(gpureduce, name)(x, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning where every slice has numbers enough
        getattr(gpureduce, name)(HostDLPackOnly(np.array([[1.0, 2.0], [3.0, 4.0]])), axis=1)
