# The native GoogleTest suite again, built with AddressSanitizer + UndefinedBehaviorSanitizer
# (CMake option MHA_SANITIZE, preset "sanitize"): any memory error, leak or undefined behaviour
# aborts the test run. Then the threaded tests under ThreadSanitizer (data races abort). Each
# preset builds only mha_tests (not the benchmark) and runs its tests two at a time.
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
