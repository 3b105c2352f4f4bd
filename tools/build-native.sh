#!/usr/bin/env bash
# Configures (Release, g++) and builds the native targets into build/native/, incrementally:
# what tests/stages/10-native.sh, tools/test-quick.sh and tools/test-file.sh build before ctest.
# Arguments go to `cmake --build` (e.g. --target mha_tests); none builds every target.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release > build/native-configure.log 2>&1 || { cat build/native-configure.log; exit 1; }
cmake --build build/native -j2 "$@"
