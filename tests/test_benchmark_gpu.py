"""A tiny benchmark end to end on the GPU: every column filled and plausible."""
import pytest

import gpureduce
from gpureduce.benchmark import benchmark, device_info

pytestmark = pytest.mark.gpu


def test_device_info_is_measured_once():
    info = device_info()
    assert info["sm_count"] > 0 and info["l2_bytes"] > 0 and info["memory_bytes"] > 2**30
    assert 100 < info["read_gbps"] < 20000 and 100 < info["copy_gbps"] < 20000
    assert device_info() == info


@pytest.mark.parametrize("op", ["sum", "max", "cumsum"])
def test_tiny_benchmark(op):
    kind = "scan" if op.startswith("cum") else "reduce"
    if not gpureduce.variants(kind=kind):
        pytest.skip(f"no {kind} variants in this build")
    result = benchmark(op, "all", sizes=[2**12, 2**20 + 3], dtype="float32", repeat=3, warmup=1, progress=False)
    ceiling = device_info()["read_gbps" if kind == "reduce" else "copy_gbps"]
    ours = [r for r in result if not r.peer]
    assert {r.variant for r in ours} == {v.name for v in gpureduce.variants(kind=kind)}
    assert {"cupy", "numpy"} <= {r.variant for r in result if r.peer} or op == "cummax"
    for r in result:
        assert r.min_us <= r.median_us <= r.max_us and r.median_us > 0
        assert 0 < r.gbps < 1.2 * ceiling, f"{r.variant}: {r.gbps} GB/s is above the ceiling {ceiling}"
    for r in ours:
        assert r.correct, f"{r.variant} n={r.n}: error {r.rel_error}"
        assert r.pct_ceiling is not None and r.speedup_total is not None and r.deterministic is not None
        v = next(v for v in gpureduce.variants(kind=kind) if v.name == r.variant)
        if v.deterministic:
            assert r.deterministic, f"{r.variant} is registered deterministic but was not"
    assert "GB/s" in str(result) and "<table>" in result._repr_html_()
