# The npm package through its public JS API, with Node's test runner.
set -euo pipefail
node --test tests/js/
