# Fuzzing (see tests/fuzz/README.md): about 60 s of libFuzzer over the C++ API, starting from the
# committed corpus, with ASan + UBSan; then about 30 s of the safetensors reader's fuzzer (JavaScript).
# Prints how many inputs each ran. MHA_FUZZ_SECONDS changes the libFuzzer time.
set -euo pipefail
mkdir -p build
cmake --preset fuzz > build/fuzz-configure.log 2>&1 || { cat build/fuzz-configure.log; exit 1; }
cmake --build --preset fuzz

# New inputs go to a scratch directory so the committed corpus only changes on purpose.
scratch=build/fuzz/new-corpus
rm -rf "$scratch" && mkdir -p "$scratch"
log=build/fuzz/mha_fuzz.log
if ! build/fuzz/tests/fuzz/mha_fuzz -max_total_time="${MHA_FUZZ_SECONDS:-60}" -timeout=10 -print_final_stats=1 \
    -artifact_prefix=build/fuzz/ "$scratch" tests/fuzz/corpus/mha > "$log" 2>&1; then
  tail -n 40 "$log"
  echo "mha_fuzz found a failure; the input is in build/fuzz/ (crash-* / timeout-*)" >&2
  exit 1
fi
echo "mha_fuzz: $(awk '/number_of_executed_units/ {print $2}' "$log") executions, $(ls tests/fuzz/corpus/mha | wc -l) corpus inputs, $(ls "$scratch" | wc -l) new"

# The reader must never hang: the whole run gets a hard time limit well above its budget.
seconds="${SAFETENSORS_FUZZ_SECONDS:-30}"
timeout $((seconds + 60)) node tests/fuzz/safetensors_fuzz.mjs --seconds "$seconds"
