#!/usr/bin/env bash
# The whole GPU suite within one call of the GPU machine (its limit is 10 minutes a command): the extension built in
# place for the visible GPU on every core, the first-use kernels compiled beforehand on every core (`python -m
# gpureduce warm`: no test waits for NVRTC), then the tests.  The files that time the device or spawn processes
# (stream order, faults, leaks, threads) and the 2^31-element tests, which need the device's memory to themselves,
# run in one process; every other GPU test file and the CPU checks that need the built extension run beside them in
# 7 processes (pytest-xdist).  `benchmarks/results/gpu_suite.md` records its runs.
#
#   GR_COMMIT=$(git rev-parse --short HEAD) OUT=/some/dir bash .ci/gpu_suite.sh
#
# The whole of it outgrew one call (H200, 04cf006: build 50 s, warm 216 s for 6,907 kernels, the tests 334 s):
# PART=first builds, warms and runs the one-process files; PART=rest, in a second call while the machine is still
# held (its build and kernel cache kept), runs the rest on every core but one.  PART=all (the default): both.
#
# Give GR_COMMIT from the checkout that is copied (written out, not `$(git ...)` on the GPU machine): the copy's git
# metadata there may be an older one's (it named f7aea30 for 584b260's tree once).
#
# Writes under $OUT: build.log, warm.log, serial.log / rest.log (pytest), serial.xml / rest.xml (junit), and
# suite.md, the summary row.  .ci/device_check.sh is the full GPU check (the README's commands verbatim, the
# sanitizers, the benchmarks); this is the suite alone, for a change's test runs.
set -uo pipefail
OUT=${OUT:-/tmp/gpureduce-suite}
mkdir -p "$OUT"
export GPUREDUCE_REQUIRE_GPU=1 PYTHONUNBUFFERED=1
commit=${GR_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
part=${PART:-all}
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d '.')
cores=$(nproc)

t0=$(date +%s)
if [ "$part" != rest ]; then
    GPUREDUCE_CUDA_ARCHS=$arch GPUREDUCE_BUILD_JOBS=$cores python setup.py build_ext --inplace >"$OUT/build.log" 2>&1 ||
        { tail -n 40 "$OUT/build.log"; exit 1; }
fi
t1=$(date +%s)
if [ "$part" != rest ]; then
    python -m gpureduce warm --jobs "$cores" >"$OUT/warm.log" 2>&1 || { tail -n 20 "$OUT/warm.log"; exit 1; }
fi
t2=$(date +%s)

serial_files="tests/test_stream_order_gpu.py tests/test_faults_gpu.py tests/test_leaks_gpu.py tests/test_threads_gpu.py"
serial_tests="tests/test_scan_gpu.py::test_beyond_2_to_the_31_elements
tests/test_segmented_scan_gpu.py::test_beyond_2_to_the_31_elements
tests/test_exact_gpu.py::test_beyond_2_to_the_31_elements"
rest_files=$(ls tests/*_gpu.py | grep -v -F -x -f <(tr ' ' '\n' <<<"$serial_files"))
rest_files="$rest_files tests/test_jit_cpu.py tests/test_package_structure_cpu.py tests/test_public_api_cpu.py
tests/test_operators_cpu.py"
deselect=$(for t in $serial_tests; do printf -- '--deselect %s ' "$t"; done)

serial_rc=0 rest_rc=0
: >"$OUT/serial.log"
: >"$OUT/rest.log"
if [ "$part" != rest ]; then
    # shellcheck disable=SC2086  # the lists are words on purpose
    python -m pytest -q -rfE -p no:cacheprovider --junitxml="$OUT/serial.xml" $serial_files $serial_tests \
        >"$OUT/serial.log" 2>&1 &
    serial_pid=$!
fi
if [ "$part" != first ]; then
    workers=7
    [ "$part" = rest ] && workers=$((cores > 2 ? cores - 1 : 1))
    # shellcheck disable=SC2086
    python -m pytest -q -rfE -p no:cacheprovider -n "$workers" --junitxml="$OUT/rest.xml" $deselect $rest_files \
        >"$OUT/rest.log" 2>&1
    rest_rc=$?
fi
if [ "$part" != rest ]; then
    wait "$serial_pid"
    serial_rc=$?
fi
t3=$(date +%s)

line() { grep -E "^(=+ )?[0-9]+ (passed|failed)" "$1" | tail -n 1 | sed 's/=//g; s/^ *//; s/ *$//'; }
device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)
{
    times="PART=$part: build $((t1 - t0)) s, warm $((t2 - t1)) s, tests $((t3 - t2)) s"
    echo "| $commit | $device | $(line "$OUT/serial.log") | $(line "$OUT/rest.log") | $times |"
    grep -hE "^(FAILED|ERROR)" "$OUT/serial.log" "$OUT/rest.log" | head -n 60
} >"$OUT/suite.md"
cat "$OUT/suite.md"
[ $serial_rc -eq 0 ] && [ $rest_rc -eq 0 ]
