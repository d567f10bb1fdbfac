"""Issue 15's operator table: each operator gpureduce added to NumPy's reduction family (and SciPy's logsumexp,
PyTorch's logcumsumexp) against CuPy's and PyTorch's own function for it (where the library has one), on the same
float32 CuPy array in one run, cold L2 (bench_axis.py's Timer: a scratch write of at least 256 MiB before every
call, CUDA events, median of --repeat calls).

    python benchmarks/bench_operators.py [--log2 28] [--repeat 20] [--markdown FILE] [--only var,nanvar,...]
    (on the GPU machine: STEPS=operators bash .ci/device_check.sh; results in benchmarks/results/operators_h200.md)

Cases: the whole array, row reductions (axis 1) and column reductions (axis 0) of a square 2-D view of it.  The
operators of two operands (dot, vdot, logsumexp's weights b) read a second float32 array of the same shape (uniform
in [0.5, 2)): 2 n elements, their GB/s counts both. Data: for
any, all and count_nonzero zeros with one nonzero element in every 4096 (so neither any nor all has a short answer);
for the nan functions standard normal values with one NaN in every 4099 (no row or column of NaNs only); for the
rest standard normal values. Columns: each library's median in µs ("-": it has no such function), gpureduce's GB/s
and % of the device's read ceiling (device_info()["read_gbps"]; its copy ceiling for the scans, which write as
much as they read), and gpureduce / the faster peer. Every gpureduce
result is checked against NumPy on a host copy: integer, bool and ptp results exactly; sums and means against NumPy
in float64, within 1e-5 of the sum (mean) of the magnitudes, what float32 accumulation in any order keeps; logsumexp
and logcumsumexp against float64 within 1e-3 (|x| + 1); the rest within 1e-4 relative of NumPy's float32 result. A
wrong one prints FAIL and the exit status is 1.
"""
from __future__ import annotations

import sys

import numpy as np

import gpureduce
from gpureduce import testing
from _common import commit, emit, table_arguments
from bench_axis import _stop_stream, one_size_setup

def _cupy_own(op):
    return lambda cupy, x, axis: getattr(cupy, op)(x, axis=axis)


def _torch_whole(fn):
    """PyTorch's function that needs a dimension, over the flattened tensor when axis is None."""
    return lambda torch, t, dim: fn(torch, t.reshape(-1), 0) if not dim else fn(torch, t, dim["dim"])


def _cupy_logsumexp(cupy, x, axis):
    from cupyx.scipy.special import logsumexp
    return logsumexp(x, axis=axis)


# operator -> (data, CuPy's own function, PyTorch's own function); None where the library has none
OPS = {
    "any": ("sparse", _cupy_own("any"), lambda torch, t, dim: torch.any(t, **dim)),
    "all": ("sparse", _cupy_own("all"), lambda torch, t, dim: torch.all(t, **dim)),
    "count_nonzero": ("sparse", _cupy_own("count_nonzero"), lambda torch, t, dim: torch.count_nonzero(t, **dim)),
    "ptp": ("normal", _cupy_own("ptp"), None),
    "var": ("normal", _cupy_own("var"), lambda torch, t, dim: torch.var(t, correction=0, **dim)),
    "std": ("normal", _cupy_own("std"), lambda torch, t, dim: torch.std(t, correction=0, **dim)),
    "logsumexp": ("normal", _cupy_logsumexp, _torch_whole(lambda torch, t, d: torch.logsumexp(t, d))),
    "logcumsumexp": ("normal", None, _torch_whole(lambda torch, t, d: torch.logcumsumexp(t, d))),
    "nansum": ("nan", _cupy_own("nansum"), lambda torch, t, dim: torch.nansum(t, **dim)),
    "nanprod": ("nan", _cupy_own("nanprod"), None),
    "nanmin": ("nan", _cupy_own("nanmin"), None),
    "nanmax": ("nan", _cupy_own("nanmax"), None),
    "nanmean": ("nan", _cupy_own("nanmean"), lambda torch, t, dim: torch.nanmean(t, **dim)),
    "nanargmin": ("nan", _cupy_own("nanargmin"), None),
    "nanargmax": ("nan", _cupy_own("nanargmax"), None),
    "nanvar": ("nan", _cupy_own("nanvar"), None),
    "nanstd": ("nan", _cupy_own("nanstd"), None),
    "nancumsum": ("nan", _cupy_own("nancumsum"), None),
    "nancumprod": ("nan", _cupy_own("nancumprod"), None),
    "vector_norm": ("normal", lambda cupy, x, axis: cupy.linalg.norm(x, axis=axis),
                    lambda torch, t, dim: torch.linalg.vector_norm(t, **dim)),
}
SCANS = {"logcumsumexp", "nancumsum", "nancumprod"}  # write n elements too: measured against the copy ceiling


def _cupy_weighted_logsumexp(cupy, x, y, axis):
    from cupyx.scipy.special import logsumexp
    return logsumexp(x, axis=axis, b=y)


# operators of two operands, x and a second array y of its shape (positive weights for logsumexp's b):
# name -> (gpureduce's call, CuPy's own, PyTorch's own, whether it takes an axis); read bytes: both arrays
PAIRS = {
    "dot": (lambda x, y, axis: gpureduce.dot(x, y), lambda cupy, x, y, axis: cupy.dot(x, y),
            lambda torch, x, y, dim: torch.dot(x, y), False),
    "vdot": (lambda x, y, axis: gpureduce.vdot(x, y), lambda cupy, x, y, axis: cupy.vdot(x, y),
             lambda torch, x, y, dim: torch.vdot(x, y), False),
    "logsumexp_b": (lambda x, y, axis: gpureduce.logsumexp(x, axis=axis, b=y), _cupy_weighted_logsumexp, None, True),
}


def pair_reference(op, hx, hy, axis):
    """float64 answers of the pair operators (SciPy's logsumexp with b where installed)."""
    wx, wy = hx.astype(np.float64), hy.astype(np.float64)
    if op in ("dot", "vdot"):
        return np.dot(wx, wy), float(np.dot(np.abs(wx), np.abs(wy)))
    m = np.max(wx, axis=axis, keepdims=True)
    s = np.sum(wy * np.exp(wx - m), axis=axis, keepdims=True)
    return np.squeeze(np.log(s) + m, axis=axis) if axis is not None else (np.log(s) + m)[(0,) * wx.ndim], None


def make_data(cupy, kind, n):
    if kind == "sparse":
        x = cupy.zeros(n, dtype=cupy.float32)
        x[::4096] = 1.5
        return x
    x = cupy.random.default_rng(7).standard_normal(n, dtype=cupy.float32)
    if kind == "nan":
        x[7::4099] = cupy.nan
    return x


def reference(op, host, axis):
    """NumPy's answer (SciPy's logsumexp; the scans flattened for axis=None): gpureduce.testing's references."""
    return testing.NUMPY_FUNCTIONS[op](host, axis=axis)


def correct(op, got, want, host, axis):
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if want.dtype.kind in "biu" or op == "ptp":
        return np.array_equal(got, want, equal_nan=True)
    if op in ("nansum", "nanmean", "nancumsum"):  # cancellation: the error scales with the magnitudes
        wide = host.astype(np.float64)
        exact = getattr(np, op)(wide, axis=axis)
        scale = getattr(np, op)(np.abs(wide), axis=axis)
        return bool(np.all(np.abs(got - exact) <= 1e-5 * scale))
    if op in ("logsumexp", "logcumsumexp"):  # NumPy's serial float32 logaddexp chain is the less accurate one
        exact = reference(op, host.astype(np.float64), axis)
        return bool(np.all(np.abs(got - exact) <= 1e-3 * (np.abs(exact) + 1)))
    return np.allclose(got, want, rtol=1e-4, atol=1e-30, equal_nan=True)  # (atol: float32's subnormals)


def main():
    args = table_arguments(__doc__, choices=[*OPS, *PAIRS])
    import cupy
    try:
        import torch
    except ImportError:
        torch = None
    n, side, timer, read_gbps, copy_gbps = one_size_setup(cupy, args.log2)
    title = f"# NumPy's reduction family on 2^{args.log2} float32 (benchmarks/bench_operators.py, commit {commit()})"
    lines = [title,
             "", f"Read ceiling {read_gbps:.0f} GB/s, copy ceiling {copy_gbps:.0f} GB/s (read + write bytes); "
             f"medians in µs of {args.repeat} cold-L2 calls; \"-\": the library has no such function.", "",
             "| op | case | gpureduce | cupy | torch | GB/s | % ceiling (read; copy for scans) | gr / best peer | "
             "correct |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    wrong = False
    data = {}
    for op in (o for o in OPS if o in args.only and hasattr(gpureduce, o)):
        kind, cupy_fn, torch_fn = OPS[op]
        if kind not in data:
            data.clear()  # one array on the device at a time
            flat = make_data(cupy, kind, n)
            data[kind] = (flat, flat.get())
        flat, host = data[kind]
        grid = flat.reshape(n // side, side)
        cases = [("whole", flat, host, None), ("rows (axis 1)", grid, host.reshape(grid.shape), 1),
                 ("columns (axis 0)", grid, host.reshape(grid.shape), 0)]
        for label, x, hx, axis in cases:
            with np.errstate(all="ignore"):
                want = reference(op, hx, axis)
            fns = {"gpureduce": lambda: getattr(gpureduce, op)(x, axis=axis)}
            if cupy_fn is not None:
                fns["cupy"] = lambda: cupy_fn(cupy, x, axis)
            if torch is not None and torch_fn is not None:
                tx = torch.from_dlpack(x)
                dim = {} if axis is None else {"dim": axis}
                fns["torch"] = lambda: torch_fn(torch, tx, dim)
            med, ok = measure(fns, lambda got: correct(op, got, want, hx, axis), cupy, timer, args.repeat)
            wrong |= not ok
            moved = n * 4 * (2 if op in SCANS else 1)
            lines.append(row(op, label, med, moved, copy_gbps if op in SCANS else read_gbps, ok))
    wrong |= pair_rows(cupy, torch, timer, args, n, side, read_gbps, lines)
    text = "\n".join(lines)
    emit(text, args.markdown)
    return 1 if wrong else 0


def pair_rows(cupy, torch, timer, args, n, side, read_gbps, lines):
    """The rows of the operators of two operands (PAIRS): 2 n float32 elements read; whether one was wrong."""
    wanted = [op for op in PAIRS if op in args.only]
    if not wanted:
        return False
    rng = cupy.random.default_rng(11)
    flat_x = rng.standard_normal(n, dtype=cupy.float32)
    flat_y = rng.uniform(0.5, 2.0, n, dtype=cupy.float32)
    hx, hy = flat_x.get(), flat_y.get()
    wrong = False
    for op in wanted:
        call, cupy_fn, torch_fn, takes_axis = PAIRS[op]
        cases = [("whole", flat_x, flat_y, hx, hy, None)]
        if takes_axis:
            shape = (n // side, side)
            cases += [(label, flat_x.reshape(shape), flat_y.reshape(shape), hx.reshape(shape), hy.reshape(shape), ax)
                      for label, ax in (("rows (axis 1)", 1), ("columns (axis 0)", 0))]
        for label, x, y, cx, cy, axis in cases:
            fns = {"gpureduce": lambda: call(x, y, axis)}
            if cupy_fn is not None:
                fns["cupy"] = lambda: cupy_fn(cupy, x, y, axis)
            if torch is not None and torch_fn is not None:
                tx, ty = torch.from_dlpack(x), torch.from_dlpack(y)
                fns["torch"] = lambda: torch_fn(torch, tx, ty, {} if axis is None else {"dim": axis})
            exact, scale = pair_reference(op, cx, cy, axis)
            bound = 1e-5 * scale if scale is not None else 1e-4 * (np.abs(exact) + 1)

            def close(got):
                got = np.asarray(got, np.float64)
                return got.shape == np.shape(exact) and bool(np.all(np.abs(got - exact) <= bound))

            med, ok = measure(fns, close, cupy, timer, args.repeat)
            wrong |= not ok
            lines.append(row(op, label, med, 2 * n * 4, read_gbps, ok))
    return wrong


def measure(fns, check, cupy, timer, repeat):
    """({library: median µs}, whether gpureduce's result passes `check`), each call timed cold-L2."""
    med, ok = {}, True
    for name, fn in fns.items():
        out = fn()
        if name == "gpureduce":
            ok = check(out.get() if hasattr(out, "get") else out)
        times = timer(fn, _stop_stream(cupy, out, timer.stream), repeat, 3)
        med[name] = float(np.median(times))
        del out
    return med, ok


def row(op, label, med, moved, ceiling, ok):
    """One table line (printed as it is made): medians, gpureduce's GB/s over `moved` bytes and % of `ceiling`."""
    gbps = moved / (med["gpureduce"] * 1e-6) / 1e9
    peers = [v for k, v in med.items() if k != "gpureduce"]
    ratio = f"{med['gpureduce'] / min(peers):.2f}" if peers else "-"
    cells = " | ".join(f"{med[k]:.1f}" if k in med else "-" for k in ("cupy", "torch"))
    line = (f"| {op} | {label} | {med['gpureduce']:.1f} | {cells} | {gbps:.0f} | {100 * gbps / ceiling:.1f} | "
            f"{ratio} | {'yes' if ok else 'FAIL'} |")
    print(line, flush=True)
    return line


if __name__ == "__main__":
    sys.exit(main())
