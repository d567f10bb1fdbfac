"""Calls on device data inside the caller's flow (issue 38), against the peers in one process on one GPU.

* back to back: 1K-element float32 whole-array sums, many calls then one synchronization: microseconds per call
  of gpureduce.sum and torch.sum / cupy.sum on the same array (each returns a 0-d device array; nothing waits);
* a host scalar at the end of each call: ``float(gpureduce.sum(x))`` against ``t.sum().item()`` and
  ``float(x.sum())``, beside the library's own ``.item()`` / ``float()`` of a computed 0-d array (the floor of a
  call whose result is a tensor or CuPy array);
* a CUDA graph (torch.cuda.graph) of 100 small reductions replayed: microseconds per replay for gpureduce.sum
  and for torch.sum, beside the same 100 gpureduce calls made eagerly and synchronised once.

Each comparison takes its samples in turn (ours, the peer's, ours, ...): a shared host drifts in speed.

Run:  PYTHONPATH=. python benchmarks/bench_stream.py [--out results.md]
"""
import argparse
import statistics
import time

import numpy as np

import gpureduce


def _sample(fn, calls, sync):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls * 1e6


def per_call(fn, calls, sync, repeats=7):
    """Median over `repeats` of the microseconds per call of `calls` back-to-back calls, synchronised once."""
    return side_by_side([fn], calls, sync, repeats)[0]


def side_by_side(fns, calls, sync, repeats=9):
    """per_call of each of `fns`, their samples taken in turn (ours, the peer's, ours, ...), so that a host
    whose speed drifts during the run (a shared machine) weighs on each alike."""
    for fn in fns:
        for _ in range(50):
            fn()
    sync()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, samples in zip(fns, times):
            samples.append(_sample(fn, calls, sync))
    return [statistics.median(samples) for samples in times]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also write the table (markdown) here")
    parser.add_argument("--n", type=int, default=1024)
    args = parser.parse_args()
    rows = []
    n = args.n
    host = np.random.default_rng(0).random(n).astype(np.float32)

    import torch
    t = torch.from_numpy(host).cuda()
    sync_t = torch.cuda.synchronize
    ours_t, theirs_t = side_by_side([lambda: gpureduce.sum(t), lambda: t.sum()], 2000, sync_t)
    rows.append(("torch tensor, back to back", ours_t, "torch.sum", theirs_t))
    ready = t.sum()
    ours_t_host, theirs_t_host, item = side_by_side(
        [lambda: float(gpureduce.sum(t)), lambda: t.sum().item(), lambda: ready.item()], 2000, sync_t)
    rows.append(("torch tensor, float(result)", ours_t_host, "t.sum().item()", theirs_t_host))
    rows.append(("(PyTorch's .item() of a computed 0-d tensor alone)", float("nan"), "", item))

    import cupy as cp
    x = cp.asarray(host)
    sync_c = cp.cuda.Device().synchronize
    ours_c, theirs_c = side_by_side([lambda: gpureduce.sum(x), lambda: x.sum()], 2000, sync_c)
    rows.append(("CuPy array, back to back", ours_c, "cupy.sum", theirs_c))
    ready_c = x.sum()
    ours_c_host, theirs_c_host, item_c = side_by_side(
        [lambda: float(gpureduce.sum(x)), lambda: float(x.sum()), lambda: float(ready_c)], 2000, sync_c)
    rows.append(("CuPy array, float(result)", ours_c_host, "float(x.sum())", theirs_c_host))
    rows.append(("(CuPy's float() of a computed 0-d array alone)", float("nan"), "", item_c))

    # a CUDA graph of 100 small reductions
    inputs = [torch.from_numpy(np.random.default_rng(i).random(n).astype(np.float32)).cuda() for i in range(100)]

    def graph_of(reduce_one):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for a in inputs:
                reduce_one(a)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            results = [reduce_one(a) for a in inputs]
        return g, results

    g_theirs, r_theirs = graph_of(lambda a: a.sum())
    eager_ours = per_call(lambda: [gpureduce.sum(a) for a in inputs], 50, sync_t)
    try:
        g_ours, r_ours = graph_of(lambda a: gpureduce.sum(a))
        replay_ours, replay_theirs = side_by_side([g_ours.replay, g_theirs.replay], 200, sync_t)
        ok = all(abs(float(a) - float(b)) <= 1e-3 * abs(float(b)) for a, b in zip(r_ours, r_theirs))
    except Exception as error:  # noqa: BLE001 -- reported in the table
        replay_ours, ok = float("nan"), f"capture failed: {error}"
        replay_theirs = per_call(g_theirs.replay, 200, sync_t)
    rows.append(("graph of 100 sums, one replay", replay_ours, "the same with torch.sum", replay_theirs))
    rows.append(("the 100 sums eagerly, synchronised once", eager_ours, "", float("nan")))

    card = torch.cuda.get_device_name()
    lines = [f"# Calls in the caller's flow ({card}, n = {n} float32, torch {torch.__version__}, "
             f"CuPy {cp.__version__})", "",
             "| case | gpureduce (us) | peer | peer (us) | ratio |", "|---|---:|---|---:|---:|"]
    for case, ours, peer, theirs in rows:
        ratio = f"{ours / theirs:.2f}" if theirs == theirs and ours == ours else ""
        ours_text = "" if ours != ours else f"{ours:.1f}"
        lines.append(f"| {case} | {ours_text} | {peer} | {'' if theirs != theirs else f'{theirs:.1f}'} | {ratio} |")
    lines.append("")
    lines.append(f"graph replay results equal eager torch.sum's: {ok}")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
