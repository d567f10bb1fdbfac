"""python -m gpureduce [bench ... | warm ...]

With no arguments (the README's main job): the device and its measured ceilings, the reduction
progression at 2**24 float32 (Harris's table, on this GPU) and the scan table, every variant checked
against NumPy.  `bench` runs any table: python -m gpureduce bench --op cumsum --sizes 2^10:2^28 --plot out.png
`warm` compiles every kernel outside the hot set into the kernel cache, so that no call compiles on first use:
python -m gpureduce warm [--all] (for this machine's GPUs), python -m gpureduce warm --arch 75,90 (no GPU
needed), --jobs N
"""
import argparse
import sys

from . import _core, _jit
from ._registry import variants
from .benchmark import OPERATORS, benchmark, device_info, parse_sizes


# The exit code when no CUDA device can run the job (documented in the README; CI checks it): distinct from a
# disagreement with NumPy (1) and a refused command line (2).
EXIT_NO_DEVICE = 3


def _report(result, csv_path=None, plot_path=None):
    print(result)
    if csv_path:
        result.to_csv(csv_path)
        print(f"wrote {csv_path}")
    if plot_path:
        result.plot(plot_path)
        print(f"wrote {plot_path}")
    bad = [f"{r.variant} (n={r.n})" for r in result if r.correct is False]
    if bad:
        print(f"DISAGREE WITH NUMPY: {', '.join(bad)}")
    return not bad


def _warm(arch_list, jobs):
    try:
        archs = [int(a.strip().removeprefix("sm_")) for a in arch_list.split(",")] if arch_list else None
    except ValueError:
        print(f"python -m gpureduce warm: --arch {arch_list!r}: give compute capabilities, e.g. 75,90",
              file=sys.stderr)
        return 2
    if archs is None:
        if _core.device_count() == 0:
            print("python -m gpureduce warm: no CUDA device is available on this machine: name the architectures "
                  "with --arch, e.g. --arch 75,90", file=sys.stderr)
            return EXIT_NO_DEVICE
        archs = _jit.machine_archs()
    shown = [0]

    def progress(done, total):  # a line per tenth: on 2 cores the whole list takes about half an hour
        if done * 10 // total > shown[0] or done == total:
            shown[0] = done * 10 // total
            print(f"python -m gpureduce warm: {done}/{total} kernels", file=sys.stderr, flush=True)

    try:
        done = _jit.warm(archs, jobs=jobs, progress=progress)
    except (RuntimeError, ValueError) as e:  # no NVRTC, no toolkit headers, a compile error: its reason
        print(f"python -m gpureduce warm: {e}", file=sys.stderr)
        return 1
    print(f"{done['kernels']} kernels for sm_{', sm_'.join(map(str, archs))} in the kernel cache "
          f"{done['cache_dir']}: {done['compiled']} compiled now, in {done['seconds']:.1f} s")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m gpureduce", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command")
    bench = sub.add_parser("bench", help="time variants and peers over sizes")
    bench.add_argument("--op", default="sum", choices=sorted(OPERATORS))
    bench.add_argument("--dtype", default="float32")
    bench.add_argument("--sizes", default="2^10:2^24:2", help="e.g. 2^10:2^28 (a power-of-two range, optional "
                       "step), or a list 1000,2^20+3")
    bench.add_argument("--variants", default="all", help="comma-separated names, or all")
    bench.add_argument("--repeat", type=int, default=30)
    bench.add_argument("--no-peers", action="store_true", help="skip CuPy, PyTorch and NumPy")
    bench.add_argument("--csv", help="also write the rows to this CSV file")
    bench.add_argument("--plot", help="also draw GB/s and speed-up plots into this PNG file")
    warm = sub.add_parser("warm", help="compile the kernels outside the hot set into the kernel cache")
    warm.add_argument("--arch", help="compute capabilities, e.g. 75,90 (default: those of this machine's GPUs)")
    warm.add_argument("--all", action="store_true", help="every first-use kernel for every GPU of this machine "
                      "(what warm does without --arch)")
    warm.add_argument("--jobs", type=int, default=None, help="parallel NVRTC processes (default: the CPUs)")
    args = parser.parse_args(argv)

    if args.command == "warm":
        return _warm(args.arch, args.jobs)
    if _core.device_count() == 0:
        print("gpureduce: no CUDA device is available on this machine", file=sys.stderr)
        try:
            _core.device_properties()
        except _core.CudaError as e:  # why: no driver, a driver too old, no GPU visible
            print(f"  {str(e).partition(': ')[2]}", file=sys.stderr)
        return EXIT_NO_DEVICE
    info = device_info()
    print(f"device {info['device']}: {info['name']} (sm_{''.join(map(str, info['compute_capability']))}), "
          f"{info['sm_count']} SMs, L2 {info['l2_bytes'] >> 20} MB, "
          f"{info['memory_bytes'] / 2**30:.0f} GiB; measured ceilings: read {info['read_gbps']:.0f} GB/s, "
          f"copy {info['copy_gbps']:.0f} GB/s (read + write); host arrays: pinned host to device "
          f"{info['h2d_gbps']:.1f} GB/s, device to host {info['d2h_gbps']:.1f} GB/s\n")
    if args.command == "bench":
        names = "all" if args.variants == "all" else args.variants.split(",")
        try:
            result = benchmark(args.op, names, parse_sizes(args.sizes), args.dtype, args.repeat,
                               peers=not args.no_peers, progress=sys.stderr.isatty())
        except ValueError as e:  # refused before any work: say why, no traceback
            print(f"python -m gpureduce bench: {e}", file=sys.stderr)
            return 2
        return 0 if _report(result, args.csv, args.plot) else 1

    ok = _report(benchmark("sum", sizes=[2**24], progress=False))
    print()
    if variants(kind="scan"):
        ok &= _report(benchmark("cumsum", sizes=[2**24], progress=False))
    print("\nevery variant agrees with NumPy" if ok else "\nsome variants DISAGREE with NumPy (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
