"""First use of a kernel outside the hot set (issue 37; src/jit.c): what a call pays the first time a process
needs a kernel NVRTC compiles, and what a later process pays when the kernel cache has it.

    python benchmarks/bench_jit.py [--markdown FILE]

Three fresh processes share one empty kernel cache (a temporary folder).  Each makes its CUDA context first, then
times (wall clock, the result brought home) calls compiled ahead of time and calls outside the hot set, each twice:
casts, axis reductions and an axis scan.  The first process compiles the kernels outside the hot set, the second and
third read them from the cache.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

CHILD = textwrap.dedent("""
    import json, time
    import numpy as np
    import gpureduce
    from gpureduce import _core
    from gpureduce._planning.operands import copy_plan, intake

    x = intake(_core.to_device(np.arange(1 << 20, dtype=np.float32)))  # the CUDA context, a hot module loaded
    rows = {d: _core.to_device(np.ones((1024, 1024), dtype=d)) for d in (np.float32, np.int16)}

    def timed(f):
        t = time.perf_counter()
        f()
        return (time.perf_counter() - t) * 1e3

    def cast(to):
        return timed(lambda: _core.run(copy_plan(x, np.dtype(to), x.shape, x.strides)).get())

    def call(func, d, axis):
        return timed(lambda: np.asarray(getattr(gpureduce, func)(rows[d], axis=axis)))

    times = {}
    for label, f in [("cast float32 -> float64 (hot)", lambda: cast(np.float64)),
                     ("cast float32 -> int8", lambda: cast(np.int8)),
                     ("sum float32 rows (hot)", lambda: call("sum", np.float32, 1)),
                     ("prod int16 rows", lambda: call("prod", np.int16, 1)),
                     ("nanvar float32 columns", lambda: call("nanvar", np.float32, 0)),
                     ("cummax int16 rows", lambda: call("cummax", np.int16, 1))]:
        before = _core.jit_info()
        first = f()
        after = _core.jit_info()
        times[label] = {"first": first, "again": f(),
                        "compiled": after["compiled"] - before["compiled"],
                        "read": after["read_from_disk"] - before["read_from_disk"]}
    info = _core.jit_info()
    print(json.dumps({"ms": times, "nvrtc": info["nvrtc"], "nvrtc_version": info["nvrtc_version"]}))
""")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "GPUREDUCE_KERNEL_CACHE": cache,
               "PYTHONPATH": os.pathsep.join([os.path.dirname(here), os.environ.get("PYTHONPATH", "")])}
        runs = []
        for _ in range(3):
            done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, cwd=cache)
            if done.returncode != 0:
                print(done.stdout + done.stderr, file=sys.stderr)
                return 1
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    lines = [f"NVRTC {runs[0]['nvrtc_version']} ({runs[0]['nvrtc']}); wall-clock ms of each call's first and second "
             "run in a process, the result brought home (1024 x 1024 arrays; a cast of 2^20 float32); `compiled` and "
             "`read` count the kernels the first run compiled with NVRTC or read from the disk cache", "",
             "| call | process 1 (cache empty): first | again | compiled | process 2 (cache filled): first | again | "
             "read | process 3: first |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for label in runs[0]["ms"]:
        a, b, c = (r["ms"][label] for r in runs)
        lines.append(f"| {label} | {a['first']:.2f} | {a['again']:.2f} | {a['compiled']} | {b['first']:.2f} | "
                     f"{b['again']:.2f} | {b['read']} | {c['first']:.2f} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
