#!/usr/bin/env bash
# compute-sanitizer over gpureduce (.ci/sanitizer_sweep.py): memcheck, initcheck (all but `pipelined`,
# below) and synccheck over the whole sweep, racecheck (slow: it instruments every shared-memory access) over its
# small sizes.  0 findings required; every result is also compared with NumPy.  Writes OUT/sanitizers.md (a
# table: tool, calls, errors, time) and each tool's log; exit status 1 on any finding, failed call, or a tool past
# SANITIZER_TIMEOUT seconds (default 240).
#
#   OUT=/some/dir bash .ci/sanitize.sh        (on the GPU machine, gpureduce installed)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/gpureduce-sanitize}
mkdir -p "$OUT"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
table="$OUT/sanitizers.md"
{
    echo "| tool | sweep | calls | errors | time | rc |"
    echo "|---|---|---:|---:|---:|---:|"
} >"$table"
rc=0
for tool in memcheck initcheck racecheck synccheck; do
    # initcheck does not count the bulk copies (cp.async.bulk) by which `pipelined` stores its result as writes:
    # every element of it reads as uninitialized when copied back, though it equals NumPy's (H200, 2026-11-25).
    # memcheck, racecheck and synccheck check `pipelined`.
    case $tool in
        racecheck) sweep=${RACECHECK_SWEEP:---quick} ;;
        initcheck) sweep="--skip pipelined" ;;
        *) sweep= ;;
    esac
    log="$OUT/sanitizer_$tool.txt"
    t0=$(date +%s)
    # from /tmp: the installed gpureduce, not the clone's source folder
    (cd /tmp && timeout "${SANITIZER_TIMEOUT:-240}" "$CS" --tool "$tool" --error-exitcode 86 --print-limit 50 \
        python "$ROOT/.ci/sanitizer_sweep.py" $sweep) >"$log" 2>&1
    r=$?
    # "ERROR SUMMARY: N errors"; racecheck says "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)"
    errors=$(grep -Eo "ERROR SUMMARY: [0-9]+ error|hazards displayed \([0-9]+ error" "$log" | grep -Eo "[0-9]+ error" |
        grep -Eo "[0-9]+" | tail -n 1)
    calls=$(grep -Eo "sanitizer sweep: [0-9]+ calls" "$log" | grep -Eo "[0-9]+" | tail -n 1)
    echo "| $tool | ${sweep:-full} | ${calls:-?} | ${errors:-?} | $(($(date +%s) - t0)) s | $r |" >>"$table"
    if [ "$r" -ne 0 ] || [ "${errors:-1}" != "0" ]; then rc=1; fi
done
cat "$table"
exit $rc
