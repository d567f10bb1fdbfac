"""The wall-clock cost of one call as a user sees it: gpureduce against CuPy and PyTorch, in one process.

    python benchmarks/bench_overhead.py                                   # on the GPU machine, ~1 min
    python benchmarks/bench_overhead.py --ops sum --dtypes float32 --sizes 10,20 --libs gr-cupy,cupy
    python benchmarks/bench_overhead.py --render benchmarks/results/overhead_h200.json    # no GPU needed

What it measures (defaults; the flags below restrict them):
  * ops sum, max, argmax (a 0-d result, as a user converts it: `gpureduce.sum(x).item()` (a 0-d array of the
    input's kind), CuPy `x.sum().item()`, PyTorch `t.sum().item()`) and cumsum (an array of the input's own kind, then a
    device synchronize: cupy.cuda.runtime.deviceSynchronize() / torch.cuda.synchronize());
  * dtypes float32 and int32; n = 2^10, 2^12, ..., 2^28;
  * four columns: gpureduce on a CuPy array, CuPy's own call, gpureduce on a PyTorch tensor, PyTorch's own;
  * time.perf_counter_ns around each whole call (the sync / .item() included), the garbage collector off;
    20 warm-up calls, then --repeats calls for n <= 2^20 (a fifth of that, at least 40, above): the median,
    p10 and p90, in µs.  Every call reads a fresh n-element slice of a >= 1 GiB pool of random data, made
    once per library and dtype and handed out in turn (a ring of K = pool / (n elements) buffers): no byte
    is read twice before the whole pool has been, so inputs come from memory, not the L2 (cold cache);
  * for context, gpureduce's kernel time (_core.time_device: CUDA events, cold L2, variant "auto"), and the
    overhead = wall median - kernel median;
  * a per-stage breakdown of gpureduce's call (whole call, C intake, Python plan, C runner, the runner's
    own stages) for sum and cumsum, float32, n = 2^10, CuPy and PyTorch inputs;
  * reference rows: a bare device synchronize (CuPy's, PyTorch's), reading a CuPy array's
    __cuda_array_interface__, calling a PyTorch tensor's __dlpack__().

Writes PREFIX.md (the tables, the targets section) and PREFIX.json (every median, p10, p90), PREFIX by
default benchmarks/results/overhead_h200 (the header names the GPU).  Set GR_COMMIT to name the commit
measured (the GPU machine's copy of the tree has no .git).  Progress lines go to stderr.

A missing library drops its columns; a missing gpureduce API (the stage breakdown's internals) gives n/a
in its row.  Exit status: 0 when the tables were written, 1 when nothing could be measured (no GPU, neither
CuPy nor PyTorch), 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import functools
import gc
import importlib
import json
import os
import platform
import statistics
import sys
import time

from _common import commit

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PREFIX = os.path.join(HERE, "results", "overhead_h200")

ZERO_D_OPS = ("sum", "max", "argmax")           # a 0-d result, converted to a host scalar
OPS = ZERO_D_OPS + ("cumsum",)                  # cumsum: an array of the input's kind, then a sync
DTYPES = ("float32", "float64", "int32", "int64")
COLUMNS = ("gr-cupy", "cupy", "gr-torch", "torch")  # (who calls, on whose array)
TITLES = {"gr-cupy": "gpureduce (CuPy in)", "cupy": "CuPy", "gr-torch": "gpureduce (torch in)", "torch": "PyTorch"}
PAIRS = (("gr-cupy", "cupy"), ("gr-torch", "torch"))  # gpureduce on a library's array vs that library

WARMUP = 20
LARGE_N = 1 << 20               # above this, a fifth of --repeats (at least MIN_LARGE_REPEATS)
MIN_LARGE_REPEATS = 40
KERNEL_REPEATS = 50
REFERENCE_REPEATS = 2000
POOL_BYTES = 1 << 30            # each input pool: at least this, and twice the largest input
ALIGN_BYTES = 512               # slices start where a fresh allocation would
SCALAR_TARGET_US = 10.0         # 1K float32 CuPy sum -> host scalar
OVERHEAD_TARGET_US = 6.0        # wall - kernel, 0-d results


# ----------------------------------------------------------------------------- arguments

def parse_log2(text):
    """'10,12,20' or '10:28:2' (both ends included) -> [1024, 4096, ...]: sizes given as powers of two."""
    text = text.strip()
    try:
        if ":" in text:
            lo, hi, *step = (int(t) for t in text.split(":"))
            ks = list(range(lo, hi + 1, step[0] if step else 1))
        else:
            ks = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"--sizes {text!r}: expected log2 sizes such as 10,12,20 or 10:28:2") from None
    if not ks:
        raise ValueError(f"--sizes {text!r}: no sizes (a range runs low to high)")
    if any(not 0 <= k <= 34 for k in ks):
        raise ValueError(f"--sizes {text!r}: log2 sizes run from 0 to 34")
    return sorted({1 << k for k in ks})


def parse_names(text, allowed, what, aliases=None):
    """A comma-separated subset of `allowed`, in `allowed`'s order; aliases expand to several names."""
    names = []
    for t in (t.strip() for t in text.split(",")):
        if t:
            names += (aliases or {}).get(t, [t])
    unknown = [t for t in names if t not in allowed]
    if unknown or not names:
        raise ValueError(f"{what} {text!r}: choose from {', '.join(allowed)}")
    return [a for a in allowed if a in names]


def build_parser():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", default=",".join(OPS), help=f"ops to time (default {','.join(OPS)})")
    p.add_argument("--dtypes", default="float32,int32", help=f"input dtypes, of {','.join(DTYPES)} "
                                                             "(default float32,int32)")
    p.add_argument("--sizes", default="10:28:2", help="log2 of n: a list (10,20) or LO:HI[:STEP] "
                                                      "(default 10:28:2, every even power)")
    p.add_argument("--libs", default=",".join(COLUMNS),
                   help=f"columns, of {','.join(COLUMNS)}; 'gpureduce' means gr-cupy,gr-torch (default all)")
    p.add_argument("--repeats", type=int, default=400,
                   help=f"timed calls per cell for n <= 2^20; above, a fifth (at least {MIN_LARGE_REPEATS}) "
                        f"(default 400; {WARMUP} warm-up calls first)")
    p.add_argument("--stage-ops", default="sum,cumsum",
                   help="ops of the stage breakdown, or 'none' (default sum,cumsum)")
    p.add_argument("--stage-size", type=int, default=10, help="log2 of the stage breakdown's n (default 10)")
    p.add_argument("--out", metavar="PREFIX",
                   help="write PREFIX.md and PREFIX.json (default benchmarks/results/overhead_h200; with "
                        "--render, nothing is written unless given)")
    p.add_argument("--render", metavar="JSON", help="no measuring: the Markdown again from a saved PREFIX.json")
    return p


def parse_args(argv):
    p = build_parser()
    args = p.parse_args(argv)
    args.argv = list(argv)
    try:
        args.ops = parse_names(args.ops, OPS, "--ops")
        args.dtypes = parse_names(args.dtypes, DTYPES, "--dtypes")
        args.sizes = parse_log2(args.sizes)
        args.libs = parse_names(args.libs, COLUMNS, "--libs", {"gpureduce": ["gr-cupy", "gr-torch"]})
        args.stage_ops = [] if args.stage_ops.strip() == "none" else parse_names(args.stage_ops, OPS, "--stage-ops")
    except ValueError as e:
        p.error(str(e))
    if args.repeats < 2:
        p.error("--repeats must be >= 2")
    if not 0 <= args.stage_size <= 34:
        p.error("--stage-size is a log2 size, 0 to 34")
    return args


def repeats_for(n, repeats):
    """Timed calls per cell: --repeats up to 2^20 elements, a fifth of it (at least 40) above."""
    return repeats if n <= LARGE_N else max(MIN_LARGE_REPEATS, repeats // 5)


# ----------------------------------------------------------------------------- statistics, formatting (no GPU)

def summarize(times_us):
    """{median_us, p10_us, p90_us, count} of a list of µs (p10/p90: statistics.quantiles, inclusive)."""
    if not times_us:
        return dict(median_us=None, p10_us=None, p90_us=None, count=0)
    if len(times_us) == 1:
        p10 = p90 = times_us[0]
    else:
        deciles = statistics.quantiles(times_us, n=10, method="inclusive")
        p10, p90 = deciles[0], deciles[-1]
    return dict(median_us=statistics.median(times_us), p10_us=p10, p90_us=p90, count=len(times_us))


def pow2(n):
    """1048576 -> '2^20'; other numbers as they are."""
    n = int(n)
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def fmt_us(v):
    if v is None:
        return "n/a"
    if not isinstance(v, (int, float)):
        return str(v)
    return f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}" if abs(v) < 1000 else f"{v:,.0f}"


def fmt_ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "n/a"


def short_error(e):
    """'TypeError: first line of the message' for a table note."""
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}".rstrip(": ")


def wall_index(data):
    """{(op, dtype, n, column): median µs} of the saved wall-clock cells."""
    return {(r["op"], r["dtype"], r["n"], r["column"]): r["median_us"] for r in data["wall"]}


def kernel_index(data):
    return {(r["op"], r["dtype"], r["n"]): r["median_us"] for r in data["kernel"]}


def md_table(head, rows, align):
    """A Markdown table; `align` is one of 'l', 'r' per column."""
    rule = "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"
    return "\n".join(["| " + " | ".join(head) + " |", rule] + ["| " + " | ".join(r) + " |" for r in rows])


def render_op_table(data, op, dtype):
    """One op and dtype: a row per n; the four wall medians (the fastest in bold), gpureduce's ratio to each
    library on that library's own array, the kernel time, and gpureduce's overhead over it per input kind."""
    wall, kern = wall_index(data), kernel_index(data)
    cols = [c for c in COLUMNS if c in data["meta"]["columns"]]
    pairs = [(g, p) for g, p in PAIRS if g in cols and p in cols]
    grs = [g for g, _p in PAIRS if g in cols]
    head = (["n"] + [TITLES[c] for c in cols] + [f"gr / {p}" for _g, p in pairs] + ["gr kernel"]
            + [f"overhead ({'CuPy' if g == 'gr-cupy' else 'torch'} in)" for g in grs])
    rows = []
    for n in data["meta"]["sizes"]:
        times = {c: wall.get((op, dtype, n, c)) for c in cols}
        best = min((t for t in times.values() if t is not None), default=None)
        cells = [pow2(n)] + [f"**{fmt_us(t)}**" if t is not None and t == best else fmt_us(t)
                             for t in times.values()]
        cells += [fmt_ratio(times[g], times[p]) for g, p in pairs]
        k = kern.get((op, dtype, n))
        cells.append(fmt_us(k))
        cells += [fmt_us(times[g] - k) if times[g] is not None and k is not None else "n/a" for g in grs]
        rows.append(cells)
    return md_table(head, rows, ["r"] * len(head))


STAGE_ROWS = (
    ("whole", "(1) whole call `gpureduce.<op>(x)`"),
    ("intake", "(2) C intake `_core.intake(x)`"),
    ("plan", "(3) arguments + intake + plan `_planning.plan.reduce_plan / scan_plan(op, x)`"),
    ("run", "(4) C runner `_core.run(plan)`"),
)


def render_stage_table(data):
    """A column per breakdown case; rows (1)-(4), the runner's own stages (whatever keys time_stages gives),
    and the derived Python shares."""
    cases = data.get("stages", [])
    if not cases:
        return "(no stage breakdown measured)"
    head = ["stage (µs, median)"] + [f"{c['op']} {c['dtype']} {pow2(c['n'])}, {c['input']} in" for c in cases]
    rows = []
    for key, label in STAGE_ROWS:
        rows.append([label] + [fmt_us(c["rows"].get(key)) for c in cases])
    internal = list(dict.fromkeys(k for c in cases for k in (c.get("internal") or {})))
    rows += [[f"(5) runner stage `{k}`"] + [fmt_us((c.get("internal") or {}).get(k)) for c in cases]
             for k in internal]
    if not internal:
        rows.append(["(5) runner stages `_core.time_stages(plan, repeats)`"] + ["n/a"] * len(cases))

    def derived(c, plus, minus):
        vals = [c["rows"].get(k) for k in plus + minus]
        return None if None in vals else sum(vals[:len(plus)]) - sum(vals[len(plus):])

    rows.append(["(3)−(2) Python: arguments + plan"] + [fmt_us(derived(c, ["plan"], ["intake"])) for c in cases])
    rows.append(["(1)−(3)−(4) Python: result handling"]
                + [fmt_us(derived(c, ["whole"], ["plan", "run"])) for c in cases])
    return md_table(head, rows, ["l"] + ["r"] * len(cases))


def render_reference_table(data):
    refs = data.get("reference", [])
    if not refs:
        return "(no reference rows measured)"
    rows = [[r["name"], fmt_us(r.get("median_us")), fmt_us(r.get("p10_us")), fmt_us(r.get("p90_us"))]
            for r in refs]
    return md_table(["reference", "median µs", "p10 µs", "p90 µs"], rows, ["l", "r", "r", "r"])


def evaluate_targets(data):
    """The three targets, from the saved medians: {'scalar': ..., 'peers': ..., 'overhead': ...}."""
    wall, kern = wall_index(data), kernel_index(data)
    scalar = wall.get(("sum", "float32", 1024, "gr-cupy"))
    peer_misses, peer_checked = [], 0
    over_misses, over_checked, over_unknown = [], 0, []
    for (op, dtype, n, col), t in sorted(wall.items(), key=lambda kv: (OPS.index(kv[0][0]), kv[0][1:])):
        peer = dict(PAIRS).get(col)
        if peer is None or t is None:
            continue
        where = dict(op=op, dtype=dtype, n=n, input=peer)
        p = wall.get((op, dtype, n, peer))
        if p is not None:
            peer_checked += 1
            if t > p:
                peer_misses.append(dict(where, gpureduce_us=t, peer_us=p, ratio=t / p))
        if op in ZERO_D_OPS:
            k = kern.get((op, dtype, n))
            if k is None:
                over_unknown.append(where)
                continue
            over_checked += 1
            if t - k > OVERHEAD_TARGET_US:
                over_misses.append(dict(where, wall_us=t, kernel_us=k, overhead_us=t - k))
    return dict(
        scalar=dict(target_us=SCALAR_TARGET_US, measured_us=scalar,
                    met=None if scalar is None else scalar <= SCALAR_TARGET_US),
        peers=dict(checked=peer_checked, misses=peer_misses),
        overhead=dict(target_us=OVERHEAD_TARGET_US, checked=over_checked, misses=over_misses,
                      not_evaluated=over_unknown),
    )


def met_text(checked, misses, what):
    """'**met** on all 12 comparisons.', '**missed** on 3 of 12 comparisons:' or 'not measured.'"""
    if not checked:
        return "not measured."
    if not misses:
        return f"**met** on all {checked} {what}."
    return f"**missed** on {len(misses)} of {checked} {what}:"


def render_targets(targets):
    s, pe, ov = targets["scalar"], targets["peers"], targets["overhead"]
    verdict = {None: "not measured", True: "**met**", False: "**missed**"}
    lines = [f"1. 1K float32 CuPy device array `gpureduce.sum` -> host scalar (.item()) <= {s['target_us']:g} µs: "
             f"{verdict[s['met']]}" + (f" ({fmt_us(s['measured_us'])} µs)" if s["measured_us"] is not None else "")]
    lines.append(f"2. gpureduce <= the library whose array it is given (CuPy, PyTorch), every op, dtype and n: "
                 + met_text(pe["checked"], pe["misses"], "comparisons"))
    lines += [f"   - {m['op']} {m['dtype']} {pow2(m['n'])}, {m['input']} in: gpureduce {fmt_us(m['gpureduce_us'])} "
              f"vs {m['input']} {fmt_us(m['peer_us'])} µs ({m['ratio']:.2f}x)" for m in pe["misses"]]
    lines.append(f"3. overhead (wall - kernel) <= {ov['target_us']:g} µs for 0-d results: "
                 + met_text(ov["checked"], ov["misses"], "cells"))
    lines += [f"   - {m['op']} {m['dtype']} {pow2(m['n'])}, {m['input']} in: {fmt_us(m['wall_us'])} - "
              f"{fmt_us(m['kernel_us'])} = {fmt_us(m['overhead_us'])} µs" for m in ov["misses"]]
    if ov["not_evaluated"]:
        ops = sorted({m["op"] for m in ov["not_evaluated"]})
        lines.append(f"   - not evaluated (no kernel time): {len(ov['not_evaluated'])} cell(s), ops {', '.join(ops)}")
    return "\n".join(lines)


def render_notes(data):
    """Warnings, errors per cell (grouped by message), result types, and disagreements between results."""
    out = [f"- {w}" for w in data["meta"].get("warnings", [])]
    errors = {}
    for r in data["wall"] + data["kernel"]:
        if r.get("error"):
            errors.setdefault((r.get("column", "gr kernel"), r["error"]), []).append(f"{r['op']} {r['dtype']} "
                                                                                     f"{pow2(r['n'])}")
    for c in data.get("stages", []):
        for key, msg in (c.get("errors") or {}).items():
            errors.setdefault((f"stage {key}", msg), []).append(f"{c['op']} {c['input']} in")
    for (who, msg), where in errors.items():
        on = where[0] if len(where) == 1 else f"{len(where)} cells, the first {where[0]}"
        out.append(f"- {who} on {on}: {msg}")
    for r in data.get("reference", []):
        if r.get("error"):
            out.append(f"- reference {r['name']}: {r['error']}")
    odd = {}  # gpureduce's cumsum should give back an array of the input's own kind
    for r in data["wall"]:
        lib = r["column"].split("-")[-1]
        if r["column"].startswith("gr-") and r["op"] == "cumsum" and not (r.get("result_type") or lib).startswith(lib):
            odd.setdefault((lib, r["result_type"]), []).append(f"{r['dtype']} {pow2(r['n'])}")
    out += [f"- gpureduce.cumsum on a {lib} array returned a {kind} ({len(where)} cells, the first {where[0]})"
            for (lib, kind), where in odd.items()]
    bad = [c for c in data.get("checks", []) if c.get("agree") is False]
    out += [f"- RESULTS DIFFER: {c['op']} {c['dtype']} {pow2(c['n'])}, {c['input']} in: gpureduce {c['gpureduce']}, "
            f"{c['input']} {c['peer']}" for c in bad]
    return out


def render_markdown(data):
    m = data["meta"]
    versions = ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items() if v)
    parts = [
        f"# gpureduce call overhead on {m.get('device', '?')}",
        "",
        f"Measured at commit {m.get('commit', '?')} on {m.get('date', '?')}; {versions}.",
        "",
        "Method: one process; `time.perf_counter_ns` around each whole call as a user makes it, the garbage "
        "collector off: `gpureduce.<op>(x).item()` (a 0-d array of the input's kind) vs CuPy `x.<op>().item()` and PyTorch "
        "`t.<op>().item()` for sum, max, argmax; for cumsum `gpureduce.cumsum(x)`, `cupy.cumsum(x)`, "
        "`torch.cumsum(t, 0)`, each followed by a device synchronize of the input's library inside the interval. "
        "gpureduce is given the very arrays the library's own call gets (CuPy arrays, PyTorch tensors). "
        f"{m.get('warmup', WARMUP)} warm-up calls, then {m.get('repeats', '?')} timed calls for n <= 2^20 and "
        f"{repeats_for(LARGE_N * 2, m.get('repeats', 200))} above; medians in µs (p10/p90 in the JSON). Each call "
        f"reads the next n-element slice of a {m.get('pool_bytes', POOL_BYTES) / 2**30:.3g} GiB pool of random data "
        "(one per library and dtype, a ring of pool / (n elements) buffers), so no input byte is read again before "
        "the whole pool has been: cold L2. 'gr kernel' = gpureduce's device time for the same op, dtype and n "
        "(`_core.time_device`, variant auto, CUDA events, cold L2, median); overhead = gpureduce's wall median - "
        "that. The fastest of the row is in bold.",
        "",
        f"Command: `{m.get('command', 'python benchmarks/bench_overhead.py')}`",
        "",
        "## Wall-clock per call (µs, median)",
    ]
    for op in m["ops"]:
        for dtype in m["dtypes"]:
            parts += ["", f"### {op}, {dtype}", "", render_op_table(data, op, dtype)]
    parts += ["", "## Where the time goes: gpureduce's call, stage by stage (µs, median)", "",
              "Each row times that piece alone on fresh inputs (a plan made outside the interval for (4)); no "
              "device synchronize in the interval (a cumsum's is done after it). (5) are the runner's own stages "
              "as `_core.time_stages` reports them. n/a: that API is missing in this build.", "",
              render_stage_table(data), "", render_reference_table(data),
              "", "## Targets", "", render_targets(evaluate_targets(data))]
    notes = render_notes(data)
    if notes:
        parts += ["", "## Notes", "", *notes]
    return "\n".join(parts) + "\n"


def write_outputs(prefix, data):
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    with open(prefix + ".md", "w", encoding="utf-8") as f:
        f.write(render_markdown(data))
    with open(prefix + ".json", "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return [prefix + ".md", prefix + ".json"]


# ----------------------------------------------------------------------------- timing

def time_calls(call, take, count, warmup=WARMUP, after=None):
    """µs of `count` calls call(take()) after `warmup` untimed ones: perf_counter_ns around the call alone.
    take() (the next input), after() (e.g. a device sync) and dropping the result stay outside the interval."""
    clock, times = time.perf_counter_ns, []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for i in range(warmup + count):
            x = take()
            t0 = clock()
            out = call(x)
            t1 = clock()
            del out
            if after is not None:
                after()
            if i >= warmup:
                times.append((t1 - t0) / 1e3)
    finally:
        if enabled:
            gc.enable()
    return times


class Pool:
    """Random device data of one library and dtype; take(n) hands out the next n-element slice, wrapping
    around at the end (a ring of pool // n buffers): a byte is read again only after the whole pool has been."""

    def __init__(self, lib_name, lib, dtype, elems):
        self.data = random_array(lib_name, lib, dtype, elems)
        self.elems = elems
        self.align = max(1, ALIGN_BYTES // itemsize(dtype))
        self.cursor = 0

    def take(self, n):
        start = -(-self.cursor // self.align) * self.align
        if start + n > self.elems:
            start = 0
        self.cursor = start + n
        return self.data[start:start + n]


def itemsize(dtype):
    import numpy as np

    return np.dtype(dtype).itemsize


def random_array(lib_name, lib, dtype, elems):
    """Uniform [0, 1) floats or integers in [-1000, 1000), made on the device by the library itself."""
    floating = dtype.startswith("float")
    if lib_name == "cupy":
        if floating:
            return lib.random.random_sample(elems, dtype=dtype)
        return lib.random.randint(-1000, 1000, size=elems, dtype=dtype)
    dt = getattr(lib, dtype)
    if floating:
        return lib.rand(elems, dtype=dt, device="cuda")
    return lib.randint(-1000, 1000, (elems,), dtype=dt, device="cuda")


def syncs(libs):
    """{library: its whole-device synchronize}."""
    out = {}
    if "cupy" in libs:
        out["cupy"] = libs["cupy"].cuda.runtime.deviceSynchronize
    if "torch" in libs:
        out["torch"] = libs["torch"].cuda.synchronize
    return out


# A library's own 0-d call, converted to a host scalar as a user does (the same methods in CuPy and PyTorch)
PEER_SCALAR = {"sum": lambda x: x.sum().item(), "max": lambda x: x.max().item(),
               "argmax": lambda x: x.argmax().item()}


def user_call(column, op, gr, libs, sync):
    """The call a user makes for `op` in this column, as a function of the input (its sync included); each is
    one Python function deep."""
    lib = column.split("-")[-1]
    if op in ZERO_D_OPS:
        if column.startswith("gr-"):
            fn = getattr(gr, op)
            return lambda x: fn(x).item()  # a 0-d array of the input's kind, converted as the peers' are
        return PEER_SCALAR[op]
    if column.startswith("gr-"):
        fn = gr.cumsum  # an array of the input's kind
    elif lib == "cupy":
        fn = libs["cupy"].cumsum
    else:
        fn = functools.partial(libs["torch"].cumsum, dim=0)
    wait = sync[lib]

    def call(x):
        y = fn(x)
        wait()
        return y
    return call


def kind_of(op):
    """(gpureduce kind, operator): cumsum is the scan of sum."""
    return ("scan", "sum") if op == "cumsum" else ("reduce", op)


def planner(kind):
    """gpureduce's planning of a call without options: reduce_plan(op, x) or scan_plan(op, x)."""
    from gpureduce._planning import plan
    return getattr(plan, f"{kind}_plan")


def measure_kernel(gr, op, dtype, n, pool, count):
    """gpureduce's device time for `op` on a slice of the pool (variant auto, CUDA events, cold L2): median µs,
    or the error (e.g. an op without a flat kernel)."""
    rec = dict(op=op, dtype=dtype, n=n, median_us=None, error=None)
    kind, gop = kind_of(op)
    try:
        planned = planner(kind)(gop, pool.take(n))  # the plan the call makes, variant auto
        times, _result = gr._core.time_device(planned, count, warmup=5)
        rec["median_us"] = statistics.median(times)
    except Exception as e:
        rec["error"] = short_error(e)
    return rec


def quiet(fn):
    """fn() with any exception swallowed: a sync after a failed call, whose error is already recorded."""
    try:
        fn()
    except Exception:
        pass


def agree(got, ref, floating_sum):
    """Whether gpureduce's 0-d result matches the library's: exact, or within 1e-4 relative for float sums."""
    got, ref = float(got), float(ref)
    return abs(got - ref) <= 1e-4 * abs(ref) if floating_sum else got == ref


# ----------------------------------------------------------------------------- measuring (GPU)

def load_libs(columns):
    """{name: module} for CuPy and PyTorch where a column needs them and they work here, and warnings."""
    libs, warnings = {}, []
    for name in ("cupy", "torch"):
        if not any(c.endswith(name) for c in columns):
            continue
        try:
            mod = importlib.import_module(name)
            if name == "torch" and not mod.cuda.is_available():
                raise ImportError("PyTorch sees no CUDA device")
            if name == "cupy":
                mod.cuda.runtime.getDeviceCount()
            libs[name] = mod
        except Exception as e:
            warnings.append(f"{name} columns left out: {short_error(e)}")
    return libs, warnings


def import_gpureduce():
    """The installed gpureduce, else the checkout this script sits in (an in-place build)."""
    try:
        return importlib.import_module("gpureduce")
    except ImportError:
        root = os.path.dirname(HERE)
        if root in sys.path or not os.path.isdir(os.path.join(root, "gpureduce")):
            raise
        sys.path.insert(0, root)
        return importlib.import_module("gpureduce")




def versions(gr, libs):
    import numpy as np

    v = {"gpureduce": getattr(gr, "__version__", "?"), "numpy": np.__version__,
         "python": platform.python_version()}
    if "cupy" in libs:
        cp = libs["cupy"]
        v["cupy"] = cp.__version__
        rt, drv = cp.cuda.runtime.runtimeGetVersion(), cp.cuda.runtime.driverGetVersion()
        v["CUDA runtime"] = f"{rt // 1000}.{rt % 1000 // 10}"
        v["driver"] = f"{drv // 1000}.{drv % 1000 // 10}"
    if "torch" in libs:
        v["torch"] = f"{libs['torch'].__version__} (CUDA {libs['torch'].version.cuda})"
    return v


def device_name(gr, libs):
    """'NVIDIA H200': gpureduce's view of the current device, else PyTorch's."""
    try:
        return gr._core.device_properties()["name"]
    except Exception:
        return libs["torch"].cuda.get_device_name() if "torch" in libs else "?"


def progress(t_start, text):
    print(f"[{time.perf_counter() - t_start:6.1f} s] {text}", file=sys.stderr, flush=True)


def make_pools(gr, libs, dtype, max_n):
    """{library: Pool} of `dtype`, each >= 1 GiB and twice the largest input where free memory allows."""
    item = itemsize(dtype)
    try:
        free, _total = gr._core.memory_info()
    except Exception:  # an extension without it: assume room for the pools
        free = 64 << 30
    room = (free - 4 * 8 * max_n - (1 << 30)) // max(1, len(libs))  # results, workspaces, headroom
    elems = max(max_n, min(max(POOL_BYTES, 2 * max_n * item), room) // item)
    return {name: Pool(name, lib, dtype, elems) for name, lib in libs.items()}


def measure_cell(column, call, pool, n, count, after):
    """One wall-clock cell: summary, result type (of the first call) and error."""
    rec = dict(column=column, error=None, result_type=None)
    try:
        first = call(pool.take(n))
        rec["result_type"] = f"{type(first).__module__}.{type(first).__name__}"
        del first
        rec.update(summarize(time_calls(call, lambda: pool.take(n), count, after=after)))
    except Exception as e:
        rec.update(summarize([]), error=short_error(e))
        quiet(after)
    return rec


def measure_checks(op, dtype, n, gr, cols, pools, calls):
    """For a 0-d op: gpureduce's result against the library's own on the same slice."""
    out = []
    for g, peer in PAIRS:
        if g not in cols or peer not in cols or op not in ZERO_D_OPS:
            continue
        try:
            x = pools[peer].take(n)
            got, ref = calls[g](x), calls[peer](x)
            ok = agree(got, ref, op == "sum" and dtype.startswith("float"))
            out.append(dict(op=op, dtype=dtype, n=n, input=peer, gpureduce=str(got), peer=str(ref), agree=ok))
        except Exception:
            pass  # the timing cell reports the error
    return out


def measure_wall(args, gr, libs, cols, data, t_start):
    sync = syncs(libs)
    for dtype in args.dtypes:
        pools = make_pools(gr, libs, dtype, max(args.sizes))
        data["meta"]["pool_bytes"] = max(p.elems for p in pools.values()) * itemsize(dtype)
        warm_clocks(gr, next(iter(pools.values())).data)
        for n in args.sizes:
            count = repeats_for(n, args.repeats)
            for op in args.ops:
                calls = {c: user_call(c, op, gr, libs, sync) for c in cols}
                line = []
                for c in cols:
                    lib = c.split("-")[-1]
                    rec = measure_cell(c, calls[c], pools[lib], n, count, sync[lib])
                    data["wall"].append(dict(op=op, dtype=dtype, n=n, **rec))
                    line.append(f"{c} {fmt_us(rec['median_us'])}")
                data["checks"] += measure_checks(op, dtype, n, gr, cols, pools, calls)
                krec = measure_kernel(gr, op, dtype, n, next(iter(pools.values())), min(KERNEL_REPEATS, count))
                data["kernel"].append(krec)
                progress(t_start, f"{op} {dtype} n={pow2(n)}: " + ", ".join(line)
                         + f", kernel {fmt_us(krec['median_us'])} µs")
        del pools
        free_pools(libs)


def warm_clocks(gr, x, seconds=0.3):
    """Bring the GPU's clocks up: gpureduce's read kernel over a pool for a moment."""
    end = time.perf_counter() + seconds
    try:
        while time.perf_counter() < end:
            gr._core.time_ceiling("read", x, 10, warmup=0, flush_l2=False)
    except Exception as e:  # the tables are still measured, at whatever clocks the GPU has: say so
        print(f"warm_clocks: {short_error(e)}", file=sys.stderr, flush=True)


def free_pools(libs):
    gc.collect()
    if "cupy" in libs:
        libs["cupy"].get_default_memory_pool().free_all_blocks()
    if "torch" in libs:
        libs["torch"].cuda.empty_cache()


def stage_calls(gr, op):
    """{row: (prepare(x) -> argument, timed call)}: each piece of gpureduce's call on its own; an API this
    build lacks raises when looked up, and its row is n/a."""
    kind, gop = kind_of(op)

    same = lambda x: x  # noqa: E731
    return {
        "whole": lambda: (same, getattr(gr, op)),
        "intake": lambda: (same, gr._core.intake),
        "plan": lambda: (same, functools.partial(planner(kind), gop)),
        "run": lambda: (functools.partial(planner(kind), gop), gr._core.run),
    }


def measure_stage_case(gr, op, dtype, n, lib_name, pool, sync, repeats):
    case = dict(op=op, dtype=dtype, n=n, input=lib_name, rows={}, internal=None, errors={})
    for key, make in stage_calls(gr, op).items():
        try:
            prepare, call = make()
            case["rows"][key] = summarize(time_calls(call, lambda: prepare(pool.take(n)), repeats,
                                                     after=sync))["median_us"]
        except Exception as e:
            case["rows"][key] = None
            case["errors"][key] = short_error(e)
            quiet(sync)
    try:
        kind, gop = kind_of(op)
        planned = planner(kind)(gop, pool.take(n))
        case["internal"] = {str(k): v for k, v in dict(gr._core.time_stages(planned, repeats)).items()}
    except Exception as e:
        case["errors"]["time_stages"] = short_error(e)
        quiet(sync)
    return case


def measure_stages(args, gr, libs, data, t_start):
    if not args.stage_ops:
        return
    n, dtype, sync = 1 << args.stage_size, "float32", syncs(libs)
    pools = make_pools(gr, libs, dtype, n)
    for lib_name, pool in pools.items():
        for op in args.stage_ops:
            case = measure_stage_case(gr, op, dtype, n, lib_name, pool, sync[lib_name], args.repeats)
            data["stages"].append(case)
            progress(t_start, f"stages {op} {lib_name} in: "
                     + ", ".join(f"{k} {fmt_us(v)}" for k, v in case["rows"].items()))
    del pools
    free_pools(libs)


def measure_reference(libs, data):
    """A bare device synchronize per library, and the two interchange protocols' cost on a 1K array."""
    rows = []
    same = lambda x: (lambda: x)  # noqa: E731
    rows.append(("empty call (a Python lambda in the timed interval, as every row here has)",
                 lambda _x: None, same(None)))
    if "cupy" in libs:
        cp = libs["cupy"]
        x = cp.zeros(1024, dtype=cp.float32)
        rows.append(("`cupy.cuda.runtime.deviceSynchronize()` (idle device)",
                     lambda _x: cp.cuda.runtime.deviceSynchronize(), same(None)))
        rows.append(("`x.__cuda_array_interface__` (CuPy, 1K float32)",
                     lambda a: a.__cuda_array_interface__, same(x)))
    if "torch" in libs:
        th = libs["torch"]
        t = th.zeros(1024, dtype=th.float32, device="cuda")
        th.cuda.synchronize()
        rows.append(("`torch.cuda.synchronize()` (idle device)", lambda _x: th.cuda.synchronize(), same(None)))
        rows.append(("`t.__dlpack__()` (PyTorch, 1K float32)", lambda a: a.__dlpack__(), same(t)))
    for name, call, take in rows:
        rec = dict(name=name, error=None)
        try:
            rec.update(summarize(time_calls(call, take, REFERENCE_REPEATS)))
        except Exception as e:
            rec.update(summarize([]), error=short_error(e))
        data["reference"].append(rec)


def measure(args):
    """Every table's raw figures, as the JSON holds them."""
    t_start = time.perf_counter()
    gr = import_gpureduce()
    if gr.device_count() == 0:
        raise SystemExit("bench_overhead.py needs a CUDA device; none is visible")
    libs, warnings = load_libs(args.libs)
    if not libs:
        raise SystemExit("bench_overhead.py needs CuPy or PyTorch to make device arrays: " + "; ".join(warnings))
    cols = [c for c in args.libs if c.split("-")[-1] in libs]
    data = dict(meta=dict(
        device=device_name(gr, libs), commit=commit(),
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), versions=versions(gr, libs),
        command=" ".join(["python benchmarks/bench_overhead.py", *args.argv]), ops=args.ops, dtypes=args.dtypes,
        sizes=args.sizes, columns=cols, repeats=args.repeats, warmup=WARMUP, kernel_repeats=KERNEL_REPEATS,
        pool_bytes=POOL_BYTES, warnings=warnings), wall=[], kernel=[], checks=[], stages=[], reference=[])
    progress(t_start, f"{data['meta']['device']}: columns {', '.join(cols)}")
    measure_wall(args, gr, libs, cols, data, t_start)
    measure_stages(args, gr, libs, data, t_start)
    measure_reference(libs, data)
    data["targets"] = evaluate_targets(data)
    progress(t_start, "done")
    return data


# ----------------------------------------------------------------------------- main

def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.render:
        with open(args.render, encoding="utf-8") as f:
            data = json.load(f)
    else:
        data = measure(args)
    print(render_markdown(data))
    prefix = args.out or (None if args.render else DEFAULT_PREFIX)
    if prefix:
        for path in write_outputs(prefix, data):
            print(f"wrote {os.path.relpath(path)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
