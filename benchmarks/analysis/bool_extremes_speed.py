"""What bool's own min/max/argmin/argmax kernels cost against uint8's on the same bytes (8bc34d5: bool no longer
runs uint8's kernels, and reads each byte as != 0): device time of each call on 2^28 bytes, whole array, rows and
columns, cold L2 (gpureduce._core.time_device), medians.

    PYTHONPATH=. python benchmarks/analysis/bool_extremes_speed.py
"""
import statistics

import numpy as np

from gpureduce import _core
from gpureduce._planning.plan import reduce_plan


def main():
    import cupy as cp
    n, side = 1 << 28, 1 << 14
    raw = cp.asarray(np.random.default_rng(0).integers(0, 2, n, dtype=np.uint8))
    print(f"# {_core.device_properties()['name']}: microseconds, median of 20 cold-L2 calls, 2^28 bytes")
    print("| op | case | bool | uint8 | bool / uint8 |")
    print("|---|---|---:|---:|---:|")
    for op in ("max", "min", "argmax", "argmin"):
        for case, shape, axis in [("whole", (n,), None), ("rows", (n // side, side), 1),
                                  ("columns", (n // side, side), 0)]:
            times = {}
            for dtype in (np.bool_, np.uint8):
                x = _core.intake(raw.view(dtype).reshape(shape))
                us, _ = _core.time_device(reduce_plan(op, x, axis), 20)
                times[dtype] = statistics.median(us)
            b, u = times[np.bool_], times[np.uint8]
            print(f"| {op} | {case} | {b:.1f} | {u:.1f} | {b / u:.3f} |")


if __name__ == "__main__":
    main()
