# The WebGPU backend (bindings/js/webgpu/) in Node: Dawn (npm 'webgpu') on Chromium's software
# Vulkan driver, SwiftShader (no GPU needed). The driver is found through these variables, which
# must be set before the process starts.
set -euo pipefail
if [ ! -f /usr/lib/chromium/vk_swiftshader_icd.json ]; then
  echo "25-webgpu: /usr/lib/chromium/vk_swiftshader_icd.json not found; tools/setup.sh installs Debian's chromium" >&2
  exit 1
fi
export LD_LIBRARY_PATH=/usr/lib/chromium${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json
# One file at a time: the software adapter uses every core.
node --test --test-concurrency=1 tests/webgpu/
