"""Where one small device call's time goes (issue 38): microseconds per call of each layer of
``gpureduce.sum(t)`` on a 1K float32 PyTorch tensor, back to back, beside ``torch.sum``; then the CUDA runtime
calls one gpureduce call makes, with their host time, from PyTorch's profiler (CUPTI sees every runtime call in
the process).

    PYTHONPATH=. python benchmarks/analysis/call_stages.py
"""
import statistics
import time

import numpy as np
import torch

import gpureduce
from gpureduce import _core
from gpureduce._planning import calls, plan as planning
from gpureduce._planning.plan import fresh_result


def per_call(fn, calls_=2000, repeats=7):
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls_):
            fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t) / calls_ * 1e6)
    return statistics.median(out)


def main():
    t = torch.from_numpy(np.random.default_rng(0).random(1024).astype(np.float32)).cuda()
    x = _core.intake(t)
    plan, post = planning.prepare_reduce("sum", x)
    tmpl = torch.empty((), dtype=torch.float32, device="cuda")
    rows = [
        ("torch.sum(t)", lambda: torch.sum(t)),
        ("t.sum()", lambda: t.sum()),
        ("gpureduce.sum(t)", lambda: gpureduce.sum(t)),
        ("calls.reduce('sum', t)", lambda: calls.reduce("sum", t)),
        ("_core.call_whole (the cached plan, from C)", lambda: _core.call_whole(_core.KIND_REDUCE, "sum", "auto", False, t)),
        ("prepare_reduce + run (planned every call)", lambda: planning.run(planning.prepare_reduce("sum", t))),
        ("prepare_reduce(x) (planned, new result)", lambda: planning.prepare_reduce("sum", x)),
        ("_core.run(plan) (one plan, same out)", lambda: _core.run(plan)),
        ("_core.intake(t)", lambda: _core.intake(t)),
        ("fresh_result", lambda: fresh_result(t, x, (), np.dtype(np.float32))),
        ("torch.empty_like(0-d)", lambda: torch.empty_like(tmpl)),
        ("torch._C._cuda_getCurrentRawStream(0)", lambda: torch._C._cuda_getCurrentRawStream(0)),
        ("tmpl.zero_() (torch: one launch)", lambda: tmpl.zero_()),
    ]
    print(f"# {torch.cuda.get_device_name()}: us per call, 1K float32, medians of 7 x 2000")
    for name, fn in rows:
        print(f"{per_call(fn):8.2f}  {name}")
    from torch.profiler import ProfilerActivity, profile
    for name, fn in [("gpureduce.sum(t)", lambda: gpureduce.sum(t)), ("_core.run(plan)", lambda: _core.run(plan)),
                     ("torch.sum(t)", lambda: torch.sum(t))]:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(500):
                fn()
            torch.cuda.synchronize()
        print(f"\n## runtime calls of 500 x {name}")
        for e in sorted(prof.key_averages(), key=lambda e: -e.cpu_time_total):
            if e.key.startswith("cuda") or e.key.startswith("cu"):
                print(f"{e.count:7d} x {e.cpu_time_total / max(e.count, 1):7.2f} us  {e.key}")


if __name__ == "__main__":
    main()
