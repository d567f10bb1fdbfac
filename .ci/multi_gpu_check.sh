#!/usr/bin/env bash
# Issue 42's check in one call of a multi-GPU machine (nvidia-h100-x2 / -x4, nvidia-h200-x2 / -x4): the extension
# built in place for the visible GPUs, Dask installed from the clone's .whl/ (the machine is offline; make .whl/
# as .ci/device_check.sh's header says and carry it), gpureduce.dask's GPU tests on a cluster of one worker per GPU,
# then benchmarks/bench_dask.py on 1, 2 (and 4) GPUs.  Writes under $OUT: build.log, dask_install.log, tests.log,
# bench_dask.txt, dask.md (the table to commit as benchmarks/results/dask_<card>.md) and summary.md.
#
#   GR_COMMIT=$(git rev-parse --short HEAD) OUT=/some/dir bash .ci/multi_gpu_check.sh
#
# LOG2N (default 32: the issue's 16 GiB of float32) and BENCH_LIMIT_S (default 420) keep the call inside the
# device tool's 10 minutes; the first-use kernels the tests need compile in the workers (a shared disk cache).
# STEPS (default "tests bench") runs one of them alone: on 4 GPUs the two take two calls (the second finds the build
# and Dask in place on the machine, still warm).
set -uo pipefail
OUT=${OUT:-/tmp/gpureduce-multi}
mkdir -p "$OUT"
commit=${GR_COMMIT:-unknown}
gpus=$(nvidia-smi -L | wc -l)
archs=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | tr -d '.' | sort -u | paste -sd ';')
cards=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c | sed 's/^ *//' | paste -sd ';')
summary="$OUT/summary.md"
rc=0

t0=$(date +%s)
GPUREDUCE_CUDA_ARCHS="$archs" GPUREDUCE_BUILD_JOBS=$(nproc) python setup.py build_ext --inplace >"$OUT/build.log" 2>&1 ||
    { tail -n 40 "$OUT/build.log"; exit 1; }
t1=$(date +%s)
wheels=(--no-index --find-links .whl)
python -m pip install -q "${wheels[@]}" "dask[array]" distributed >"$OUT/dask_install.log" 2>&1 ||
    { tail -n 20 "$OUT/dask_install.log"; exit 1; }
python -m pip install -q "${wheels[@]}" dask-cuda >>"$OUT/dask_install.log" 2>&1 || true # optional: SpecCluster else

export GPUREDUCE_REQUIRE_GPU=1 PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
steps=${STEPS:-tests bench}
if [[ " $steps " == *" tests "* ]]; then
    python -m pytest -q -rfE -p no:cacheprovider tests/test_dask_cluster_gpu.py tests/test_dask_gpu.py \
        tests/test_dask_operators_gpu.py >"$OUT/tests.log" 2>&1 || rc=1
else
    echo "(tests not run: STEPS=$steps)" >"$OUT/tests.log"
fi
t2=$(date +%s)

counts=1,2
[ "$gpus" -ge 4 ] && counts=1,2,4
if [[ " $steps " == *" bench "* ]]; then
    GR_COMMIT=$commit timeout "${BENCH_LIMIT_S:-420}" python benchmarks/bench_dask.py --gpus "$counts" \
        --log2n "${LOG2N:-32}" --repeats 3 --markdown "$OUT/dask.md" >"$OUT/bench_dask.txt" 2>&1 || rc=1
else
    echo "(bench_dask.py not run: STEPS=$steps)" >"$OUT/bench_dask.txt"
fi
t3=$(date +%s)

{
    echo "# Issue 42's multi-GPU check at commit $commit: $gpus GPUs ($cards)"
    echo
    echo "- build for sm $archs: $((t1 - t0)) s; tests $((t2 - t1)) s: $(grep -E "[0-9]+ (passed|failed)" "$OUT/tests.log" | tail -n 1)"
    grep -hE "^(FAILED|ERROR)" "$OUT/tests.log" | head -n 30 | sed 's/^/  /'
    echo "- bench_dask.py --gpus $counts --log2n ${LOG2N:-32}: $((t3 - t2)) s"
    echo
    cat "$OUT/dask.md" 2>/dev/null || tail -n 30 "$OUT/bench_dask.txt"
} >"$summary"
cat "$summary"
exit $rc
