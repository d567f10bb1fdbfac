"""The workload compute-sanitizer checks (.ci/sanitize.sh): every variant x its operators x a few dtypes
(narrow, wide, float16, complex where the variant has them) x edge sizes, host and device inputs, plus axis
reductions and scans over transposed and sliced views, where=, out= and the strided copies behind casts.

Every result is compared with NumPy as it goes (a wrong answer is a finding too); the last line says how many
calls were made.  --quick keeps the sizes small (for racecheck, which is slow), but for `pipelined`, which needs
whole tiles to run its bulk copies.  --skip leaves variants out (sanitize.sh says why, per tool).

    python .ci/sanitizer_sweep.py [--quick] [--skip VARIANT[,VARIANT...]]
"""
from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np

import gpureduce
from gpureduce import _core
from gpureduce.testing import assert_matches_numpy

SIZES = (1, 33, 1025, 100_003)
QUICK_SIZES = (1, 33, 1025)
# `pipelined` bulk-copies whole tiles only (9216 or 5632 elements, cuda/variants/pipeline_tiles.cuh): its quick
# sizes take in a few tiles and a partial one
PIPELINED_QUICK_SIZES = (1025, 20_003)
# a few dtypes of each kind a variant may list: narrow, wide, half, complex
PICK = ("int8", "int32", "int64", "uint16", "float16", "float32", "float64", "complex64")
REDUCE_FUNCS = {"sum": "sum", "prod": "prod", "min": "min", "max": "max"}
SCAN_FUNCS = {"sum": "cumsum", "prod": "cumprod", "min": "cummin", "max": "cummax"}


def data(rng, dtype, shape):
    """Exact-valued data: small integers (products of +-1), so every variant's answer can be compared."""
    if dtype.startswith("complex"):
        return (rng.integers(-2, 3, shape) + 1j * rng.integers(-2, 3, shape)).astype(dtype)
    if dtype.startswith("u"):
        return rng.integers(0, 3, shape).astype(dtype)
    return rng.integers(-2, 3, shape).astype(dtype)


def sweep(quick, skip=()):
    rng = np.random.default_rng(12)
    calls = 0
    for v in gpureduce.variants():
        if v.name in skip:
            continue
        sizes = SIZES if not quick else PIPELINED_QUICK_SIZES if v.name == "pipelined" else QUICK_SIZES
        funcs = REDUCE_FUNCS if v.kind == "reduce" else SCAN_FUNCS
        for op in v.ops:
            name = funcs.get(op)
            if name is None:
                continue
            for dtype in [d for d in PICK if d in v.dtypes][:4]:
                for n in sizes:
                    host = data(rng, dtype, n)
                    if op == "prod":  # +-1 factors: exact products in every dtype
                        host = (host.real >= 0).choose(-1, 1).astype(dtype) if dtype[0] != "u" else \
                            np.ones(n, dtype)
                    for arg in (host, _core.to_device(host)):
                        assert_matches_numpy(name, arg, variant=v.name)
                        calls += 1
    # the axis machinery: views, where=, out=, casts (auto and cub)
    for variant in ("auto", "cub"):
        for dtype in ("int8", "float16", "float32", "float64", "complex128"):
            m = data(rng, dtype, (37, 129))
            d = _core.to_device(m)
            for view in (m.T, m[::3, 5:-7], d):
                for axis in (0, 1, None):
                    assert_matches_numpy("sum", view, axis=axis, variant=variant)
                    assert_matches_numpy("max", view, axis=axis, variant=variant)
                    assert_matches_numpy("cumsum", view, axis=axis, variant=variant)
                    calls += 3
            for axis in (0, 1):
                assert_matches_numpy("argmax", d, axis=axis, variant=variant)
                assert_matches_numpy("mean", d, axis=axis, variant=variant)
                assert_matches_numpy("cummax", d, axis=axis, variant=variant)
                calls += 3
                if dtype != "complex128":
                    assert_matches_numpy("sum", d, axis=axis, dtype=np.float64, variant=variant)
                    assert_matches_numpy("max", m, axis=axis, where=m > 0, initial=0, variant=variant)
                    calls += 2
            if dtype != "complex128":  # out= written through the runner, NaN-poisoned first
                out = _core.empty((129,), np.dtype(np.float64), fill_byte=0xFF)
                gpureduce.sum(d, axis=0, out=out, variant=variant)
                np.testing.assert_array_equal(out.get(), m.astype(np.float64).sum(axis=0))
                calls += 1
    return calls


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes only (racecheck)")
    p.add_argument("--skip", default="", help="variants to leave out, comma-separated")
    args = p.parse_args(argv)
    skip = {name for name in args.skip.split(",") if name}
    unknown = skip - {v.name for v in gpureduce.variants()}
    if unknown:
        p.error(f"--skip: no variant named {', '.join(sorted(unknown))}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        calls = sweep(args.quick, skip)
    print(f"sanitizer sweep: {calls} calls, every result as NumPy's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
