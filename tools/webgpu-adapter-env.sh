# Sourced (not run) by tests/stages/25-webgpu.sh, tools/test-file.sh and tools/test-quick.sh:
# the one place that says how a Node process reaches each software WebGPU adapter of the tests.
# Dawn (npm 'webgpu') finds the Vulkan driver through LD_LIBRARY_PATH and VK_ICD_FILENAMES, which
# must be set before the process starts; MHA_WEBGPU_ADAPTER names the adapter, and the tests fail
# if the adapter they get is another (tests/webgpu/devices.js).
#   swiftshader  Chromium's SwiftShader (subgroups of 4, no shader-f16), from Debian's chromium
#   lavapipe     Mesa's lavapipe from bookworm-backports (subgroups of 8, shader-f16), fetched into
#                build/lavapipe/ by tools/lavapipe.sh (tools/setup.sh runs it)
# Use: source tools/webgpu-adapter-env.sh; webgpu_adapter_env NAME || exit 1; then start node with
# "${WEBGPU_ENV[@]}" before it:  env "${WEBGPU_ENV[@]}" node --test ...
# Paths are relative to the repository root, the working directory the callers run in.

# Sets WEBGPU_ENV (an array of NAME=value) for adapter $1; prints why and returns 1 when the
# adapter's driver is missing.
webgpu_adapter_env() {
  local name=$1 icd libs=""
  case "$name" in
    swiftshader)
      icd=/usr/lib/chromium/vk_swiftshader_icd.json
      if [ ! -f "$icd" ]; then
        echo "webgpu: $icd not found; tools/setup.sh installs Debian's chromium" >&2
        return 1
      fi
      ;;
    lavapipe)
      icd=$PWD/build/lavapipe/lvp_icd.json
      if [ ! -f "$icd" ]; then
        echo "webgpu: $icd not found; run bash tools/lavapipe.sh (tools/setup.sh runs it)" >&2
        return 1
      fi
      # The backports libdrm lives next to the driver.
      libs=:$(dirname "$(sed -n 's/.*"library_path": *"\([^"]*\)".*/\1/p' "$icd")")
      ;;
    *)
      echo "webgpu: no adapter '$name' (swiftshader or lavapipe)" >&2
      return 1
      ;;
  esac
  # Chromium's libvulkan.so.1 loader serves both drivers.
  WEBGPU_ENV=("MHA_WEBGPU_ADAPTER=$name" "VK_ICD_FILENAMES=$icd"
    "LD_LIBRARY_PATH=/usr/lib/chromium$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  # lavapipe compiles each new pipeline with LLVM (seconds each on 2 cores); its shader cache is
  # kept in build/lavapipe/shader-cache, so a second run is faster.
  if [ "$name" = lavapipe ]; then
    WEBGPU_ENV+=("MESA_SHADER_CACHE_DIR=$PWD/build/lavapipe/shader-cache")
  fi
}
