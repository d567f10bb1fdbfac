#!/usr/bin/env bash
# The GPU CI of gpureduce, for the GPU machine: build, run the whole test suite (GPU tests included),
# time every variant, and write a summary to commit under benchmarks/results/.
#
#   GR_COMMIT=$(git rev-parse --short HEAD) OUT=/some/dir bash benchmarks/device_check.sh
#
# GR_COMMIT names the commit being tested (the GPU machine gets a copy of the tree without .git).
# GPUREDUCE_CUDA_ARCHS defaults to 90 here: the H200 needs no other machine code.
set -uo pipefail
OUT=${OUT:-/tmp/gpureduce-check}
mkdir -p "$OUT"
export GPUREDUCE_CUDA_ARCHS=${GPUREDUCE_CUDA_ARCHS:-90}
export GPUREDUCE_BUILD_JOBS=${GPUREDUCE_BUILD_JOBS:-$(nproc)}
export PYTHONUNBUFFERED=1
commit=${GR_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
summary="$OUT/summary.md"

t0=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps -e . >"$OUT/build.log" 2>&1
build_rc=$?
t1=$(date +%s)
echo "build rc=$build_rc in $((t1 - t0)) s"
[ $build_rc -eq 0 ] || { tail -n 40 "$OUT/build.log"; exit 1; }

python3 -m pytest tests -q -rfE -p no:cacheprovider ${PYTEST_ARGS:-} --junitxml="$OUT/junit.xml" >"$OUT/pytest.log" 2>&1
test_rc=$?
t2=$(date +%s)
result_line=$(grep -E "^(=+ )?[0-9]+ (passed|failed)" "$OUT/pytest.log" | tail -n 1)
echo "tests rc=$test_rc in $((t2 - t1)) s: $result_line"

# property-based examples run (tests/conftest.py prints "hypothesis examples run: N")
examples=$(grep -oE "hypothesis examples run: [0-9]+" "$OUT/pytest.log" | grep -oE "[0-9]+$" || echo 0)
python3 -m gpureduce >"$OUT/bench_reduce_2e24.txt" 2>&1
GR_COMMIT=$commit python3 benchmarks/bench_axis.py --out "$OUT" >"$OUT/bench_axis.txt" 2>&1
for extra in ${BENCH_SCRIPTS:-}; do python3 "$extra" >>"$OUT/bench_extra.txt" 2>&1; done
t3=$(date +%s)

{
    echo "# GPU check of gpureduce at commit $commit"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null)"
    echo "- python: $(python3 -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)')"
    echo "- build (GPUREDUCE_CUDA_ARCHS=$GPUREDUCE_CUDA_ARCHS, $GPUREDUCE_BUILD_JOBS jobs): $((t1 - t0)) s, rc=$build_rc"
    echo "- tests: \`$result_line\` in $((t2 - t1)) s (rc=$test_rc)"
    echo "- hypothesis property tests: $examples examples run"
    echo
    echo "## Failures"
    echo '```'
    grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -n 60 || true
    echo '```'
    echo
    echo "## Reduction variants (python -m gpureduce)"
    echo '```'
    cat "$OUT/bench_reduce_2e24.txt"
    echo '```'
    echo
    echo "## Row and column sums (benchmarks/bench_axis.py)"
    grep -E "^\|" "$OUT/bench_axis.txt" || tail -n 20 "$OUT/bench_axis.txt"
    grep -E "at least as fast" "$OUT/bench_axis.txt" || true
    if [ -s "$OUT/bench_extra.txt" ]; then
        echo
        echo "## More benchmarks"
        echo '```'
        cat "$OUT/bench_extra.txt"
        echo '```'
    fi
} >"$summary"
cat "$summary"
exit $test_rc
