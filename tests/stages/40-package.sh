# The npm package as users get it: regenerate the API reference (an undocumented export fails)
# and check every link of the docs; lint the package metadata and types, pack it, install the
# tarball into an empty project, check the shipped README's and docs' links resolve inside it, run
# the README's first program as pasted and the shipped examples, then use it from ESM and CommonJS
# in Node, type-check the typed examples and CommonJS users' types against it (tsc --strict), build
# a page with Vite and with webpack, and run those and a bundler-free page in headless Chromium
# (with and without cross-origin isolation). Every run of a forward pass is compared with
# PyTorch's fixtures.
set -euo pipefail
ROOT=$PWD
BIN=$ROOT/node_modules/.bin
WORK=$(mktemp -d)
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT

echo "--- API reference: regenerated from index.d.ts by TypeDoc (an undocumented export fails), equal to docs/reference/"
npm run --silent docs:api -- --out "$WORK/reference"
diff -r docs/reference "$WORK/reference" || { echo "docs/reference/ is stale: run npm run docs:api"; exit 1; }
echo "--- every relative link in README.md and docs/ resolves"
node tools/check-links.mjs

echo "--- publint, arethetypeswrong"
"$BIN/publint" --strict
# The .wasm subpaths are files for bundlers and fetch(), not modules with types.
"$BIN/attw" --pack . --format ascii --exclude-entrypoints \
  ./dist/mha-simd.wasm ./dist/mha-scalar.wasm ./dist/mha-simd-threads.wasm ./dist/mha-relaxed-simd.wasm \
  ./dist/mha-relaxed-simd-threads.wasm

echo "--- npm pack, install into an empty project"
npm pack --silent --pack-destination "$WORK" > "$WORK/tarball-name"
TARBALL=$WORK/$(tail -n 1 "$WORK/tarball-name")
APP=$WORK/app
mkdir "$APP"
cp -r tests/package/vite-app/. "$APP/"
cp tests/package/run-cases.js tests/package/node-esm.mjs tests/package/node-cjs.cjs tests/package/plain-page.html \
  examples/typed-usage.ts tests/package/per-head-weights.ts tests/package/typed-require.cts tests/package/models-usage.ts "$APP/"
echo '{ "name": "app", "private": true, "type": "module" }' > "$APP/package.json"
node tests/package/export-cases.mjs "$APP/cases.json"
# webpack only for the bundler check (from the npm cache when it is there).
(cd "$APP" && npm install --no-audit --no-fund --prefer-offline --silent "$TARBALL" webpack@5 webpack-cli@6)
tar -tzf "$TARBALL" | sort | sed 's/^/  packed: /'

echo "--- the installed package: every relative link of its README and docs resolves inside it"
node tools/check-links.mjs "$APP/node_modules/mha-wasm"

echo "--- the README's first program, pasted into the empty project, runs and prints what it says"
node tests/package/readme-examples.mjs README.md "$APP"
(cd "$APP" && node "$ROOT/tests/package/check-first-program.mjs")

echo "--- the shipped examples run from the installed package, and from a copy in the project"
(cd "$APP" && node node_modules/mha-wasm/examples/node-example.mjs | sed -n 1p)
cp "$APP/node_modules/mha-wasm/examples/node-example.mjs" "$APP/copied-example.mjs"
(cd "$APP" && node copied-example.mjs | sed -n 1p)
(cd "$APP" && node node_modules/mha-wasm/examples/generate.mjs "the kelu sat" 20 | grep -x 'the same tokens both ways')
(cd "$APP" && node node_modules/mha-wasm/examples/sentiment.mjs "the film was not good at all" | grep -F ': negative')
(cd "$APP" && node node_modules/mha-wasm/examples/train-copy.mjs | tail -n 1)

echo "--- Node: ESM and CommonJS"
(cd "$APP" && node node-esm.mjs && node node-cjs.cjs)

echo "--- mha-wasm/models from ESM and CommonJS: a tiny checkpoint's hook points against torch's"
cp -r tests/fixtures/your-model/gpt2 "$APP/gpt2"
cp tests/package/models.mjs "$APP/"
(cd "$APP" && node models.mjs)
(cd "$APP" && node node_modules/mha-wasm/examples/patching.mjs gpt2 "the cat met a dog. the cat" "the dog met a cat. the dog" | grep -F 'heads that matter most')

echo "--- TypeScript (tsc --strict): examples/typed-usage.ts, the README's example, the per-head weights use case, mha-wasm/models (models-usage.ts), CommonJS (typed-require.cts)"
cat > "$APP/tsconfig.json" <<'JSON'
{ "compilerOptions": { "strict": true, "noEmit": true, "module": "nodenext", "moduleResolution": "nodenext",
  "target": "es2022", "lib": ["es2023", "dom", "esnext.disposable"], "types": [] }, "files": ["typed-usage.ts", "first.ts", "per-head-weights.ts", "models-usage.ts", "typed-require.cts"] }
JSON
(cd "$APP" && "$BIN/tsc" -p tsconfig.json)

echo "--- Vite 7 and webpack 5 builds, then headless Chromium (those pages and a bundler-free page)"
(cd "$APP" && "$BIN/vite" build)
cp tests/package/webpack/webpack.config.cjs "$APP/"
(cd "$APP" && node_modules/.bin/webpack --config webpack.config.cjs --stats errors-warnings)
cp tests/package/webpack/index.html "$APP/webpack-dist/"
node tests/package/browser-check.mjs "$APP"
