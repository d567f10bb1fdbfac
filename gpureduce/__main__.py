"""python -m gpureduce: the device, then every variant's time, bandwidth and agreement with NumPy."""
import argparse
import sys

import numpy as np

from . import _bench, _core


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m gpureduce", description=__doc__)
    parser.add_argument("--n", default="2**24", help="elements (an int or an expression like 2**24)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64", "int32", "int64"])
    parser.add_argument("--op", default="sum", choices=["sum", "prod", "min", "max"])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)
    n = int(eval(args.n, {"__builtins__": {}}))  # "2**24" on the command line
    if _core.device_count() == 0:
        print("gpureduce: no CUDA device is available on this machine", file=sys.stderr)
        return 1
    print(f"device: {_bench.device_name()}")
    rows = _bench.reduce_table(n=n, dtype=args.dtype, op=args.op, repeats=args.repeats)
    print(_bench.format_table(rows, f"\n{args.op} over {n:,} {args.dtype} (cold L2, median of {args.repeats})"))
    bad = [r.variant for r in rows if r.correct is False]
    print("\nall variants agree with NumPy" if not bad else f"\nDISAGREE WITH NUMPY: {', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
