# The demo page in a real browser: Debian's Chromium driven by playwright-core (tests/browser/).
# Also writes build/screenshot.png (UPDATE_SCREENSHOT=1: docs/screenshot.png, the README's picture).
set -euo pipefail
if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  echo "30-browser: ${CHROMIUM_PATH:-/usr/bin/chromium} not found; tools/setup.sh installs Debian's chromium" >&2
  exit 1
fi
# One file at a time: each drives its own browser, and the machine has 2 cores. A test that waits
# on the page for 10 minutes fails (a whole file takes about a minute at most) instead of holding
# the run.
node --test --test-concurrency=1 --test-timeout=600000 tests/browser/
