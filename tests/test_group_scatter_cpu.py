"""The grouped scatter's arithmetic (cuda/axis/group_scatter_kernels.cuh, issue 40) run on the host by
tests/c/group_scatter_check.cu: each array reduced as one group by the kernels' own group_element and group_result,
whole and cut into pieces whose words combine as the blocks' do.  Sums and means (and their nan forms) must be the
exact sum rounded once, bit for bit (Python's fractions, test_exact_sum_cpu's hard sets: cancellations, subnormals,
the full exponent range, ties, overflow); max, min and their nan forms NumPy's answers, NaN where NumPy gives it,
an empty group's identity (-inf, +inf; NaN for the nan forms, as the sort path's segmented nanmax); integer sums
wrap as NumPy's, integer extremes exactly."""
import os
import struct
import subprocess
import tempfile

import numpy as np
import pytest

from test_exact_sum_cpu import bits, cases, correctly_rounded, mean_cases, same_bits
from test_stream_host_cpu import nvcc_host_check

TYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2, np.dtype(np.int64): 3,
         np.dtype(np.int8): 4}
FLOAT_OPS = ("sum", "nansum", "mean", "nanmean", "max", "min", "nanmax", "nanmin")
INT_OPS = ("sum", "max", "min")


@pytest.fixture(scope="module")
def scatter_check(tmp_path_factory):
    return nvcc_host_check(tmp_path_factory, "group_scatter_check")


def run(scatter_check, arrays, dtype):
    """{op: (whole, cut)} bits of each array reduced as one group, cut into 1 to 7 pieces."""
    dtype = np.dtype(dtype)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "records.bin")
        with open(path, "wb") as f:
            for i, x in enumerate(arrays):
                f.write(struct.pack("<iiq", TYPES[dtype], 1 + i % 7, x.size))
                f.write(np.ascontiguousarray(x, dtype).tobytes())
        done = subprocess.run([str(scatter_check), path], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [line.split()[1:] for line in done.stdout.split("\n") if line]
    assert len(lines) == len(arrays)
    ops = FLOAT_OPS if dtype.kind == "f" else INT_OPS
    return [{op: tuple(int(h, 16) for h in cell.split("/")) for op, cell in zip(ops, line)} for line in lines]


def extreme(op, x):
    """NumPy's max/min (NaN where one is), the nan forms' (NaN where no number is), the identity of an empty group."""
    numbers = x[~np.isnan(x)]
    if op in ("max", "min"):
        if x.size == 0:
            return x.dtype.type(-np.inf if op == "max" else np.inf)
        return x.dtype.type(np.nan) if numbers.size < x.size else getattr(np, op)(x)
    return getattr(np, op[3:])(numbers) if numbers.size else x.dtype.type(np.nan)


def half_sets():
    """float16 arrays: the float32 hard sets that float16 holds (cast), and mixes of its whole range."""
    with np.errstate(over="ignore"):  # float32's large values are float16's infinities
        out = [(name, x.astype(np.float16)) for name, x in cases(np.float32)]
    rng = np.random.default_rng(16)
    for seed in range(10):
        n = int(rng.integers(1, 3000))
        out.append((f"float16 mix {seed}", (rng.standard_normal(n) * 2.0 ** rng.integers(-24, 15, n))
                    .astype(np.float16)))
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16], ids=["float32", "float64", "float16"])
def test_floating_groups(scatter_check, dtype):
    named = half_sets() if dtype is np.float16 else cases(dtype) + mean_cases(dtype)
    with np.errstate(all="ignore"):  # the hard sets' overflows, cast to float16
        named = [(name, np.asarray(x, dtype)) for name, x in named]
    bad = []
    for (name, x), got in zip(named, run(scatter_check, [x for _, x in named], dtype)):
        numbers = x[~np.isnan(x)]
        want = {"sum": correctly_rounded(x, dtype), "nansum": correctly_rounded(numbers, dtype),
                "mean": correctly_rounded(x, dtype, divisor=x.size),
                "nanmean": correctly_rounded(numbers, dtype, divisor=numbers.size)}
        for op in FLOAT_OPS:
            whole, cut = got[op]
            if op in want:
                ok = same_bits(whole, want[op], dtype) and same_bits(cut, want[op], dtype)
                expected = want[op]
            else:  # extremes: NumPy's value (a signed zero either way: NumPy's own pick depends on its loop)
                expected = extreme(op, x)
                values = [np.array(b, np.dtype(f"u{x.itemsize}")).view(dtype) for b in (whole, cut)]
                ok = all((np.isnan(v) and np.isnan(expected)) or v == expected for v in values)
            if not ok:
                bad.append(f"{name} {op}: want {expected!r} ({bits(expected, dtype):x}), got {whole:x}/{cut:x}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("dtype", [np.int64, np.int8], ids=["int64", "int8"])
def test_integer_groups(scatter_check, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(8)
    arrays = [np.zeros(0, dtype), np.array([info.min], dtype), np.array([info.max, info.max, 1], dtype),
              np.array([info.min, -1, info.min], dtype), np.array([-5, 3, 0], dtype)]
    arrays += [rng.integers(info.min, info.max, int(rng.integers(1, 5000)), dtype=dtype, endpoint=True)
               for _ in range(12)]
    bad = []
    for x, got in zip(arrays, run(scatter_check, arrays, dtype)):
        with np.errstate(over="ignore"):
            want = {"sum": int(np.sum(x, dtype=np.int64)) & (2 ** 64 - 1),
                    "max": int(x.max()) if x.size else int(info.min), "min": int(x.min()) if x.size else int(info.max)}
        for op in INT_OPS:
            width = 64 if op == "sum" else 8 * x.itemsize
            expected = want[op] & (2 ** width - 1)
            if got[op] != (expected, expected):
                bad.append(f"{x[:6]}... {op}: want {expected:x}, got {got[op][0]:x}/{got[op][1]:x}")
    assert not bad, "\n".join(bad)
