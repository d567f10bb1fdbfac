"""The variant "exact" (issue 41) against the plain sum, in one process: gpureduce.sum(x, variant="exact") and
gpureduce.sum(x) (auto) of float32 and float64 arrays of 2^20 to 2^28 elements, typical data (uniform, normal,
log-uniform over four decades) and adversarial data (log-uniform over twelve decades, the full exponent range,
cancellation to zero, alternating huge and tiny magnitudes); exact's read rate in GB/s beside them.

Timing: CUDA events around each call on CuPy's stream, the L2 flushed (256 MiB written) before each, median of
--repeat; "exact / auto" is the throughput ratio the issue's targets are stated in (>= 90% typical float32, >= 60%
adversarial; float64 >= 85% / >= 50%).  Every exact result is checked against the correctly rounded sum
(gpureduce._bounds.correctly_rounded_sum) where --check says so (math.fsum on the host: slow beyond 2^24).

    python benchmarks/bench_exact.py --log2 20,24,28 --out benchmarks/results

With --gpu-to-gpu SO, CCCL's gpu_to_gpu deterministic reduce (benchmarks/gpu_to_gpu_reduce.cu, built with nvcc
against CCCL >= 3.1's headers, as that file says) is timed in the same process too, its error against the
correctly rounded sum given in units in the last place (it is reproducible, not exact).
"""
from __future__ import annotations

import argparse
import ctypes
import sys

import numpy as np

from _common import commit, save_table
from bench_segmented import SCRATCH_BYTES, timed

DISTRIBUTIONS = {  # name -> (typical?, function(rng, n, dtype))
    "uniform": (True, lambda rng, n, dt: rng.random(n, dtype=np.float32).astype(dt)),
    "normal": (True, lambda rng, n, dt: rng.standard_normal(n, dtype=np.float32).astype(dt)),
    "log-uniform": (True, lambda rng, n, dt: (10.0 ** rng.uniform(-2, 2, n).astype(np.float32)).astype(dt)),
    "log-uniform 12 decades": (False, lambda rng, n, dt: (10.0 ** rng.uniform(-6, 6, n).astype(np.float32)).astype(dt)),
    "full range": (False, lambda rng, n, dt: full_range(rng, n, dt)),
    "cancellation": (False, lambda rng, n, dt: cancellation(rng, n, dt)),
    "every bit": (False, lambda rng, n, dt: every_bit(rng, n, dt)),
}


def full_range(rng, n, dt):
    info = np.finfo(dt)
    e = rng.integers(info.minexp - info.nmant, info.maxexp - 31, n)
    return (rng.choice(np.array([-1.0, 1.0], dt), n) * np.ldexp(rng.random(n, dtype=np.float32) + 0.5, e)).astype(dt)


def cancellation(rng, n, dt):
    half = (rng.standard_normal((n + 1) // 2, dtype=np.float32) * 1e6).astype(dt)
    x = np.concatenate([half, -half])[:n]
    rng.shuffle(x)
    return x


def every_bit(rng, n, dt):
    """Alternating huge and tiny magnitudes of both signs: each window sees elements far below its anchor and
    far above it, the slow paths of the exact sum's hot loop."""
    info = np.finfo(dt)
    x = full_range(rng, n, dt)
    x[::2] = np.ldexp(x[::2] / np.abs(x[::2]), rng.integers(info.maxexp - 40, info.maxexp - 31, (n + 1) // 2))
    return x


def gpu_to_gpu_library(path):
    """dtype name -> the sum function of benchmarks/gpu_to_gpu_reduce.cu's library at `path`."""
    lib = ctypes.CDLL(path)
    functions = {}
    for dtype in ("float32", "float64"):
        f = getattr(lib, f"gpu_to_gpu_sum_{dtype}")
        f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p]
        f.restype = ctypes.c_int
        functions[dtype] = f
    return functions


def check(error):
    if error:
        raise RuntimeError(f"CCCL's gpu_to_gpu sum failed: cudaError {error}")


def ulps(got, want):
    """How many representable values `got` lies from `want` (same dtype; 0 for the same bits)."""
    itype = np.int32 if got.dtype == np.float32 else np.int64
    a, b = np.array([got]).view(itype)[0], np.array([want]).view(itype)[0]
    signed = lambda v: int(v) if v >= 0 else -(int(v) & int(np.iinfo(itype).max))
    return abs(signed(a) - signed(b))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log2", default="20,24,28")
    p.add_argument("--dtypes", default="float32,float64")
    p.add_argument("--distributions", default=",".join(DISTRIBUTIONS))
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--check", type=int, default=24, help="check exact results against fsum up to 2^CHECK elements")
    p.add_argument("--out", help="write exact_<gpu>.md and .json there")
    p.add_argument("--gpu-to-gpu", metavar="SO", help="also time CCCL's gpu_to_gpu reduce from this library")
    args = p.parse_args(argv)
    try:
        import cupy as cp
    except ImportError:
        print("bench_exact: needs CuPy and a GPU", file=sys.stderr)
        return 1
    import gpureduce
    from gpureduce._bounds import correctly_rounded_sum

    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    info = {"name": props["name"].decode(), "commit": commit(), "sms": props["multiProcessorCount"]}
    scratch = cp.empty(SCRATCH_BYTES, dtype=cp.uint8)
    peer = gpu_to_gpu_library(args.gpu_to_gpu) if args.gpu_to_gpu else None
    rng = np.random.default_rng(41)
    rows = []
    for log2 in [int(v) for v in args.log2.split(",")]:
        n = 1 << log2
        for dtype in args.dtypes.split(","):
            for dist in args.distributions.split(","):
                typical, make = DISTRIBUTIONS[dist]
                host = make(rng, n, np.dtype(dtype))
                x = cp.asarray(host)
                row = {"n": n, "dtype": dtype, "distribution": dist, "typical": typical}
                row["auto"] = timed(cp, lambda: gpureduce.sum(x), scratch, args.repeat)
                row["exact"] = timed(cp, lambda: gpureduce.sum(x, variant="exact"), scratch, args.repeat)
                row["read"] = x.nbytes / row["exact"] / 1e3  # GB/s
                row["ratio"] = row["auto"] / row["exact"]
                if peer is not None:
                    out = cp.empty(1, dtype=x.dtype)
                    call = lambda: check(peer[dtype](x.data.ptr, out.data.ptr, n, cp.cuda.get_current_stream().ptr))
                    row["gpu_to_gpu"] = timed(cp, call, scratch, args.repeat)
                    if log2 <= args.check:
                        call()
                        row["gpu_to_gpu ulps"] = ulps(out.get()[0], correctly_rounded_sum(host, dtype))
                if log2 <= args.check:
                    got = gpureduce.sum(x, variant="exact").get()[()]
                    want = correctly_rounded_sum(host, dtype)
                    row["exact ok"] = bool(got.tobytes() == want.tobytes() or (np.isnan(got) and np.isnan(want)))
                rows.append(row)
                print(f"2^{log2} {dtype} {dist}: auto {row['auto']:.1f} us, exact {row['exact']:.1f} us "
                      f"({row['ratio']:.2f} of auto's throughput, {row['read']:.0f} GB/s)"
                      + ("" if row.get("exact ok", True) else "  WRONG"), flush=True)
                del x
    head = "| n | dtype | data | auto (µs) | exact (µs) | exact / auto | exact GB/s | target |"
    rule = "|---|---|---|---:|---:|---:|---:|---|"
    if peer is not None:
        head += " CCCL gpu_to_gpu (µs) | its error (ulps) |"
        rule += "---:|---:|"
    lines = [f"# The variant \"exact\" against auto, {info['name']} ({info['commit']})", "",
             "Throughput ratio exact / auto (1.00: as fast as the plain sum); cold L2, medians.", "", head, rule]
    for r in rows:
        target = (0.90 if r["typical"] else 0.60) if r["dtype"] == "float32" else (0.85 if r["typical"] else 0.50)
        met = "met" if r["ratio"] >= target else "**not met**"
        line = (f"| 2^{r['n'].bit_length() - 1} | {r['dtype']} | {r['distribution']} | {r['auto']:.1f} | "
                f"{r['exact']:.1f}{'' if r.get('exact ok', True) else ' (wrong)'} | {r['ratio']:.2f} | "
                f"{r['read']:.0f} | >= {target:.2f}: {met} |")
        if peer is not None:
            line += f" {r['gpu_to_gpu']:.1f} | {r.get('gpu_to_gpu ulps', 'n/a')} |"
        lines.append(line)
    save_table(args.out, "exact", info, "\n".join(lines), rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
