# GoogleTest parity and error tests of the C++ core, built with g++, run by ctest.
set -euo pipefail
cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release > build/native-configure.log 2>&1 || { cat build/native-configure.log; exit 1; }
cmake --build build/native -j2
ctest --test-dir build/native --output-on-failure
# The oracle's own lines (ctest shows a passing test's output only in its log): how many random
# configurations were checked against the float64 Eigen oracle (forward; forward_for_training +
# backward against its gradients; its backward against finite differences), and their seeds.
grep -h '\[ oracle' build/native/Testing/Temporary/LastTest.log
