"""Host arrays (issue 13): wall-clock from a NumPy float32 array to the finished NumPy result, in one process.

    python benchmarks/bench_host.py                          # on the GPU machine: n = 2^10 ... 2^28, ~1 min
    python benchmarks/bench_host.py --quick                  # n = 2^20 and 2^24 only
    python benchmarks/bench_host.py --sizes 16,20,24 --markdown benchmarks/results/host_h200.md

What it measures, for each n (uniform [0, 1) float32 data):
  * sum: gpureduce.sum(a), NumPy's a.sum(), PyTorch's torch.from_numpy(a).cuda().sum().item();
  * cumsum: gpureduce.cumsum(a), NumPy's np.cumsum(a), PyTorch's torch.from_numpy(a).cuda().cumsum(0).cpu().numpy();
  * time.perf_counter around each whole call (freeing its result is not timed): one warm-up call, then the
    median of 7 calls (3 for n >= 2^26, 1 for NumPy's cumsum at 2^28, which takes about a second);
  * the warm-up call of gpureduce is checked against NumPy first: sum within a relative 1e-5 * log2(n) of the
    float64 sum, cumsum np.allclose to the float64 cumsum (rtol 1e-4, atol 1e-4 * log2(n) * sqrt(n)); a
    wrong answer prints FAIL, leaves its cell FAIL and makes the exit status 1;
  * the ceilings of any host-array call, from gpureduce.device_info(): pinned host -> device (h2d_gbps) and
    back (d2h_gbps), hence each n's transfer floor: sum uploads n*4 bytes; cumsum also downloads them, at
    best overlapped with the upload (the slower direction), at worst one after the other (the sum of both);
  * the crossover: the smallest n from which gpureduce beats NumPy at every larger size measured.

The output is markdown (a table, the ceilings and floors, the crossover); --markdown PATH writes it to a file
as well.  PyTorch's columns say why they are empty where it or its CUDA is missing.  Set GR_COMMIT to name the
commit measured (the GPU machine's copy of the tree has no .git).  Exit status: 0; 1 when a result was wrong;
2 without a CUDA device.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import numpy as np

import gpureduce
from _common import commit

DEFAULT_LOG2 = (10, 14, 16, 18, 20, 22, 24, 26, 28)
QUICK_LOG2 = (20, 24)
REPEATS = 7
LARGE_LOG2, LARGE_REPEATS = 26, 3  # from 2^26 on, a call takes tens of ms: 3 are enough
ITEM = 4  # bytes of a float32
COLUMNS = ("n", "gpureduce sum", "NumPy sum", "PyTorch sum", "sum vs NumPy (x)", "gpureduce cumsum", "NumPy cumsum",
           "PyTorch cumsum", "cumsum vs NumPy (x)")


# ----------------------------------------------------------------------------- arguments

def parse_log2(text):
    """'20,24' -> [20, 24]: sizes as exponents of two."""
    try:
        ks = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes {text!r}: expected exponents such as 20,24") from None
    if not ks or any(k < 0 or k > 31 for k in ks):
        raise argparse.ArgumentTypeError(f"--sizes {text!r}: exponents from 0 to 31")
    return sorted(set(ks))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--sizes", type=parse_log2, default=list(DEFAULT_LOG2), metavar="K,K,...",
                       help="n = 2^K for each K (default: %(default)s)")
    which.add_argument("--quick", action="store_true", help="n = 2^20 and 2^24 only")
    p.add_argument("--markdown", metavar="PATH", help="write the output to PATH as well")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes = list(QUICK_LOG2)
    return args


# ----------------------------------------------------------------------------- measuring

def torch_or_why():
    """(torch, None) where PyTorch can run on the GPU, else (None, why not)."""
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed"
    if not torch.cuda.is_available():
        return None, "PyTorch has no CUDA here"
    return torch, None


def median_wall(fn, repeats):
    """Median seconds of `repeats` calls of fn(); each result is freed after its clock stops."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = fn()
        times.append(time.perf_counter() - t0)
        del r
    return statistics.median(times)


def sum_error(a, r):
    """Why gpureduce.sum's result `r` is wrong, or None: relative error within 1e-5 * log2(n) of float64."""
    ref = float(np.sum(a, dtype=np.float64))
    err = abs(float(r) - ref) / max(abs(ref), np.finfo(np.float64).tiny)
    bound = 1e-5 * max(math.log2(a.size), 1.0)
    return None if err <= bound else f"relative error {err:.2e} > {bound:.2e} (got {float(r)!r}, expected {ref!r})"


def cumsum_error(a, r):
    """Why gpureduce.cumsum's result `r` is wrong, or None: NumPy's shape, close to the float64 cumsum."""
    r = np.asarray(r)
    if r.shape != a.shape:  # allclose would broadcast a wrong shape
        return f"shape {r.shape}, expected {a.shape}"
    atol = 1e-4 * max(math.log2(a.size), 1.0) * a.size**0.5
    if np.allclose(r, np.cumsum(a, dtype=np.float64), rtol=1e-4, atol=atol):
        return None
    return f"not within rtol 1e-4, atol {atol:.2e} of the float64 cumsum"


def measure(k, rng, torch):
    """{column: median seconds (None: not measured, "FAIL": wrong)} for n = 2^k, and the FAIL lines."""
    n = 2**k
    a = rng.random(n, dtype=np.float32)
    reps = LARGE_REPEATS if k >= LARGE_LOG2 else REPEATS
    calls = {  # column -> (call, check of its result or None)
        "gpureduce sum": (lambda: gpureduce.sum(a), sum_error),
        "NumPy sum": (lambda: np.sum(a), None),
        "PyTorch sum": (lambda: torch.from_numpy(a).cuda().sum().item(), None) if torch else None,
        "gpureduce cumsum": (lambda: gpureduce.cumsum(a), cumsum_error),
        "NumPy cumsum": (lambda: np.cumsum(a), None),
        "PyTorch cumsum": (lambda: torch.from_numpy(a).cuda().cumsum(0).cpu().numpy(), None) if torch else None,
    }
    times, failures = {}, []
    for column, call in calls.items():
        if call is None:
            times[column] = None
            continue
        fn, check = call
        r = fn()  # the warm-up call, checked before anything is timed
        why = check(a, r) if check else None
        del r
        if why:
            failures.append(f"FAIL {column} n=2^{k}: {why}")
            print(failures[-1], file=sys.stderr, flush=True)
            times[column] = "FAIL"
            continue
        times[column] = median_wall(fn, 1 if column == "NumPy cumsum" and k >= 28 else reps)
        print(f"  2^{k} {column}: {format_time(times[column])}", file=sys.stderr, flush=True)
    return times, failures


def ceilings():
    """(h2d GB/s, d2h GB/s, device name), the GB/s None where this build's device_info() has no such key."""
    try:
        info = gpureduce.device_info()
    except ValueError:  # an extension built before time_ceiling("h2d"): the Python side asks for it in vain
        return None, None, "?"
    try:
        return info["h2d_gbps"], info["d2h_gbps"], info["name"]
    except KeyError:
        return None, None, info.get("name", "?")


# ----------------------------------------------------------------------------- the report

def format_time(s):
    """'414 µs', '43.2 µs', '2.22 ms', '129 ms'; '—' not measured, 'FAIL' wrong."""
    if s is None or s == "FAIL":
        return "—" if s is None else "FAIL"
    value, unit = (s * 1e6, "µs") if s < 1e-3 else (s * 1e3, "ms")
    return f"{value:.{0 if value >= 100 else 1 if value >= 10 else 2}f} {unit}"


def speedup(ours, numpy):
    """NumPy's time over ours, where both were measured and right."""
    if isinstance(ours, float) and isinstance(numpy, float) and ours > 0:
        return numpy / ours
    return None


def crossover(results, what):
    """The smallest n from which gpureduce's `what` beats NumPy's at every larger size measured, in words."""
    since = None
    for k, t in results:
        x = speedup(t[f"gpureduce {what}"], t[f"NumPy {what}"])
        if x is not None and x > 1:
            since = k if since is None else since
        else:
            since = None
    if since is None:
        return f"gpureduce.{what} is not ahead of NumPy at the largest size measured"
    if since == results[0][0]:
        return f"gpureduce.{what} beats NumPy at every size measured (from 2^{since})"
    return f"gpureduce.{what} beats NumPy from n = 2^{since}"


def markdown_table(heads, rows):
    lines = ["| " + " | ".join(heads) + " |", "|---|" + "---:|" * (len(heads) - 1)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def report(results, h2d, d2h, device, torch_why):
    rows = []
    for k, t in results:
        row = [f"2^{k}"]
        for what in ("sum", "cumsum"):
            cells = [t[f"gpureduce {what}"], t[f"NumPy {what}"], t[f"PyTorch {what}"]]
            x = speedup(cells[0], cells[1])
            row += [format_time(c) for c in cells] + ["—" if x is None else f"{x:.2f}"]
        rows.append(row)
    lines = [f"# Host arrays on {device}: wall-clock from a NumPy float32 array to the finished NumPy result", "",
             f"Commit {commit()}, `benchmarks/bench_host.py`, one process: a warm-up call, then the median of "
             f"{REPEATS} calls ({LARGE_REPEATS} for n >= 2^{LARGE_LOG2}, 1 for NumPy cumsum at 2^28); NumPy "
             f"{np.__version__}." + (f" PyTorch columns empty: {torch_why}." if torch_why else ""), ""]
    lines += markdown_table(COLUMNS, rows) + [""]
    if h2d is None:
        lines.append("Ceilings: this build's gpureduce.device_info() has no h2d_gbps / d2h_gbps; no transfer floors.")
    else:
        lines += [f"Ceilings (gpureduce.device_info(), pinned host memory, 256 MiB): h2d {h2d:.1f} GB/s, "
                  f"d2h {d2h:.1f} GB/s.  Transfer floors: sum n*4 bytes up; cumsum n*4 up and n*4 down, "
                  f"overlapped (the slower direction) or serial (both):", ""]
        floors = []
        for k, _t in results:
            up, down = 2**k * ITEM / (h2d * 1e9), 2**k * ITEM / (d2h * 1e9)
            floors.append([f"2^{k}", format_time(up), format_time(max(up, down)), format_time(up + down)])
        lines += markdown_table(("n", "sum floor", "cumsum floor, overlapped", "cumsum floor, serial"), floors)
    lines += ["", f"Crossover: {crossover(results, 'sum')}; {crossover(results, 'cumsum')}."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    try:
        h2d, d2h, device = ceilings()  # first: it also starts the device
    except gpureduce.CudaError as e:
        print(f"bench_host.py needs a GPU: {e}", file=sys.stderr)
        return 2
    torch, torch_why = torch_or_why()
    rng = np.random.default_rng(0)
    results, failures = [], []
    for k in args.sizes:
        times, failed = measure(k, rng, torch)
        results.append((k, times))
        failures += failed
    text = report(results, h2d, d2h, device, torch_why)
    if failures:
        text += "\n" + "\n".join(failures) + "\n"
    print(text, end="")
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
