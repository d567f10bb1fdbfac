"""Why nancumsum's and nancumprod's columns ran 41% slower than before issue 37 (remeasure_h200.md: 1,323.7 ->
1,863.5 us at 2^28 float32) while cumsum's columns held: the nan scans against their plain twins on the same array,
whole, rows and columns, each axis variant, device time cold L2 (gpureduce._core.time_device), medians.  The nan
scans are outside the hot set (first-use kernels); cumsum and cumprod's float32 kernels are in it.

    PYTHONPATH=. python benchmarks/analysis/nan_scan_columns.py [--kernels]

--kernels: each launch's own device time (PyTorch's profiler, CUPTI) of the columns case, cumsum's kernels
against nancumsum's, to tell which of a plan's launches differ.
"""
import statistics
import sys

import numpy as np

from gpureduce import _core
from gpureduce._planning.plan import scan_plan


def kernels():
    import cupy as cp
    import torch
    from torch.profiler import ProfilerActivity, profile
    x = cp.asarray(np.random.default_rng(7).standard_normal((1 << 14, 1 << 14), dtype=np.float32))
    for op in ("sum", "nansum"):
        plan = scan_plan(op, x, 0)
        _core.time_device(plan, 2)  # compiled and loaded
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            _core.time_device(plan, 5, warmup=0)
            torch.cuda.synchronize()
        print(f"## {op} columns: the plan's launches, device us per launch (5 launches of the plan)")
        for e in prof.key_averages():
            if e.device_type.name == "CUDA" and e.count:
                us = e.device_time_total / e.count if hasattr(e, "device_time_total") else e.cuda_time_total / e.count
                print(f"- {e.count} x {us:.1f} us  {e.key[:140]}")


def main():
    if "--kernels" in sys.argv:
        return kernels()
    import cupy as cp
    side = 1 << 14
    host = np.random.default_rng(7).standard_normal((side, side), dtype=np.float32)
    small = (host * 1e-3 + 1).astype(np.float32)  # products that stay finite
    print(f"# {_core.device_properties()['name']}: microseconds, median of 10 cold-L2 calls, (2^14, 2^14) float32")
    print("| pair | case | variant | plain | nan | nan / plain |")
    print("|---|---|---|---:|---:|---:|")
    for plain, nan, data in [("sum", "nansum", host), ("prod", "nanprod", small)]:  # cumsum is the scan of sum
        x = cp.asarray(data)
        for case, axis in [("whole", None), ("rows", 1), ("columns", 0)]:
            for variant in ("auto", "cub"):
                times = {}
                for op in (plain, nan):
                    try:
                        us, _ = _core.time_device(scan_plan(op, x, axis, variant=variant), 10)
                        times[op] = statistics.median(us)
                    except Exception as e:  # a variant that does not take this case
                        times[op] = float("nan")
                        print(f"<!-- {op} {case} {variant}: {type(e).__name__}: {e} -->")
                p, q = times[plain], times[nan]
                print(f"| cum{plain}/{nan[:3]}cum{nan[3:]} | {case} | {variant} | {p:.1f} | {q:.1f} | {q / p:.3f} |")


if __name__ == "__main__":
    main()
