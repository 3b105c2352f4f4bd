#!/usr/bin/env bash
# Where one flash-attention head's time goes, stage by stage (wasm, one thread): the kernel
# benchmark (`npm run bench:kernels`) built from copies of attention_flash.cpp with stages
# compiled out, then run interleaved, 3 rounds, printing the head's ms per variant:
#   full | no P.V (accumulate skipped) | no exp (p = s - m) | neither | scores only (Q.K^T and
#   the row max). Differences give each stage's share (attention_flash.cpp's opening comment).
#   bash bench/kernels/profile-flash.sh [commit]   # commit: profile that version's kernel instead
#   MHA_KERNELS=flash=4x128,exp=estrin5 bash bench/kernels/profile-flash.sh   # pin the variants (else calibrated)
# The copies are built in build/profile-flash/; nothing in src/ changes.
set -euo pipefail
cd "$(dirname "$0")/../.."
export NODE_PATH=/usr/share/nodejs   # Emscripten's JS optimizer needs Debian's acorn
out=build/profile-flash
rm -rf "$out" && mkdir -p "$out/kernels" "$out/include"
ln -sfn /usr/include/xsimd "$out/include/xsimd"
for f in attention_flash.cpp attention_kernel.hpp fast_exp.hpp score_epilogue.hpp simd.hpp; do
  if [ $# -ge 1 ]; then git show "$1:src/mha/kernels/$f" > "$out/kernels/$f"; else cp "src/mha/kernels/$f" "$out/kernels/$f"; fi
done
# The flash kernel's own variant headers, where the profiled version has them (the profile times
# attention_head_flash, so the variant the calibration picks; MHA_KERNELS does not reach wasm here).
for f in flash_variants.hpp exp_variants.hpp kernel_choice.hpp gemm_tile.hpp gemm_variants.hpp gemv_variants.hpp; do
  if [ $# -ge 1 ]; then git show "$1:src/mha/kernels/$f" > "$out/kernels/$f" 2>/dev/null || rm -f "$out/kernels/$f"; else cp "src/mha/kernels/$f" "$out/kernels/$f"; fi
done
# Guards around the stages (each replacement must match exactly once, or the script stops).
python3 - "$out/kernels/attention_flash.cpp" <<'PY'
import re, sys
path = sys.argv[1]
s = open(path).read()
def once(pattern, repl):
    global s
    s, n = re.subn(pattern, repl, s, count=1, flags=re.S)
    if n != 1: sys.exit(f'profile-flash: no match for {pattern!r}')
once(r'(    if \(may_block\)\n      accumulate<true>.*?accumulate<false>[^;]*;)', r'#ifndef NO_PV\n\1\n#else\n    (void)p;\n#endif')
once(r'const Vec p = (fast_exp(?:_as<\w+>)?)\((simd::load\(sr \+ j\) - vm)\);', r'const Vec p =\n#ifdef NO_EXP\n  \2;\n#else\n  \1(\2);\n#endif')
once(r'(    for \(int r = 0; r < rows; \+\+r\) \{\n)(      float\* sr = s \+ r \* b\.stride;\n      const float m_old)',
     r'\1#ifdef SCORES_ONLY\n      b.max[r0 + r] = std::max(b.max[r0 + r], simd::hmax(tile_max[r]));\n      continue;\n#endif\n\2')
open(path, 'w').write(s)
PY
variants=("full:" "no-pv:-DNO_PV" "no-exp:-DNO_EXP" "neither:-DNO_PV -DNO_EXP" "scores-only:-DNO_PV -DSCORES_ONLY")
for v in "${variants[@]}"; do
  name=${v%%:*} flags=${v#*:}
  # shellcheck disable=SC2086
  em++ -O3 -DNDEBUG -msimd128 -msse4.1 -std=c++17 $flags -Isrc -I"$out/kernels" -isystem "$out/include" \
    bench/kernels/kernel_benchmark.cpp src/mha/kernels/packed_linear.cpp src/mha/kernels/gemm_variants.cpp src/mha/kernels/gemm_calibration.cpp src/mha/kernels/variant_calibration.cpp src/mha/kernels/gemv_variants.cpp src/mha/kernels/gemv_calibration.cpp \
    src/mha/kernels/kernel_choice.cpp src/mha/kernels/flash_calibration.cpp src/mha/kernels/exp_variants.cpp src/mha/kernels/weight_formats.cpp src/mha/kernels/quantized_panels.cpp src/mha/kernels/quantized_gemv.cpp \
    src/mha/kernels/quantized_gemv_reference.cpp src/mha/kernels/attention_backward_flash.cpp "$out/kernels/attention_flash.cpp" \
    src/mha/kernels/attention_decode.cpp -sALLOW_MEMORY_GROWTH=1 -o "$out/$name.cjs"
done
echo "| variant | round 1 ms | round 2 ms | round 3 ms |"
echo "|---|---:|---:|---:|"
declare -A times
for round in 1 2 3; do
  for v in "${variants[@]}"; do
    name=${v%%:*}
    ms=$(node --no-experimental-fetch --no-liftoff "$out/$name.cjs" | grep 'attention_head_flash' | awk -F'|' '{gsub(/ /, "", $4); print $4}')
    times[$name]="${times[$name]:-} | $ms"
  done
done
for v in "${variants[@]}"; do name=${v%%:*}; echo "| $name${times[$name]} |"; done
