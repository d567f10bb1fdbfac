"""Row and column sums (or cumsums) of 2-D float32 device arrays: gpureduce.sum(x, axis=...) against
cupy.sum(axis=...) and torch.sum(dim=...), all three on the same CuPy array in the same run.

    python benchmarks/bench_axis.py --out benchmarks/results      # on the GPU machine
    python benchmarks/bench_axis.py --op cumsum --out benchmarks/results
    python benchmarks/bench_axis.py --repeat 20 --shapes 2^20x32,1024x2^16 --axes 1

What it measures, per shape and axis (row sum = axis 1, one value per row; column sum = axis 0):
  * gpureduce.sum(x, axis=ax) (the default variant, "auto"), gpureduce.sum(x, axis=ax, variant="cub")
    ("n/a" where it raises), cupy.sum(x, axis=ax) and torch.sum(t, dim=ax), with t the same memory as x
    (torch.from_dlpack, zero-copy; checked);
  * each timed with CUDA events recorded around the call on CuPy's current stream (the stop event on the
    stream the result is exported on, which the producer orders after its work), a scratch buffer of at
    least 256 MiB written before every call so the input comes from memory, not from the 60 MB L2 (cold
    cache), warm-up calls first, then the median (and min) of --repeat calls;
  * GB/s = input bytes / median time; "% ceiling" = that over the device's measured read bandwidth
    (gpureduce.device_info()["read_gbps"], a 1 GiB read); "read floor" = gpureduce's plain read kernel on
    the same bytes, timed inside the extension (no Python in the interval);
  * "gr / best peer" = gpureduce's median over the smaller of cupy's and torch's (<= 1: gpureduce at least
    as fast; the closing line counts such cases where gpureduce's result is also correct);
  * every result is checked once against cupy.sum(x, axis=ax, dtype=float64): max |result - reference|
    over sum |x| along the same axis must stay under 1e-5.
--op cumsum times gpureduce.cumsum, cupy.cumsum and torch.cumsum the same way; its floor is a device-to-device
copy of the input (a scan reads and writes every element), its reference the float64 cumsum, each element's
error taken over the cumsum of |x| up to it.

It prints a Markdown table; --out DIR also writes DIR/axis_<gpu>.md (axis_cumsum_<gpu>.md for --op cumsum,
with a header naming the device, the date, the library versions and the method), .csv and .json (raw times).
--render FILE.json prints (and with --out writes) the tables again from a saved JSON, without a GPU.
Set GR_COMMIT to name the commit measured (the GPU machine's copy of the tree has no .git).

Exit status: 0 whenever the table was produced, whatever the ratios or the correctness column say;
1 when it could not run (no CuPy / no device) or when gpureduce's default variant raised on some case
(the table is still printed and written first); 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import platform
import re
import statistics
import sys
import time

from _common import commit

DEFAULT_SHAPES = "2^20x2,2^20x32,2^14x2^10,1024x2^16"
DEFAULT_AXES = "1,0"
REL_TOL = 1e-5            # max |result - float64 reference| / sum|x| along the axis
MIN_FLUSH_BYTES = 256 << 20
# --op: what the table calls the results, and the floor kernel timed inside the extension (_core.time_ceiling)
OPS = {"sum": dict(floor="read", what="sums"), "cumsum": dict(floor="copy", what="cumsums")}
LIBS = ("gpureduce", "gpureduce[cub]", "cupy", "torch")
PEERS = ("cupy", "torch")
HERE = os.path.dirname(os.path.abspath(__file__))


def _gpureduce():
    """import gpureduce: the installed package, else the checkout this script sits in (an in-place build)."""
    try:
        import gpureduce
    except ImportError:
        root = os.path.dirname(HERE)
        if not os.path.isdir(os.path.join(root, "gpureduce")) or root in sys.path:
            raise
        sys.path.insert(0, root)
        import gpureduce
    return gpureduce


# ----------------------------------------------------------------------------- arguments

def parse_shapes(text):
    """'2^20x2,1024x2^16' -> [(1048576, 2), (1024, 65536)]; each dimension as gpureduce.benchmark.parse_sizes
    reads one size (2^20, 2**20, 1000+24)."""
    _gpureduce()
    from gpureduce.benchmark import parse_sizes

    shapes = []
    for item in text.replace(";", ",").split(","):
        item = item.strip().lower().replace("×", "x").strip("()")
        if not item:
            continue
        dims = [d for d in re.split(r"\s*x\s*", item)]
        if len(dims) != 2 or any(":" in d or not d for d in dims):
            raise ValueError(f"shape {item!r}: expected ROWSxCOLS, e.g. 2^20x32")
        shape = tuple(parse_sizes(d)[0] for d in dims)
        if min(shape) < 1:
            raise ValueError(f"shape {item!r}: dimensions must be positive")
        shapes.append(shape)
    if not shapes:
        raise ValueError("no shapes given")
    return shapes


def parse_axes(text):
    axes = []
    for t in text.split(","):
        t = t.strip()
        if t not in ("0", "1", "-1", "-2"):
            raise ValueError(f"axis {t!r}: a 2-D array has axes 0 and 1 (or -2 and -1)")
        axes.append(int(t) % 2)
    return list(dict.fromkeys(axes))


# ----------------------------------------------------------------------------- formatting (no GPU)

def pow2(n):
    """1048576 -> '2^20' (powers of two from 2^10 up), else the plain number."""
    n = int(n)
    return f"2^{n.bit_length() - 1}" if n >= 1024 and n & (n - 1) == 0 else str(n)


def shape_text(shape):
    return f"({', '.join(pow2(d) for d in shape)})"


def kind_text(axis):
    return "rows (axis=1)" if axis == 1 else "columns (axis=0)"


def slug(name):
    """'NVIDIA H200' -> 'h200' (as benchmarks/make_results.py names its files)."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower().replace("nvidia", "")).strip("_") or "gpu"


def _us(lib):
    if not lib or lib.get("median_us") is None:
        return "n/a"
    return f"{lib['median_us']:.1f} ({lib['min_us']:.1f})"


def _num(v, fmt):
    return "n/a" if v is None else fmt.format(v)


def summarize_case(case, read_gbps):
    """Fill the derived figures of one case (GB/s, % ceiling, ratio, correctness) from its raw times."""
    libs = case["libs"]
    for lib in libs.values():
        if lib.get("times_us"):
            t = lib["times_us"]
            lib["median_us"], lib["min_us"], lib["max_us"] = statistics.median(t), min(t), max(t)
            lib["repeats"] = len(t)
            lib["gbps"] = case["bytes"] / lib["median_us"] / 1e3
            lib["pct_ceiling"] = 100.0 * lib["gbps"] / read_gbps if read_gbps else None
        else:
            for k in ("median_us", "min_us", "max_us", "gbps", "pct_ceiling"):
                lib[k] = None
            lib["repeats"] = 0
    peers = [(libs[p]["median_us"], p) for p in PEERS if p in libs and libs[p].get("median_us") is not None]
    best = min(peers) if peers else None
    case["best_peer"] = best[1] if best else None
    for lib in libs.values():
        lib["ratio_to_best_peer"] = lib["median_us"] / best[0] if best and lib.get("median_us") else None
    gr = libs.get("gpureduce", {})
    case["ratio"] = gr.get("ratio_to_best_peer")
    case["wrong"] = [name for name, lib in libs.items() if lib.get("correct") is False]
    return case


def render_table(cases, op="sum"):
    floor = "copy floor µs" if OPS[op]["floor"] == "copy" else "read floor µs"
    head = ["shape", f"{op} over", "input MB", "gpureduce µs", "cub µs", "cupy µs", "torch µs", floor,
            "GB/s", "% ceiling", "gr / best peer", "correct"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---", "---"] + ["---:"] * (len(head) - 3) + [":---:"]) + "|"]
    for c in cases:
        libs, gr = c["libs"], c["libs"].get("gpureduce", {})
        ok = "✓" if not c["wrong"] else "✗ " + ", ".join(c["wrong"])
        if all(lib.get("correct") is None for lib in libs.values()):
            ok = "n/a"
        cells = [shape_text(c["shape"]), kind_text(c["axis"]), f"{c['bytes'] / 2**20:.4g}",
                 _us(gr), _us(libs.get("gpureduce[cub]")), _us(libs.get("cupy")), _us(libs.get("torch")),
                 _num(c.get("read_floor_us"), "{:.1f}"), _num(gr.get("gbps"), "{:.0f}"),
                 _num(gr.get("pct_ceiling"), "{:.0f}%"), _num(c.get("ratio"), "{:.3f}"), ok]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdict(cases):
    """The closing line: on how many cases gpureduce is at least as fast as the better peer."""
    total = len(cases)
    rated = [c for c in cases if c.get("ratio") is not None]
    wins = [c for c in rated if c["ratio"] <= 1.0 and "gpureduce" not in c["wrong"]]
    text = (f"gpureduce is at least as fast as the better of cupy and torch on {len(wins)} of {total} cases "
            f"(median gpureduce / median best peer <= 1, with a correct result)")
    if rated:
        worst = max(rated, key=lambda c: c["ratio"])
        text += f"; worst {worst['ratio']:.3f}: {shape_text(worst['shape'])} {kind_text(worst['axis'])}"
    if len(rated) < total:
        text += f"; not measured on {total - len(rated)}"
    wrong = sum(1 for c in cases if c["wrong"])
    if wrong:
        text += f"; WRONG RESULTS on {wrong} case(s)"
    return text + "."


def notes(cases, meta):
    """One line per distinct error or check note: which library, on how many cases, the first of them."""
    found = {}
    for c in cases:
        where = f"{shape_text(c['shape'])} {kind_text(c['axis'])}"
        for name, lib in c["libs"].items():
            msg = lib.get("error") or lib.get("check_note")
            if msg:
                found.setdefault((name, msg), []).append(where)
    out = []
    for (name, msg), wheres in found.items():
        on = wheres[0] if len(wheres) == 1 else f"{len(wheres)} cases, the first {wheres[0]}"
        out.append(f"- {name} on {on}: {msg}")
    out += [f"- {w}" for w in meta.get("warnings", [])]
    return out


def render_markdown(meta, cases, full=True):
    """The table and verdict (full=False, as printed), or the whole results page (full=True)."""
    op = meta.get("op", "sum")
    body = [render_table(cases, op), "", verdict(cases)]
    extra = notes(cases, meta)
    if extra:
        body += ["", "Notes:", *extra]
    if not full:
        return "\n".join(body)
    d = meta.get("device", {})
    v = meta.get("versions", {})
    versions = ", ".join(f"{k} {val}" for k, val in v.items() if val)
    head = [
        f"# gpureduce row and column {OPS[op]['what']} on {d.get('name', '?')}",
        "",
        f"Measured at commit {meta.get('commit', '?')} on {meta.get('date', '?')}: {d.get('sm_count', '?')} SMs, "
        f"L2 {int(d.get('l2_bytes', 0)) >> 20} MB, {d.get('memory_bytes', 0) / 2**30:.0f} GiB; measured read "
        f"ceiling {d.get('read_gbps', 0):.0f} GB/s (1 GiB vectorised read). {versions}.",
        "",
        f"Method: `gpureduce.{op}(x, axis=ax)`, `gpureduce.{op}(x, axis=ax, variant=\"cub\")`, "
        f"`cupy.{op}(x, axis=ax)` and `torch.{op}(t, dim=ax)` on the same C-contiguous float32 CuPy array x "
        "(uniform in [-1, 1); t is x's "
        f"memory through DLPack, zero-copy{'' if meta.get('torch_zero_copy', True) else ' NOT CONFIRMED'}), in "
        f"the same run. Each call is bracketed by CUDA events on CuPy's current stream (the stop event on the "
        f"stream the result is exported on); before each call a {meta.get('flush_bytes', 0) >> 20} MiB scratch "
        f"buffer is written, so the input is read from memory, not from the L2 (cold cache); "
        f"{meta.get('warmup', '?')} warm-up calls, then the median (min in brackets) of {meta.get('repeat', '?')} "
        "calls, in µs. GB/s = input bytes / gpureduce's median; '% ceiling' = that over the read ceiling above; "
        + ("'read floor' = gpureduce's plain read kernel over the same bytes" if op == "sum" else
           "'copy floor' = a device-to-device copy of the input (a scan reads and writes every element)")
        + ", timed inside the extension (cold L2, median). 'gr / best peer' = gpureduce's median over the smaller "
        "of cupy's and torch's medians (<= 1.00: gpureduce at least as fast). 'correct': every result within "
        f"{meta.get('rel_tol', REL_TOL):g} of `cupy.{op}(x, axis=ax, dtype=float64)`, as max |result - reference| "
        f"over the {op} of |x| along the axis (a ✗ names the libraries outside it). "
        + ("Row sum = axis 1 (one value per row), column sum = axis 0." if op == "sum" else
           "Rows = axis 1 (each row scanned), columns = axis 0."),
        "",
        f"Command: `{meta.get('command', 'python benchmarks/bench_axis.py')}`",
        "",
    ]
    return "\n".join(head + body) + "\n"


CSV_FIELDS = ["shape", "rows", "cols", "axis", "sum_over", "bytes", "library", "median_us", "min_us", "max_us",
              "repeats", "gbps", "pct_ceiling", "ratio_to_best_peer", "read_floor_us", "rel_error", "correct",
              "out_dtype", "error"]


def render_csv(cases):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for c in cases:
        for name, lib in c["libs"].items():
            row = dict(shape=f"{c['shape'][0]}x{c['shape'][1]}", rows=c["shape"][0], cols=c["shape"][1],
                       axis=c["axis"], sum_over="rows" if c["axis"] == 1 else "columns", bytes=c["bytes"],
                       library=name, read_floor_us=c.get("read_floor_us"))
            row.update({k: lib.get(k) for k in CSV_FIELDS if k in lib})
            w.writerow({k: ("" if row.get(k) is None else row[k]) for k in CSV_FIELDS})
    return buf.getvalue()


def write_outputs(out_dir, meta, cases):
    os.makedirs(out_dir, exist_ok=True)
    prefix = "axis" if meta.get("op", "sum") == "sum" else f"axis_{meta['op']}"
    stem = os.path.join(out_dir, f"{prefix}_{slug(meta.get('device', {}).get('name', 'gpu'))}")
    with open(stem + ".md", "w", encoding="utf-8") as f:
        f.write(render_markdown(meta, cases, full=True))
    with open(stem + ".csv", "w", encoding="utf-8") as f:
        f.write(render_csv(cases))
    with open(stem + ".json", "w", encoding="utf-8") as f:  # one line per case: raw times stay compact
        f.write('{"meta": ' + json.dumps(meta, indent=1, ensure_ascii=False) + ',\n "cases": [\n  '
                + ",\n  ".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n ]\n}\n")
    return [stem + ext for ext in (".md", ".csv", ".json")]


# ----------------------------------------------------------------------------- measuring (GPU)



def _cuda_version(v):
    return f"{v // 1000}.{v % 1000 // 10}"


def _cupy_accelerators(cupy):
    """' (reduction accelerators: cub)': cupy.sum's speed depends on them (CUPY_ACCELERATORS)."""
    try:
        from cupy._core import _accelerator

        names = {getattr(_accelerator, n): n[len("ACCELERATOR_"):].lower()
                 for n in dir(_accelerator) if n.startswith("ACCELERATOR_")}
        acc = [names.get(a, str(a)) for a in _accelerator.get_reduction_accelerators()]
        return f" (reduction accelerators: {', '.join(acc) or 'none'})"
    except Exception:
        env = os.environ.get("CUPY_ACCELERATORS")
        return f" (CUPY_ACCELERATORS={env})" if env is not None else ""


def _stop_stream(cupy, result, current):
    """The stream whose completion means `result` is ready: the one it exports in __cuda_array_interface__ v3
    (a gpureduce.DeviceArray names the stream it was produced on), else CuPy's current stream."""
    try:
        cai = getattr(result, "__cuda_array_interface__", None)
    except Exception:
        cai = None
    s = cai.get("stream") if isinstance(cai, dict) else None
    if not s or s == current.ptr or (s == 1 and current.ptr == 0):
        return current
    return cupy.cuda.ExternalStream(int(s))


def _to_cupy(cupy, result):
    if type(result).__module__.startswith("torch"):
        return cupy.from_dlpack(result)
    return cupy.asarray(result)  # DeviceArray / CuPy through __cuda_array_interface__ (host arrays copied up)


def _check(cupy, result, ref, scale):
    """(relative error, within REL_TOL, note, result dtype)."""
    got = _to_cupy(cupy, result)
    if tuple(got.shape) != tuple(ref.shape):
        return None, False, f"result shape {tuple(got.shape)}, expected {tuple(ref.shape)}", str(got.dtype)
    err = float(cupy.max(cupy.abs(got.astype(cupy.float64) - ref) / scale)) if ref.size else 0.0
    if not math.isfinite(err):
        return err, False, "non-finite result", str(got.dtype)
    return err, err <= REL_TOL, None, str(got.dtype)


class Timer:
    """CUDA events on CuPy's current stream around each call, a >= 256 MiB scratch write before each."""

    def __init__(self, cupy):
        self.cupy = cupy
        l2 = cupy.cuda.Device().attributes["L2CacheSize"]
        self.flush_bytes = max(MIN_FLUSH_BYTES, 4 * l2)
        self.scratch = cupy.empty(self.flush_bytes, dtype=cupy.uint8)
        self.stream = cupy.cuda.get_current_stream()
        self.start, self.stop = cupy.cuda.Event(), cupy.cuda.Event()

    def warm_clocks(self, seconds=0.3):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for _ in range(20):
                self.scratch.fill(1)
            self.stream.synchronize()

    def __call__(self, fn, stop_stream, repeat, warmup):
        times = []
        for i in range(warmup + repeat):
            self.scratch.fill(i & 0xFF)
            self.start.record(self.stream)
            out = fn()
            self.stop.record(stop_stream)
            self.stop.synchronize()
            del out  # freed outside the interval
            if i >= warmup:
                times.append(self.cupy.cuda.get_elapsed_time(self.start, self.stop) * 1e3)
        return times


def one_size_setup(cupy, log2):
    """(n, the side of its square 2-D view, a warmed Timer, the device's read and copy GB/s): what the one-size
    tables (bench_operators.py, bench_bfloat16.py) start from."""
    import gpureduce
    timer = Timer(cupy)
    timer.warm_clocks()
    info = gpureduce.device_info()
    return 1 << log2, 1 << (log2 // 2), timer, info["read_gbps"], info["copy_gbps"]


def _measure_lib(cupy, timer, fn, ref, scale, repeat, warmup, stop_stream=None):
    lib = dict(times_us=None, rel_error=None, correct=None, out_dtype=None, error=None, check_note=None)
    try:
        out = fn()  # first call: the result to check, and the stream to stop on
        if stop_stream is None:
            stop_stream = _stop_stream(cupy, out, timer.stream)
        cupy.cuda.Device().synchronize()
        lib["rel_error"], lib["correct"], lib["check_note"], lib["out_dtype"] = _check(cupy, out, ref, scale)
        del out
        lib["times_us"] = timer(fn, stop_stream, repeat, warmup)
    except Exception as e:  # a variant that does not support this: n/a
        lib["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": ")
        try:
            cupy.cuda.Device().synchronize()
        except Exception:
            pass
    return lib


def measure(args, shapes, axes):
    try:
        import cupy
    except ImportError:
        raise SystemExit("bench_axis.py needs CuPy and a CUDA device (pip install cupy-cuda13x)")
    import numpy as np

    gpureduce = _gpureduce()
    from gpureduce import _core
    from gpureduce.benchmark import device_info

    if gpureduce.device_count() == 0:
        raise SystemExit("bench_axis.py needs a CUDA device; none is visible")
    try:
        import torch
        if not torch.cuda.is_available():
            torch = None
    except ImportError:
        torch = None

    warnings = []
    info = device_info()
    timer = Timer(cupy)
    meta = dict(
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), commit=commit(), device=info,
        versions={"gpureduce": gpureduce.__version__, "cupy": cupy.__version__ + _cupy_accelerators(cupy),
                  "torch": torch.__version__ if torch else None, "numpy": np.__version__,
                  "CUDA runtime": _cuda_version(cupy.cuda.runtime.runtimeGetVersion()),
                  "driver": _cuda_version(cupy.cuda.runtime.driverGetVersion()),
                  "python": platform.python_version()},
        repeat=args.repeat, warmup=args.warmup, seed=args.seed, rel_tol=REL_TOL, flush_bytes=timer.flush_bytes,
        stream=timer.stream.ptr, dtype="float32", shapes=[list(s) for s in shapes], axes=axes, op=args.op,
        command=" ".join(["python benchmarks/bench_axis.py", *args.argv]),
        torch_zero_copy=None, warnings=warnings,
    )
    torch_stream = None  # None: torch works on CuPy's current stream (both default to the legacy stream)
    if torch is None:
        warnings.append("torch is not installed or sees no GPU: the best peer is cupy alone")
    elif torch.cuda.current_stream().cuda_stream != timer.stream.ptr:
        ptr = torch.cuda.current_stream().cuda_stream
        warnings.append(f"torch's current stream {ptr:#x} is not CuPy's {timer.stream.ptr:#x}: torch's stop "
                        "event is recorded on torch's stream")
        torch_stream = cupy.cuda.ExternalStream(ptr)

    timer.warm_clocks()
    rs = cupy.random.RandomState(args.seed)
    cases = []
    for axis in axes:
        for shape in shapes:
            x = rs.uniform(-1.0, 1.0, shape, dtype=cupy.float32)
            assert x.flags.c_contiguous
            peer = getattr(cupy, args.op)
            ref = peer(x, axis=axis, dtype=cupy.float64)
            scale = cupy.maximum(peer(cupy.abs(x), axis=axis, dtype=cupy.float64), 1e-300)
            case = dict(shape=list(shape), axis=axis, bytes=int(x.nbytes), out_len=int(shape[1 - axis]), libs={})
            ours = getattr(gpureduce, args.op)
            fns = {
                "gpureduce": lambda: ours(x, axis=axis),
                "gpureduce[cub]": lambda: ours(x, axis=axis, variant="cub"),
                "cupy": lambda: peer(x, axis=axis),
            }
            t = None
            if torch is not None:
                try:
                    t = torch.from_dlpack(x)
                except Exception:
                    t = torch.as_tensor(x, device="cuda")
                meta["torch_zero_copy"] = meta["torch_zero_copy"] is not False and t.data_ptr() == x.data.ptr
                fns["torch"] = lambda: getattr(torch, args.op)(t, dim=axis)
            for name in LIBS:
                if name not in fns:
                    continue
                case["libs"][name] = _measure_lib(cupy, timer, fns[name], ref, scale, args.repeat, args.warmup,
                                                  torch_stream if name == "torch" else None)
            try:
                floor = _core.time_ceiling(OPS[args.op]["floor"], x, args.repeat, args.warmup)
                case["read_floor_us"] = statistics.median(floor)
            except Exception as e:
                case["read_floor_us"] = None
                warnings.append(f"read floor not measured: {type(e).__name__}: {e}")
            cases.append(summarize_case(case, info.get("read_gbps")))
            print(f"  {shape_text(shape)} {kind_text(axis)}: "
                  + ", ".join(f"{n} {_us(l)}" for n, l in case["libs"].items()), file=sys.stderr, flush=True)
            del x, t, ref, scale, fns
    if meta["torch_zero_copy"] is False:
        warnings.append("torch.from_dlpack(x) did not share x's memory")
    meta["warnings"] = list(dict.fromkeys(warnings))
    return meta, cases


# ----------------------------------------------------------------------------- main

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--op", choices=sorted(OPS), default="sum", help="sum (default) or cumsum")
    p.add_argument("--repeat", type=int, default=50, help="timed calls per library and case (default 50)")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls first (default 5)")
    p.add_argument("--shapes", default=DEFAULT_SHAPES,
                   help=f"comma-separated ROWSxCOLS float32 shapes (default {DEFAULT_SHAPES})")
    p.add_argument("--axes", default=DEFAULT_AXES, help="1 = row sums, 0 = column sums (default 1,0: both)")
    p.add_argument("--seed", type=int, default=0, help="input random seed (default 0)")
    p.add_argument("--out", metavar="DIR", help="also write DIR/axis_<gpu>.md, .csv and .json")
    p.add_argument("--render", metavar="JSON", help="no measuring: the tables again from a saved axis_<gpu>.json")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    args.argv = argv

    if args.render:
        with open(args.render, encoding="utf-8") as f:
            data = json.load(f)
        meta = data["meta"]
        cases = [summarize_case(c, meta.get("device", {}).get("read_gbps")) for c in data["cases"]]
        gr_raised = False
    else:
        if args.repeat < 1 or args.warmup < 0:
            p.error("--repeat must be >= 1 and --warmup >= 0")
        try:
            shapes, axes = parse_shapes(args.shapes), parse_axes(args.axes)
        except ValueError as e:
            p.error(str(e))
        meta, cases = measure(args, shapes, axes)
        gr_raised = any(c["libs"].get("gpureduce", {}).get("error") for c in cases)

    d = meta.get("device", {})
    print(f"gpureduce row/column {OPS[meta.get('op', 'sum')]['what']}, float32, on {d.get('name', '?')} "
          f"({meta.get('date', '?')}, commit "
          f"{meta.get('commit', '?')}); cold L2, µs = median (min) of {meta.get('repeat', '?')}")
    print()
    print(render_markdown(meta, cases, full=False))
    if args.out:
        for path in write_outputs(args.out, meta, cases):
            print(f"wrote {path}")
    return 1 if gr_raised else 0


if __name__ == "__main__":
    sys.exit(main())
