#!/usr/bin/env bash
# Mutation runs: break a kernel on purpose, rebuild in place, and check that the GPU tests fail.  A suite
# that still passes with a broken kernel proves nothing about it; each line below is a defect the tests must
# catch.  Run on the GPU machine from the clone's root (the tree is restored after each mutation):
#
#   OUT=/some/dir bash .ci/mutations.sh      # writes $OUT/mutations.md; exit 1 if a mutation survived
#
# Each mutation: a name, the file, a sed expression that must change it, the test files to run, and the tests
# written to catch it (issue 12: exact-valued data, extremes at tile edges, float16 exact values), run on their
# own too; pytest -x stops at the first failure: a failure is what we want.
set -uo pipefail
OUT=${OUT:-/tmp/gpureduce-mutations}
mkdir -p "$OUT"
export GPUREDUCE_CUDA_ARCHS=${GPUREDUCE_CUDA_ARCHS:-native} GPUREDUCE_REQUIRE_GPU=1 PYTHONUNBUFFERED=1

MUTATIONS=(
    "auto reduce drops the last element of the tail|cuda/variants/reduce_auto.cu|s/if (gtid < n - tail_start) acc/if (gtid < n - tail_start - 1) acc/|tests/test_reduce_gpu.py|tests/test_reduce_gpu.py -k 'exact_float_data or unique_extreme'"
    "every conversion to float16 gives 0 (float16 results are 0)|cuda/primitives/types.cuh|s/else return __float2half(static_cast<float>(x));/else return __float2half(0.0f);/|tests/test_parity_gpu.py tests/test_reduce_gpu.py|tests/test_parity_gpu.py -k float16_exact"
    "decoupled look-back: the last tile loses its carry|cuda/variants/scan_decoupled_lookback.cu|s/if (threadIdx.x == 0) tile_prefix = p;/if (threadIdx.x == 0) tile_prefix = (tile > 0 \&\& tile == gridDim.x - 1) ? scan_neutral<Op, Acc>() : p;/|tests/test_scan_gpu.py|tests/test_scan_gpu.py -k 'exact_float_data or running_extreme'"
    "atomic_warp: the last block's warps never fold in|cuda/variants/reduce_atomic.cu|s/if (threadIdx.x % kWarp == 0) atomic_combine<Op>(result, v);/if (threadIdx.x % kWarp == 0 \&\& blockIdx.x != gridDim.x - 1 + (gridDim.x == 1)) atomic_combine<Op>(result, v);/|tests/test_reduce_gpu.py|tests/test_reduce_gpu.py -k exact_float_data"
)

build() { python setup.py build_ext --inplace >"$OUT/build.log" 2>&1; }
echo "baseline build: $( (time -p build) 2>&1 | awk '/real/ {print $2}') s"
report="$OUT/mutations.md"
survived=0
{
    echo "# Mutation runs"
    echo
    echo "| mutation | file | the test files | first failing test | the new tests alone | first failing new test |"
    echo "|---|---|---|---|---|---|"
} >"$report"
# "caught <first failing test>" or "SURVIVED" for one pytest selection (-x: the first failure ends it)
judge() {
    eval "python -m pytest -x -q -p no:cacheprovider $1" >"$OUT/pytest.log" 2>&1
    if [ $? -eq 0 ]; then echo "SURVIVED|-"; return; fi
    echo "caught|$(grep -m1 -E "^FAILED" "$OUT/pytest.log" | cut -c8- | cut -d' ' -f1)"
}
for m in "${MUTATIONS[@]}"; do
    IFS='|' read -r name file expr tests new <<<"$m"
    cp "$file" "$file.orig"
    sed -i "$expr" "$file"
    if cmp -s "$file" "$file.orig"; then
        row="NOT APPLIED (the sed expression matched nothing)|-|-|-"; survived=1
    elif ! build; then
        row="build failed|-|-|-"; tail -n 20 "$OUT/build.log"; survived=1
    else
        row="$(judge "$tests")|$(judge "$new")"
    fi
    IFS='|' read -r o1 f1 o2 f2 <<<"$row"
    case "$o1 $o2" in *SURVIVED*) survived=1 ;; esac
    echo "$name: $o1 $f1; new tests: $o2 $f2"
    echo "| $name | \`$file\` | \`$tests\`: $o1 | \`$f1\` | \`$new\`: $o2 | \`$f2\` |" >>"$report"
    mv "$file.orig" "$file"
done
build  # leave the tree built as it is
exit $survived
