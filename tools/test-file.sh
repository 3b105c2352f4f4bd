#!/usr/bin/env bash
# Runs test files alone, each in the environment its stage gives it (npm run test:file -- PATH...):
#   tests/js/x.test.js         node --test
#   tests/webgpu/x.test.js     node --test on a software WebGPU adapter: SwiftShader, or
#                              --adapter=lavapipe (tools/webgpu-adapter-env.sh), one file at a time
#   tests/browser/x.test.js    node --test, one file at a time (each drives its own Chromium)
#   tests/native/x_test.cpp    builds build/native's mha_tests (incremental), then ctest -R over the
#                              tests the file defines
# Options starting with --test- go to node (e.g. --test-name-pattern='KV cache'). The wasm build
# is redone first when its inputs changed (tools/prepare.sh's stamp); the set-up is not.
set -euo pipefail
caller=${INIT_CWD:-$PWD}  # (npm runs scripts in the root; INIT_CWD is where it was typed)
cd "$(dirname "$0")/.."
source tools/stamps.sh
source tools/webgpu-adapter-env.sh

usage() {
  echo "usage: npm run test:file -- [--adapter=swiftshader|lavapipe] [--test-...] tests/{js,webgpu,browser}/x.test.js | tests/native/x_test.cpp ..." >&2
  exit 2
}
adapter=swiftshader
node_options=()
files=()
for arg in "$@"; do
  case "$arg" in
    --adapter=*) adapter=${arg#--adapter=} ;;
    --test-*) node_options+=("$arg") ;;
    -*) echo "test-file: unknown option $arg" >&2; usage ;;
    /*) files+=("$(realpath -m --relative-to=. "$arg")") ;;
    *) files+=("$(realpath -m --relative-to=. "$caller/$arg")") ;;
  esac
done
[ ${#files[@]} -gt 0 ] || usage

# The ctest regex of the GoogleTest tests a native test file defines (TEST, TEST_F, TEST_P), whose
# ctest names are Suite.Name, or Prefix/Suite.Name/Param for TEST_P.
native_tests_regex() {
  local tests
  tests=$(tr '\n' ' ' < "$1" | grep -oE '\bTEST(_F|_P)?\(\s*[A-Za-z0-9_]+\s*,\s*[A-Za-z0-9_]+' |
    sed -E 's/.*\(\s*([A-Za-z0-9_]+)\s*,\s*([A-Za-z0-9_]+)/\1\\.\2/' | sort -u | paste -sd'|')
  [ -n "$tests" ] || { echo "test-file: no TEST(...) in $1" >&2; return 1; }
  echo "^([^/.]*/)?($tests)([/ ]|\$)"
}

wasm_checked=
wasm_up_to_date() {  # (once per run; every Node test loads dist/)
  [ -n "$wasm_checked" ] && return
  stamp_fresh wasm || { echo "test-file: the wasm inputs changed since dist/ was built; rebuilding"; bash tools/build-wasm.sh; }
  wasm_checked=1
}

failed=0
for file in "${files[@]}"; do
  [ -f "$file" ] || { echo "test-file: no file $file" >&2; exit 2; }
  echo "=== $file"
  case "$file" in
    tests/native/*.cpp)
      regex=$(native_tests_regex "$file")
      bash tools/build-native.sh --target mha_tests
      ctest --test-dir build/native --output-on-failure -j2 -R "$regex" || failed=1
      ;;
    tests/webgpu/*.js)
      wasm_up_to_date
      webgpu_adapter_env "$adapter"
      env "${WEBGPU_ENV[@]}" node --test --test-concurrency=1 "${node_options[@]}" "$file" || failed=1
      ;;
    tests/browser/*.js)
      wasm_up_to_date
      node --test --test-concurrency=1 "${node_options[@]}" "$file" || failed=1
      ;;
    tests/js/*.js)
      wasm_up_to_date
      node --test "${node_options[@]}" "$file" || failed=1
      ;;
    *)
      echo "test-file: $file is not a test file of tests/js, tests/webgpu, tests/browser or tests/native" \
        "(the other stages run whole: bash tests/stages/NN-what.sh)" >&2
      exit 2
      ;;
  esac
done
exit $failed
