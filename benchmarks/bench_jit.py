"""First use of a kernel outside the hot set (issue 37; src/jit.c): what a call pays the first time a process
needs a kernel NVRTC compiles, and what a later process pays when the kernel cache has it.

    python benchmarks/bench_jit.py [--markdown FILE]

Three fresh processes share one empty kernel cache (a temporary folder).  Each makes its CUDA context with a hot
call first, then times (wall clock, the result brought home) a cast of 2^20 float32 elements: to float64 (hot:
compiled ahead of time) and to int8 (outside the hot set), each twice.  The first process compiles the int8
cast, the second and third read it from the cache.
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
    from gpureduce import _core
    from gpureduce._operands import copy_plan, intake

    x = intake(_core.to_device(np.arange(1 << 20, dtype=np.float32)))  # the CUDA context, a hot module loaded

    def cast(to):
        t = time.perf_counter()
        _core.run(copy_plan(x, np.dtype(to), x.shape, x.strides)).get()
        return (time.perf_counter() - t) * 1e3

    times = {"hot first": cast(np.float64), "hot again": cast(np.float64), "first use": cast(np.int8),
             "again": cast(np.int8)}
    info = _core.jit_info()
    print(json.dumps({"ms": times, "compiled": info["compiled"], "read_from_disk": info["read_from_disk"],
                      "nvrtc": info["nvrtc"], "nvrtc_version": info["nvrtc_version"]}))
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
    lines = [f"NVRTC {runs[0]['nvrtc_version']} ({runs[0]['nvrtc']}); wall-clock ms of a cast of 2^20 float32, "
             "the result brought home", "",
             "| process | cache | float64 (hot) first | again | int8 (first use) first | again | compiled | read from the cache |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for i, r in enumerate(runs, 1):
        t = r["ms"]
        lines.append(f"| {i} | {'empty' if i == 1 else 'filled'} | {t['hot first']:.2f} | {t['hot again']:.2f} | "
                     f"{t['first use']:.2f} | {t['again']:.2f} | {r['compiled']} | {r['read_from_disk']} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
