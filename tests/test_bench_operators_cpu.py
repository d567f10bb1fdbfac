"""benchmarks/bench_operators.py without a GPU: every operator of its table has a NumPy reference its check reads,
and a result equal to that reference passes the check (so a renamed reference breaks this test, not a GPU run)."""
import os
import sys

import numpy as np
import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")


@pytest.fixture(scope="module")
def bench_operators():
    sys.path.insert(0, BENCH)
    try:
        import bench_operators
        yield bench_operators
    finally:
        sys.path.remove(BENCH)


def test_every_operator_of_the_table_has_a_reference_its_check_accepts(bench_operators):
    host = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    assert bench_operators.OPS
    for op in bench_operators.OPS:
        for axis in (None, 0, 1):
            want = bench_operators.reference(op, host, axis)
            assert bench_operators.correct(op, want, want, host, axis), (op, axis)
