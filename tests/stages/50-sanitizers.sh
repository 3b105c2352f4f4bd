# The native GoogleTest suite again, built with AddressSanitizer + UndefinedBehaviorSanitizer
# (CMake option MHA_SANITIZE, preset "sanitize"): any memory error, leak or undefined behaviour
# aborts the test run. Then the threaded tests under ThreadSanitizer (data races abort). Each
# preset builds only mha_tests (not the benchmark); ASan's runs its tests in 12 gtest shards, two at
# a time (CMakeLists.txt: a sanitized process is slow to start), TSan's one process per test.
# Kept short for the 30-minute mark: line tables only (-g1, stack traces keep file:line; a third
# less compile time than -g), and the Eigen-oracle gradient sweep runs 300 of its 3000 random
# configurations (MHA_ORACLE_BACKWARD_CONFIGS in the preset; 10-native runs all 3000; under
# ASan each takes ~40x as long).
set -euo pipefail
mkdir -p build
cmake --preset sanitize > build/sanitize-configure.log 2>&1 || { cat build/sanitize-configure.log; exit 1; }
cmake --build --preset sanitize
ctest --preset sanitize

# ThreadSanitizer (preset "tsan") over the tests that run the layer on a thread pool (the Threads
# suite): that build compiles only the test files that hold one (MHA_THREAD_TESTS_ONLY).
cmake --preset tsan > build/tsan-configure.log 2>&1 || { cat build/tsan-configure.log; exit 1; }
cmake --build --preset tsan
ctest --preset tsan
