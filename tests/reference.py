"""Reference answers and error bounds the GPU results are checked against."""
import math

import numpy as np

EPS = {np.dtype(np.float32): float(np.finfo(np.float32).eps), np.dtype(np.float64): float(np.finfo(np.float64).eps)}


def float_sum_bound(x, dtype, slack=8.0):
    """A tree-shaped float sum of n terms errs by at most about eps * log2(n) * sum|x| (plus the serial
    chains of a coarsened kernel, covered by `slack`)."""
    n = max(x.size, 2)
    return slack * EPS[np.dtype(dtype)] * math.log2(n) * float(np.sum(np.abs(x), dtype=np.float64)) + 1e-300


def float_prod_bound(ref, n, dtype, slack=8.0):
    """Every multiplication adds one rounding to the relative error, whatever the tree: n*eps at worst,
    about sqrt(n)*eps typically; bound with sqrt(n)*log2(n) to stay robust."""
    n = max(n, 2)
    return slack * EPS[np.dtype(dtype)] * math.sqrt(n) * math.log2(n) * abs(float(ref)) + 1e-300
