#!/usr/bin/env bash
# The flake hunt (not part of npm test): runs the test files that account for the wasm heap or
# depend on threads starting and finishing (every build: each file loads all of dist/'s builds or
# the one init() picks) many times while a background load keeps every core busy, and reports
# each failure by file and test name. A test whose result depends on scheduling, load or time
# shows up here long before it fails one CI run in twenty (docs/contributing.md).
#
#   tools/flake-hunt.sh [RUNS] [TEST_FILE...]
#
# RUNS: rounds over the files (default 50). TEST_FILE: the files to run (default: the list below;
# the soaks are left out, a round of them takes as long as all the others together). The load
# is niced and the tests are not: it takes the cores' spare time, so the tests' threads are
# preempted and woken at other moments than on an idle machine (FLAKE_HUNT_LOAD_NICE=0 makes it
# contend as an equal: harsher, and slower). It stops itself after FLAKE_HUNT_LOAD_SECONDS
# (default 7200), and is killed when this script exits in any way.
# Each failing run's TAP output is kept in FLAKE_HUNT_LOGS (default: a new directory in /tmp).
# Exit status: 0 when no run failed.
set -uo pipefail
cd "$(dirname "$0")/.."

runs=${1:-50}
shift || true
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  files=(
    tests/js/gradients-lifetime.test.js  # backward's lifetime, every build, exact heap
    tests/js/loader-lifetime.test.js     # dispose() and the FinalizationRegistry (garbage collection)
    tests/js/memory.test.js              # forward loops and layer cycles on init()'s build, exact heap
    tests/js/limits.test.js              # refused requests allocate nothing
    tests/js/bad-inputs.test.js          # every bad-input row, every build, exact heap
    tests/js/out-buffers.test.js         # caller-owned buffers keep the heap flat
    tests/js/linear.test.js              # linear()/linearBackward() keep no memory
    tests/js/gradients.test.js           # backward frees what forward kept, every build
    tests/js/kv-cache.test.js            # cache disposal and the decode-step soak
    tests/js/determinism.test.js         # the same bits whichever thread ran which task
    tests/js/memory-4g-refusal-worker.test.js  # a pool worker's refused growth reaches the caller
  )
fi
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: tools/flake-hunt.sh [RUNS] [TEST_FILE...] (RUNS: a positive integer, got '$runs')" >&2
  exit 2
fi
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "flake-hunt: no test file $f" >&2; exit 2; }
done

logs=${FLAKE_HUNT_LOGS:-$(mktemp -d /tmp/flake-hunt.XXXXXX)}
mkdir -p "$logs"
failures="$logs/failures.txt"  # one line per failed test: <file> :: <suite > test>
: > "$failures"

# The load: one busy loop per core, niced, bounded in time, stopped on exit.
load_pids=()
stop_load() {
  for pid in "${load_pids[@]}"; do kill "$pid" 2>/dev/null; done
  load_pids=()
}
trap stop_load EXIT
trap 'stop_load; exit 130' INT TERM
cores=$(nproc)
load_ms=$(( ${FLAKE_HUNT_LOAD_SECONDS:-7200} * 1000 ))
for _ in $(seq "$cores"); do
  nice -n "${FLAKE_HUNT_LOAD_NICE:-19}" node -e "const end = Date.now() + $load_ms; while (Date.now() < end) {}" &
  load_pids+=($!)
done
echo "flake hunt: $runs runs of ${#files[@]} files, $cores cores loaded (nice ${FLAKE_HUNT_LOAD_NICE:-19}); logs in $logs"

# Failed tests in one TAP output, as "suite > test" (suites that failed only through a subtest
# are not listed again). Node's TAP: "# Subtest: name" opens a test at its indentation (4 spaces
# a level); "not ok N - name" closes it, then its YAML block says failureType.
failed_tests() {
  awk '
    match($0, /^ *# Subtest: /) { stack[int((RLENGTH - 11) / 4)] = substr($0, RLENGTH + 1); next }
    match($0, /^ *not ok [0-9]+ - /) {
      rest = substr($0, RLENGTH + 1)
      depth = int((length($0) - length(substr($0, match($0, /[^ ]/)))) / 4)
      pending = ""
      for (d = 0; d < depth; d++) pending = pending stack[d] " > "
      pending = pending rest
      next
    }
    pending != "" && /failureType: / {
      if ($0 !~ /subtestsFailed/) print pending
      pending = ""
    }
  ' "$1"
}

failed_runs=0
start=$(date +%s)
for run in $(seq "$runs"); do
  run_start=$(date +%s)
  run_failed=0
  for f in "${files[@]}"; do
    out="$logs/run-$run-$(basename "$f" .test.js).tap"
    node --test --test-reporter=tap "$f" > "$out" 2>&1
    rc=$?
    names=$(failed_tests "$out")
    if [ $rc -ne 0 ] || [ -n "$names" ]; then
      run_failed=1
      [ -n "$names" ] || names="(the file exited with status $rc, no failed test named)"
      while IFS= read -r name; do echo "$f :: $name" >> "$failures"; done <<< "$names"
    else
      rm -f "$out"
    fi
  done
  failed_runs=$(( failed_runs + run_failed ))
  echo "run $run/$runs: $( [ $run_failed -eq 0 ] && echo ok || echo FAILED ) ($(( $(date +%s) - run_start )) s; $failed_runs failed so far)"
done

echo
echo "flake hunt: $failed_runs of $runs runs failed ($(( $(date +%s) - start )) s; files: ${files[*]})"
if [ -s "$failures" ]; then
  echo "failures per test (count, file :: suite > test):"
  sort "$failures" | uniq -c | sort -rn
  echo "TAP output of each failing file run: $logs"
  exit 1
fi
echo "no test failed"
