#!/usr/bin/env bash
# The GPU CI of gpureduce, for the GPU machine: the README's two commands verbatim from the clone's root (the
# build for the visible GPU and the main job; the test extras and the whole suite, every GPU test required),
# then the axis benchmark and the notebook, and a summary to commit under benchmarks/results/.
#
#   GR_COMMIT=$(git rev-parse --short HEAD) OUT=/some/dir bash .ci/device_check.sh
#
# GR_COMMIT names the commit being tested (the GPU machine gets a copy of the tree without .git).
# STEPS picks the parts (default "readme sanitizers bench overhead notebook"; a later call on the same machine can
# run the rest): readme = build, main job and the whole suite; sanitizers = compute-sanitizer's four tools over
# every variant (.ci/sanitize.sh); mutations = kernels broken on purpose must fail the tests
# (.ci/mutations.sh, not in the default steps: it rebuilds in place); bench = the axis benchmark; overhead = the wall-clock of a call against
# CuPy and PyTorch (benchmarks/bench_overhead.py); notebook = examples/explore.ipynb executed.  Not in the default
# steps either: host = NumPy inputs end to end (benchmarks/bench_host.py); operators = NumPy's reduction family
# against CuPy and PyTorch (benchmarks/bench_operators.py, about 4 minutes); beyond = a host array larger than the
# device (benchmarks/beyond_device_memory.py: an nvidia-h100-x1, whose host memory is larger than its GPU's);
# dask = gpureduce.dask on 1 GPU and on all (benchmarks/bench_dask.py: nvidia-h200-x2).
# An offline machine gets its packages from wheels in the clone (git-ignored, carried by the device tool):
# .whl-build/ (the build's requirements, for pip's isolated build environment) and .whl/ (nbformat and Jupyter,
# see .ci/run_notebook.py).  Make .whl-build/ with
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl-build numpy==2.3.5 setuptools==80.9.0
# .whl/ also holds Dask (the test extra: gpureduce.dask's tests), distributed and dask-cuda (benchmarks/bench_dask.py):
#   python3 -m pip download --only-binary=:all: --python-version 3.12 --implementation cp --platform any \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
#     "dask[array]" distributed dask-cuda
# then delete the numpy, numba and llvmlite wheels it brings (the machine has them; the device tool carries 64 MiB).
set -uo pipefail
OUT=${OUT:-/tmp/gpureduce-check}
STEPS=${STEPS:-readme sanitizers bench overhead notebook}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 GPUREDUCE_REQUIRE_GPU=1 PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore
if [ -d .whl-build ]; then
    export PIP_NO_INDEX=1 PIP_FIND_LINKS="$PWD/.whl-build $PWD/.whl"
fi
# `pip` and `python` of one environment, as a user's shell has them (on the GPU machine's image `python` is a
# venv's, with PyTorch and CuPy, while `pip` on PATH is the system's).
if [ "$(pip --version 2>/dev/null | sed 's/.* from //')" != "$(python -m pip --version 2>/dev/null | sed 's/.* from //')" ]; then
    pip() { python -m pip "$@"; }
fi
echo "pip: $(pip --version); python: $(command -v python) $(python --version 2>&1)"
commit=${GR_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
summary="$OUT/summary.md"
has() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
rc=0

if has readme; then
    # --- README command 1, verbatim: install (builds for the GPU it sees), then the main job ---
    t0=$(date +%s)
    pip install . >"$OUT/install.log" 2>&1 && python -m gpureduce >"$OUT/main_job.txt" 2>&1
    main_rc=$?
    t1=$(date +%s)
    echo "README command 1: rc=$main_rc in $((t1 - t0)) s"
    [ $main_rc -eq 0 ] || { tail -n 30 "$OUT/install.log" "$OUT/main_job.txt"; rc=1; }
    # --- README command 2, verbatim: the test extras, then every test (GPUREDUCE_REQUIRE_GPU=1) ---
    pip install ".[test]" >>"$OUT/install.log" 2>&1 && pytest -q -rfE -p no:cacheprovider --junitxml="$OUT/junit.xml" >"$OUT/pytest.log" 2>&1
    test_rc=$?
    t2=$(date +%s)
    result_line=$(grep -E "^(=+ )?[0-9]+ (passed|failed)" "$OUT/pytest.log" | tail -n 1)
    examples=$(grep -oE "hypothesis examples run: [0-9]+" "$OUT/pytest.log" | grep -oE "[0-9]+$" || echo 0)
    echo "README command 2: rc=$test_rc in $((t2 - t1)) s: $result_line"
    [ $test_rc -eq 0 ] || rc=1
    # skips beyond the documented list (tests/gpu_skips.txt) fail the check too
    python .ci/check_skips.py "$OUT/junit.xml" >"$OUT/skips.txt" 2>&1
    skips_rc=$?
    [ $skips_rc -eq 0 ] || rc=1
    {
        echo "# GPU check of gpureduce at commit $commit"
        echo
        echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "- device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null)"
        echo "- python: $(python -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)')"
        echo "- \`pip install . && python -m gpureduce\` from the clone's root: $((t1 - t0)) s, rc=$main_rc"
        echo "- \`pip install \".[test]\" && pytest\` with GPUREDUCE_REQUIRE_GPU=1: \`$result_line\` in $((t2 - t1)) s (rc=$test_rc)"
        echo "- hypothesis property tests: $examples examples run"
        echo "- skips against tests/gpu_skips.txt (.ci/check_skips.py): rc=$skips_rc"
        sed 's/^/  /' "$OUT/skips.txt"
        echo
        echo "## Tests per file (junit.xml)"
        python .ci/junit_counts.py "$OUT/junit.xml" 2>&1
        echo
        echo "## Failures"
        echo '```'
        grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -n 60 || true
        echo '```'
        echo
        echo "## The main job (python -m gpureduce)"
        echo '```'
        cat "$OUT/main_job.txt"
        echo '```'
    } >"$summary"
fi

# A later call on a fresh machine (STEPS without readme): install first, as README command 1 does.
if ! has readme && ! (cd /tmp && python -c "import gpureduce._core" 2>/dev/null); then
    pip install . >"$OUT/install.log" 2>&1 || { tail -n 30 "$OUT/install.log"; exit 1; }
fi
[ -f "$summary" ] || echo "# GPU check of gpureduce at commit $commit (steps: $STEPS)" >"$summary"

if has sanitizers; then
    OUT="$OUT" bash .ci/sanitize.sh >"$OUT/sanitize.txt" 2>&1 || rc=1
    {
        echo
        echo "## compute-sanitizer (.ci/sanitize.sh; 0 errors required)"
        cat "$OUT/sanitizers.md" 2>/dev/null || tail -n 20 "$OUT/sanitize.txt"
    } >>"$summary"
fi

if has mutations; then
    OUT="$OUT/mutations" bash .ci/mutations.sh >"$OUT/mutations.txt" 2>&1 || rc=1
    {
        echo
        echo "## Mutation runs (.ci/mutations.sh: each must be caught)"
        cat "$OUT/mutations/mutations.md" 2>/dev/null || tail -n 20 "$OUT/mutations.txt"
    } >>"$summary"
fi

if has bench; then
    GR_COMMIT=$commit python benchmarks/bench_axis.py --out "$OUT" >"$OUT/bench_axis.txt" 2>&1 || rc=1
    for extra in ${BENCH_SCRIPTS:-}; do python "$extra" >>"$OUT/bench_extra.txt" 2>&1 || rc=1; done
    {
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
    } >>"$summary"
fi

if has overhead; then
    GR_COMMIT=$commit python benchmarks/bench_overhead.py ${OVERHEAD_ARGS:-} --out "$OUT/overhead_h200" \
        >"$OUT/bench_overhead.txt" 2>&1 || rc=1
    {
        echo
        echo "## The cost of one call (benchmarks/bench_overhead.py; full tables in overhead_h200.md)"
        sed -n '/^## Targets/,$p' "$OUT/overhead_h200.md" 2>/dev/null || tail -n 20 "$OUT/bench_overhead.txt"
    } >>"$summary"
fi

if has host; then
    GR_COMMIT=$commit python benchmarks/bench_host.py --markdown "$OUT/host.md" >"$OUT/bench_host.txt" 2>&1 || rc=1
    { echo; cat "$OUT/host.md" 2>/dev/null || tail -n 20 "$OUT/bench_host.txt"; } >>"$summary"
fi

if has operators; then
    # the operator table of issue 15; OPERATORS_ARGS e.g. "--repeat 10 --only var,nanvar" to fit a short call
    GR_COMMIT=$commit python benchmarks/bench_operators.py ${OPERATORS_ARGS:-} --markdown "$OUT/operators.md" \
        >"$OUT/bench_operators.txt" 2>&1 || rc=1
    { echo; cat "$OUT/operators.md" 2>/dev/null || tail -n 30 "$OUT/bench_operators.txt"; } >>"$summary"
fi

if has beyond; then
    GR_COMMIT=$commit python benchmarks/beyond_device_memory.py --markdown "$OUT/beyond.md" >"$OUT/beyond.txt" 2>&1 ||
        rc=1
    { echo; cat "$OUT/beyond.md" 2>/dev/null || tail -n 20 "$OUT/beyond.txt"; } >>"$summary"
fi

if has dask; then
    # distributed and dask-cuda beside the installed gpureduce (wheels in .whl/, see the top of this file)
    wheels=(--no-index --find-links .whl "dask[array]" distributed)
    python -m pip install -q "${wheels[@]}" dask-cuda >"$OUT/dask_install.log" 2>&1 ||
        python -m pip install -q "${wheels[@]}" >>"$OUT/dask_install.log" 2>&1
    GR_COMMIT=$commit python benchmarks/bench_dask.py --markdown "$OUT/dask.md" >"$OUT/bench_dask.txt" 2>&1 || rc=1
    { echo; cat "$OUT/dask.md" 2>/dev/null || tail -n 30 "$OUT/bench_dask.txt"; } >>"$summary"
fi

if has notebook; then
    # Jupyter beside the installed gpureduce, without touching the machine's own packages
    t0=$(date +%s)
    if [ -d .whl ]; then
        python -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
        export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
    fi
    python .ci/run_notebook.py --out "$OUT/explore.ipynb" >"$OUT/notebook.txt" 2>&1
    nb_rc=$?
    [ $nb_rc -eq 0 ] || rc=1
    {
        echo
        echo "## The notebook (.ci/run_notebook.py)"
        echo "- examples/explore.ipynb executed by a Jupyter kernel: rc=$nb_rc in $(($(date +%s) - t0)) s"
        tail -n 3 "$OUT/notebook.txt" | sed 's/^/  /'
    } >>"$summary"
fi

cat "$summary"
exit $rc
