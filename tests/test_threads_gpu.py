"""Threads: any number of them on shared or distinct host and device arrays, exact results, no CUDA error.

Host arrays used to be page-locked in place for each call; two threads locking and unlocking the pages of one
array broke each other's copies ("unspecified launch failure", and a dead CUDA context).  Host memory now moves
through pinned memory each call owns (src/transfer.c); these tests hold every thread's result to NumPy's,
exactly (integers), and check the context still works afterwards.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import gpureduce
from conftest import DEVICE_LIBRARIES

pytestmark = pytest.mark.gpu

THREADS = 16
ROUNDS = 6  # calls per thread and case


def run_threads(calls):
    """Run the (function, expected) pairs on THREADS threads; every result must equal its expected value."""
    def check(pair):
        fn, want = pair
        got = fn()
        got = got.get() if hasattr(got, "get") else np.asarray(got)
        np.testing.assert_array_equal(got, want)
        return True

    with ThreadPoolExecutor(THREADS) as pool:
        assert all(pool.map(check, calls))


def test_shared_host_arrays(rng):
    """Several threads reduce the same 8 MB and 72 MB host arrays at once (the reported crash)."""
    arrays = [rng.integers(-2**40, 2**40, n, dtype=np.int64) for n in (2**20, 9 * 2**20 + 5)]
    sums = [a.sum() for a in arrays]
    calls = [(lambda a=a: gpureduce.sum(a), s) for a, s in zip(arrays, sums)] * (THREADS * ROUNDS // 2)
    run_threads(calls)


def test_distinct_host_arrays(rng):
    arrays = [rng.integers(-1000, 1000, 2**20 + i, dtype=np.int64) for i in range(THREADS)]
    run_threads([(lambda a=a: gpureduce.max(a), a.max()) for a in arrays] * ROUNDS)


def test_shared_host_cumsum(rng):
    """Host scans: the result comes back through the staging ring while other threads send inputs."""
    a = rng.integers(-1000, 1000, 3 * 2**20 + 7, dtype=np.int32)  # 12 MB in, 24 MB of int64 out
    want = np.cumsum(a)
    run_threads([(lambda: gpureduce.cumsum(a), want)] * (THREADS * 2))


def test_shared_device_arrays(rng):
    host = rng.integers(-2**40, 2**40, 2**22, dtype=np.int64)
    dev = DEVICE_LIBRARIES["cupy"](host)
    run_threads([(lambda: gpureduce.sum(dev), host.sum())] * (THREADS * ROUNDS))


def test_mixed_then_the_context_still_works(rng):
    a = rng.integers(-1000, 1000, 2**21, dtype=np.int64)
    f = rng.integers(-1000, 1000, 5 * 2**20).astype(np.float64)  # exact in float64: integers
    dev = DEVICE_LIBRARIES["cupy"](a)
    calls = [(lambda: gpureduce.sum(a), a.sum()), (lambda: gpureduce.cumsum(f), np.cumsum(f)),
             (lambda: gpureduce.min(dev), a.min()), (lambda: gpureduce.sum(a.reshape(2, -1), axis=0),
                                                     a.reshape(2, -1).sum(axis=0))] * THREADS
    run_threads(calls)
    assert gpureduce.sum(np.arange(1000)) == 499500
