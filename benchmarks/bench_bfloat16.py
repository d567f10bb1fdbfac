"""bfloat16 (issue 15): gpureduce against PyTorch's own function on the same 2^28-element bfloat16 tensor (CuPy has
no bfloat16), whole, along rows (dim 1) and along columns (dim 0) of a square 2-D view, in one run, cold L2
(bench_axis.py's Timer: a scratch write of at least 256 MiB before every call, CUDA events, median of --repeat).

    python benchmarks/bench_bfloat16.py [--log2 28] [--repeat 20] [--markdown FILE] [--only sum,var,...]

Both read the tensor in place (gpureduce through DLPack) and accumulate in float32.  Columns: medians in µs,
gpureduce's GB/s and % of the device's read ceiling (copy ceiling for cumsum, which writes as much as it reads),
gpureduce / PyTorch.  Every gpureduce result is checked against a float64 reference: max and argmax exactly
(PyTorch's), the rest within 2^-7 of the reference plus 1e-5 of the same sum over |x| (float32 accumulation in any
order, then one bfloat16 rounding); a wrong one prints FAIL and the exit status is 1.
"""
from __future__ import annotations

import sys

import numpy as np

import gpureduce
from _common import commit, emit, table_arguments
from bench_axis import _stop_stream, one_size_setup

# operator -> (PyTorch's function over dim (None: the whole tensor), the float64 reference, exact?)
OPS = {
    "sum": (lambda torch, t, d: torch.sum(t) if d is None else torch.sum(t, d), "sum", False),
    "mean": (lambda torch, t, d: torch.mean(t) if d is None else torch.mean(t, d), "mean", False),
    "max": (lambda torch, t, d: torch.amax(t) if d is None else torch.amax(t, d), None, True),
    "argmax": (lambda torch, t, d: torch.argmax(t) if d is None else torch.argmax(t, d), None, True),
    "var": (lambda torch, t, d: torch.var(t, correction=0) if d is None else torch.var(t, d, correction=0), "var",
            False),
    "logsumexp": (lambda torch, t, d: torch.logsumexp(t.reshape(-1), 0) if d is None else torch.logsumexp(t, d),
                  "logsumexp", False),
    "vector_norm": (lambda torch, t, d: torch.linalg.vector_norm(t, dim=d), "norm", False),
    "cumsum": (lambda torch, t, d: torch.cumsum(t.reshape(-1), 0) if d is None else torch.cumsum(t, d), "cumsum",
               False),
}


def reference(torch, kind, t64, dim):
    """(value, scale) in float64 on the device: the exact answer and the sum of magnitudes its error scales with."""
    flat = t64.reshape(-1) if dim is None else t64
    d = 0 if dim is None else dim
    if kind == "sum":
        return flat.sum(d), flat.abs().sum(d)
    if kind == "mean":
        return flat.mean(d), flat.abs().mean(d)
    if kind == "var":
        return flat.var(d, correction=0), flat.var(d, correction=0)
    if kind == "logsumexp":
        value = torch.logsumexp(flat, d)
        return value, value.abs() + 1
    if kind == "norm":
        value = torch.linalg.vector_norm(t64, dim=dim)
        return value, value
    if kind == "cumsum":
        return torch.cumsum(flat, d), torch.cumsum(flat.abs(), d)
    raise ValueError(kind)


def check(torch, got, op, t, t64, dim):
    fn, kind, exact = OPS[op]
    got = got if isinstance(got, torch.Tensor) else torch.as_tensor(np.asarray(got).astype(np.float64))
    if exact:
        want = fn(torch, t, dim)
        return bool(torch.equal(got.to(want.device, want.dtype), want))
    value, scale = reference(torch, kind, t64, dim)
    got = got.to(value.device, torch.float64)
    if got.shape != value.shape:
        return False
    return bool(torch.all((got - value).abs() <= 2 ** -7 * value.abs() + 1e-5 * scale))


def main():
    args = table_arguments(__doc__, choices=list(OPS))
    import cupy
    import torch
    n, side, timer, read_gbps, copy_gbps = one_size_setup(cupy, args.log2)
    torch.manual_seed(15)
    flat = torch.randn(n, device="cuda", dtype=torch.float32).to(torch.bfloat16)
    lines = [f"# bfloat16: gpureduce and PyTorch on 2^{args.log2} bfloat16 elements (benchmarks/bench_bfloat16.py, "
             f"commit {commit()})", "",
             f"Read ceiling {read_gbps:.0f} GB/s, copy ceiling {copy_gbps:.0f} GB/s (read + write bytes); medians in "
             f"µs of {args.repeat} cold-L2 calls.", "",
             "| op | case | gpureduce | torch | GB/s | % ceiling (read; copy for cumsum) | gr / torch | correct |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    wrong = False
    grid = flat.reshape(n // side, side)
    for op in args.only:
        fn = OPS[op][0]
        for label, t, dim in (("whole", flat, None), ("rows (dim 1)", grid, 1), ("columns (dim 0)", grid, 0)):
            med = {}
            fns = {"gpureduce": lambda: getattr(gpureduce, op)(t, axis=dim), "torch": lambda: fn(torch, t, dim)}
            for name, call in fns.items():
                out = call()
                torch.cuda.synchronize()
                if name == "gpureduce":
                    t64 = t.double()
                    ok = check(torch, out, op, t, t64, dim)
                    del t64
                med[name] = float(np.median(timer(call, _stop_stream(cupy, out, timer.stream), args.repeat, 3)))
                del out
            wrong |= not ok
            moved = n * 2 * (2 if op == "cumsum" else 1)
            ceiling = copy_gbps if op == "cumsum" else read_gbps
            gbps = moved / (med["gpureduce"] * 1e-6) / 1e9
            line = (f"| {op} | {label} | {med['gpureduce']:.1f} | {med['torch']:.1f} | {gbps:.0f} | "
                    f"{100 * gbps / ceiling:.1f} | {med['gpureduce'] / med['torch']:.2f} | {'yes' if ok else 'FAIL'} |")
            print(line, flush=True)
            lines.append(line)
    emit("\n".join(lines), args.markdown)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
