"""Kernels outside the hot set, compiled on first use (issue 37; src/jit.c, cuda/abi/hot_set.def): every pair of
dtypes casts to NumPy's values and the axis reductions and scans outside the hot set give NumPy's answers, whether
their kernels were compiled ahead of time or by NVRTC, and a later process reads the kernels from the disk cache
instead of compiling them.  (The whole GPU suite runs every operator and dtype through them too.)"""
import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from gpureduce import _core
from gpureduce._planning.operands import copy_plan, intake

pytestmark = pytest.mark.gpu

VALUES = [0, 1, 2, 3, 5, 7, 100, 127]  # exact in every dtype


def _dtype(name):
    if name == "bfloat16":
        return np.dtype(pytest.importorskip("ml_dtypes").bfloat16)
    return np.dtype(name)


def _host(name, shape):
    dt = _dtype(name)
    values = np.resize(np.array(VALUES), shape)
    if dt.kind == "c":
        return (values + 1j * values[..., ::-1]).astype(dt)  # a nonzero imaginary part NumPy drops or tests
    return values.astype(dt)


def _cast_on_device(host, to, strided):
    x = intake(_core.to_device(host))
    if strided:  # every other column: a gathered copy
        shape, strides = (host.shape[0], host.shape[1] // 2), (x.strides[0], 2 * x.strides[1])
    else:
        shape, strides = host.shape, x.strides
    return _core.run(copy_plan(x, to, shape, strides)).get()


def _expected(host, to, strided):
    view = host[:, ::2] if strided else host
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        return view.astype(to)


def test_every_cast_gives_numpys_values():
    names = _core.dtype_names
    checked = 0
    for a in names:
        host = _host(a, (3, 64))
        for b in names:
            to = _dtype(b)
            for strided in (False, True):
                got = _cast_on_device(host, to, strided)
                want = _expected(host, to, strided)
                assert got.dtype == want.dtype, (a, b)
                np.testing.assert_array_equal(got.astype(np.float64) if b == "bfloat16" else got,
                                              want.astype(np.float64) if b == "bfloat16" else want, err_msg=f"{a} -> {b}")
                checked += 1
    assert checked == 2 * len(names) ** 2
    info = _core.jit_info()
    casts = [name for program, name in _core.jit_kernels() if program == 0]  # cuda/abi/jit.h: GR_JIT_COPY_STRIDED
    assert info["kernels_loaded"] >= len(casts), info  # every first-use cast was loaded once
    before = info["found_in_process"]
    _cast_on_device(_host("int8", (3, 64)), _dtype("float32"), False)  # a first-use pair, used again
    assert _core.jit_info()["found_in_process"] == before + 1


def test_a_later_process_reads_the_kernels_from_the_cache(tmp_path):
    code = textwrap.dedent("""
        import json, numpy as np
        from gpureduce import _core
        from gpureduce._planning.operands import copy_plan, intake
        x = intake(_core.to_device(np.arange(10, dtype=np.int8)))
        got = _core.run(copy_plan(x, np.dtype(np.float32), x.shape, x.strides)).get()
        assert (got == np.arange(10, dtype=np.float32)).all(), got
        print(json.dumps(_core.jit_info()))
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GPUREDUCE_KERNEL_CACHE": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                           cwd=str(tmp_path)) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), [r.stdout + r.stderr for r in runs]
    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert first["compiled"] == 1 and first["read_from_disk"] == 0, first
    assert second["compiled"] == 0 and second["read_from_disk"] == 1, second
    (entry,) = tmp_path.glob("*.cubin")
    head, _ = entry.read_bytes().split(b"\n", 1)
    entry.write_bytes(head + b"\n" + b"not a cubin" * 100)  # a file the driver refuses: compiled again
    third = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                           cwd=str(tmp_path))
    assert third.returncode == 0, third.stdout + third.stderr
    info = json.loads(third.stdout.strip().splitlines()[-1])
    assert info["read_from_disk"] == 1 and info["compiled"] == 1, info
    assert entry.read_bytes().split(b"\n", 1)[1][:4] == b"\x7fELF"  # the cache holds a cubin again


def test_a_sum_whose_cast_compiles_on_first_use():
    """The README's example: int8 rows summed in float32 cast int8 to float32 first, a pair outside the hot set."""
    import gpureduce
    from conftest import _cupy
    cp = _cupy()
    host = np.random.default_rng(0).integers(-128, 128, (64, 1000), dtype=np.int8)
    got = gpureduce.sum(cp.asarray(host), axis=1, dtype=np.float32)
    np.testing.assert_array_equal(cp.asnumpy(got), host.sum(axis=1, dtype=np.float32))


# (function, dtype, kwargs): operators and dtypes outside the hot set, and hot operators on dtypes or dtype= outside
# it, along rows, columns and whole arrays (the kernels of axis/segments_kernels.cuh and scan_segments_kernels.cuh)
TAIL_CALLS = [
    ("prod", "int16", {"axis": 1}), ("prod", "float32", {"axis": 0}), ("nanvar", "float32", {"axis": 1}),
    ("nanstd", "float16", {"axis": 0}), ("ptp", "uint8", {"axis": 1}), ("any", "uint16", {"axis": 0}),
    ("count_nonzero", "int8", {"axis": 1}), ("nanargmax", "float64", {"axis": 0}), ("vector_norm", "float32", {}),
    ("logsumexp", "float64", {"axis": 1}), ("sum", "int8", {"axis": 1}), ("sum", "float16", {"axis": 0, "dtype": "float32"}),
    ("argmax", "uint64", {"axis": 1}), ("min", "complex64", {"axis": 0}), ("mean", "uint32", {}),
    ("var", "int16", {"axis": 0}), ("cumprod", "int16", {"axis": 1}), ("cummax", "uint8", {"axis": 0}),
    ("cumsum", "int8", {"axis": 1}), ("nancumsum", "float32", {"axis": 0}), ("cumsum", "float32", {"axis": 0, "dtype": "float64"}),
]


@pytest.mark.parametrize("func, dtype, kwargs", TAIL_CALLS, ids=lambda v: str(v))
@pytest.mark.parametrize("shape", [(3, 1000), (2000, 7), (64, 33)])
def test_calls_outside_the_hot_set_give_numpys_answers(func, dtype, kwargs, shape):
    from gpureduce.testing import assert_matches_numpy
    rng = np.random.default_rng(abs(hash((func, dtype, shape))) % 2**32)
    dt = _dtype(dtype)
    if dt.kind in "iu":
        host = rng.integers(0, 4 if func in ("prod", "cumprod") else 100, shape).astype(dt)
    elif dt.kind == "c":
        host = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    else:
        host = rng.standard_normal(shape).astype(dt)
        if func.startswith("nan"):
            host[rng.random(shape) < 0.1] = np.nan
    kw = dict(kwargs)
    if "dtype" in kw:
        kw["dtype"] = np.dtype(kw["dtype"])
    assert_matches_numpy(func, host, **kw)


HOT_CALLS = textwrap.dedent("""
    import json, numpy as np
    import gpureduce
    from gpureduce import _core
    rng = np.random.default_rng(0)
    dtypes = list(_core.hot_set["dtypes"])
    ran = 0
    for name in dtypes:
        dt = np.dtype(name) if name != "bfloat16" else None
        if dt is None:
            try:
                import ml_dtypes
                dt = np.dtype(ml_dtypes.bfloat16)
            except ImportError:
                continue
        for shape in [(1 << 12,), (3, 1000), (2000, 7), (64, 33), (1 << 20, 2), (2, 1 << 17)]:
            host = (rng.standard_normal(shape) * 10).astype(dt)
            x = _core.to_device(host)
            for func in _core.hot_set["reduce"]:
                for axis in ([None] if len(shape) == 1 else [None, 0, 1]):
                    np.asarray(getattr(gpureduce, func)(x, axis=axis))
                    ran += 1
            for func in _core.hot_set["scan"]:
                for axis in ([None] if len(shape) == 1 else [0, 1]):
                    np.asarray(getattr(gpureduce, "cum" + func)(x, axis=axis))
                    ran += 1
    for kind, func, name in _core.cub_hot_set:  # CUB's baseline of the cells the tables measure
        x = _core.to_device((rng.standard_normal((3000, 40)) * 10).astype(name))
        for axis in (0, 1):
            np.asarray(getattr(gpureduce, func if kind == "reduce" else "cum" + func)(x, axis=axis, variant="cub"))
            ran += 1
    info = _core.jit_info()
    print(json.dumps({"ran": ran, "compiled": info["compiled"], "loaded": info["kernels_loaded"],
                      "read": info["read_from_disk"]}))
""")


def test_the_hot_set_never_compiles_at_run_time(tmp_path):
    """Every hot operator on every hot dtype, rows, columns and whole arrays, and CUB's hot baselines, run in a
    process whose NVRTC is missing (any first-use kernel would raise) and whose kernel cache is empty: nothing compiled, nothing loaded."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GPUREDUCE_KERNEL_CACHE": str(tmp_path),
           "GPUREDUCE_NVRTC": str(tmp_path / "no" / "libnvrtc.so")}
    done = subprocess.run([sys.executable, "-c", HOT_CALLS], capture_output=True, text=True, env=env, timeout=300,
                          cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    info = json.loads(done.stdout.strip().splitlines()[-1])
    assert info["ran"] > 500 and info["compiled"] == 0 and info["loaded"] == 0 and info["read"] == 0, info
    assert not list(tmp_path.glob("*.cubin"))
