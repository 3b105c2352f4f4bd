# GoogleTest parity and error tests of the C++ core, built with g++, run by ctest.
set -euo pipefail
cd "$(dirname "$0")/../.."
# Every native target, the benchmark too (so a change that breaks bench/native/ fails here).
bash tools/build-native.sh
# Two at a time (the machine has 2 cores): each test is its own process, none shares a file.
ctest --test-dir build/native --output-on-failure -j2
# The oracle's own lines (ctest shows a passing test's output only in its log): how many random
# configurations were checked against the float64 Eigen oracle (forward; forward_for_training +
# backward against its gradients; its backward against finite differences), and their seeds.
grep -h '\[ oracle' build/native/Testing/Temporary/LastTest.log
