#!/usr/bin/env bash
# Fetches Mesa's lavapipe (a software Vulkan driver) from Debian bookworm-backports into
# build/lavapipe/, for the WebGPU tests' second adapter (tests/stages/25-webgpu.sh): subgroups of
# 8 and shader-f16, where Chromium's SwiftShader has subgroups of 4 and no shader-f16. Bookworm's
# own Mesa 22.3 lavapipe does not do: Dawn rejects it (no shaderUniform*ArrayDynamicIndexing).
#
# Nothing system-wide changes: apt runs on a private source list, package lists and cache under
# build/lavapipe/apt/ (`apt-get download` takes whatever version backports has), and the .debs
# are unpacked with `dpkg -x`, not installed. The result is build/lavapipe/lvp_icd.json, a Vulkan
# ICD file with the driver's absolute path, used with
#   LD_LIBRARY_PATH=/usr/lib/chromium:build/lavapipe/root/usr/lib/<multiarch>  VK_ICD_FILENAMES=<it>
# (Chromium's libvulkan.so.1 loader; the backports libdrm next to the driver). tools/setup.sh
# runs it; it does nothing when the ICD file is there. It needs bookworm's libllvm15
# (tools/debian-packages.txt) and network access to deb.debian.org.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$PWD/build/lavapipe
icd=$dir/lvp_icd.json
[ -f "$icd" ] && exit 0

fail() {
  echo "lavapipe: $*" >&2
  echo "lavapipe: the WebGPU tests (tests/stages/25-webgpu.sh) need this second adapter; see tools/lavapipe.sh" >&2
  exit 1
}

PACKAGES=(mesa-vulkan-drivers libdrm2 libdrm-amdgpu1)  # (the driver needs libdrm >= 2.4.121: backports' too)
rm -rf "$dir"
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/debs" "$dir/root"
echo 'deb http://deb.debian.org/debian bookworm-backports main' > "$dir/apt/sources.list"
APT=(-o "Dir::Etc::SourceList=$dir/apt/sources.list" -o Dir::Etc::SourceParts=-
  -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache" -o APT::Sandbox::User=root)
echo "lavapipe: fetching ${PACKAGES[*]} from bookworm-backports into build/lavapipe/"
if ! apt-get "${APT[@]}" -q update > "$dir/apt-update.log" 2>&1 || grep -q '^E: \|^W: .*[Ff]ail' "$dir/apt-update.log"; then
  cat "$dir/apt-update.log" >&2
  fail "apt-get update of bookworm-backports failed (above; the log is $dir/apt-update.log)"
fi
if ! (cd "$dir/debs" && apt-get "${APT[@]}" -q download "${PACKAGES[@]/%//bookworm-backports}") > "$dir/apt-download.log" 2>&1; then
  cat "$dir/apt-download.log" >&2
  fail "apt-get download ${PACKAGES[*]} from bookworm-backports failed (above)"
fi
for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$dir/root"; done

driver=$(find "$dir/root/usr/lib" -name libvulkan_lvp.so | head -n 1)
[ -n "$driver" ] || fail "no libvulkan_lvp.so in $(ls "$dir/debs")"
missing=$(LD_LIBRARY_PATH=$(dirname "$driver") ldd "$driver" | grep 'not found' || true)
[ -z "$missing" ] || fail "the driver's libraries are missing (install their Debian packages):
$missing"
# The package's own ICD file (its API version), with the driver's absolute path.
shipped=$dir/root/usr/share/vulkan/icd.d/lvp_icd.json
[ -f "$shipped" ] || fail "no usr/share/vulkan/icd.d/lvp_icd.json in the package"
sed "s|\"library_path\": *\"[^\"]*\"|\"library_path\": \"$driver\"|" "$shipped" > "$icd.tmp"
grep -q "\"library_path\": \"$driver\"" "$icd.tmp" || fail "could not write the driver's path into $icd.tmp"
mv "$icd.tmp" "$icd"  # (last: its presence says everything above is done)
echo "lavapipe: $(cd "$dir/debs" && echo *.deb) -> $icd"
