"""The exact cumsum against the plain one (issue 41: exact cumsum >= 70% of auto's speed): gpureduce.cumsum of a
CuPy array with variant="exact" and "auto", and CuPy's own cumsum, kernel time on the stream (CUDA events), medians
of --repeat runs, the L2 flushed before each (cold cache).  Typical data (normal, uniform) and adversarial data
(the full exponent range: the 128-bit path's slow tiles).

    python benchmarks/bench_exact_scan.py [--log2n 20,24,28] [--repeat 10] [--markdown results.md]
"""
import argparse
import os
import statistics
import sys

import cupy
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import gpureduce  # noqa: E402


def data(kind, dtype, n, rng):
    if kind == "normal":
        return cupy.asarray(rng.standard_normal(n).astype(dtype))
    if kind == "uniform":
        return cupy.asarray(rng.random(n).astype(dtype))
    info = np.finfo(dtype)  # full range
    e = rng.integers(info.minexp - info.nmant, info.maxexp - 32, n)
    return cupy.asarray((rng.choice([-1, 1], n) * np.ldexp(rng.random(n) + 0.5, e)).astype(dtype))


def timed(f, repeat, flush):
    times = []
    for _ in range(repeat + 1):
        flush.fill(1)
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        f()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) * 1000.0)
    return statistics.median(times[1:])  # (the first: compiles on first use)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--log2n", default="20,24,28")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--markdown")
    args = p.parse_args()
    rng = np.random.default_rng(41)
    flush = cupy.empty(64 << 20, cupy.int32)  # 256 MB: past the H200's 60 MB L2
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    rows = []
    for dtype in (np.float32, np.float64):
        for log2n in map(int, args.log2n.split(",")):
            n = 2 ** log2n
            for kind in ("normal", "uniform", "full range"):
                x = data(kind, dtype, n, rng)
                out = cupy.empty_like(x)
                auto = timed(lambda: gpureduce.cumsum(x, out=out), args.repeat, flush)
                exact = timed(lambda: gpureduce.cumsum(x, out=out, variant="exact"), args.repeat, flush)
                cp = timed(lambda: cupy.cumsum(x, out=out), args.repeat, flush)
                rows.append((np.dtype(dtype).name, log2n, kind, auto, exact, cp))
                print(f"{np.dtype(dtype).name} 2^{log2n} {kind}: auto {auto:.1f} us, exact {exact:.1f} us "
                      f"({auto / exact:.0%} of auto's speed), cupy {cp:.1f} us", flush=True)
                del x, out
    text = [f"# Exact cumsum, {props['name'].decode()}", "",
            "`benchmarks/bench_exact_scan.py`: kernel time (CUDA events), medians, L2 flushed before each run.", "",
            "| dtype | n | data | auto (us) | exact (us) | exact's speed / auto's | cupy.cumsum (us) |",
            "|---|---:|---|---:|---:|---:|---:|"]
    text += [f"| {d} | 2^{k} | {kind} | {a:.1f} | {e:.1f} | {a / e:.0%} | {c:.1f} |" for d, k, kind, a, e, c in rows]
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
