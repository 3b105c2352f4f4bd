# Sourced (not run): stamps that record which inputs the set-up and the wasm build last ran
# with, so that `npm test` (tools/prepare.sh) skips them when nothing they read has changed.
# A stamp is the SHA-256 of its inputs' names and contents (not their times, so a branch switch
# or a fresh checkout of the same files is still up to date). Without the stamp (a clean clone,
# a deleted build/ or dist/) the step runs.
#   setup  build/stamps/setup             tools/setup.sh writes it at its end
#   wasm   dist/build-inputs.sha256       tools/build-wasm.sh writes it at its end; it lives in
#          dist/ beside what it describes, so a copied dist/ keeps saying what it was built from
# Paths are relative to the repository root, the working directory the callers run in.

# Each step's inputs: files, or folders (every file in them).
STAMP_INPUTS_setup=(package-lock.json tools/debian-packages.txt tools/setup.sh tools/install-debian-packages.sh
  tools/lavapipe.sh)
STAMP_INPUTS_wasm=(src bindings/embind CMakeLists.txt tools/build-wasm.sh tools/embed-wgsl.mjs tools/wasm-relaxed-opcodes.mjs
  bindings/js/webgpu/wgsl)
STAMP_FILE_setup=build/stamps/setup
STAMP_FILE_wasm=dist/build-inputs.sha256
# What must still be there for a stamp to count (a step's outputs, removed by hand).
STAMP_OUTPUTS_setup=(node_modules/.package-lock.json build/lavapipe/lvp_icd.json)
STAMP_OUTPUTS_wasm=(dist/mha-simd.wasm dist/mha-scalar.wasm dist/mha-simd-threads.wasm dist/mha-relaxed-simd.wasm
  dist/mha-relaxed-simd-threads.wasm)

# Prints the hash of step $1's inputs now.
stamp_hash() {
  local -n inputs=STAMP_INPUTS_$1
  find "${inputs[@]}" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}

# Succeeds when step $1 last ran with the inputs there are now and its outputs are still there.
stamp_fresh() {
  local -n file=STAMP_FILE_$1 outputs=STAMP_OUTPUTS_$1
  local output
  [ -f "$file" ] || return 1
  for output in "${outputs[@]}"; do [ -e "$output" ] || return 1; done
  [ "$(cat "$file")" = "$(stamp_hash "$1")" ]
}

# Records hash $2 (taken with stamp_hash before the step ran) as step $1's stamp.
stamp_write() {
  local -n file=STAMP_FILE_$1
  mkdir -p "$(dirname "$file")"
  echo "$2" > "$file"
}
