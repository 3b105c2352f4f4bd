# The npm package as users get it: lint the package metadata and types, pack it, install the
# tarball into an empty project, then use it from ESM and CommonJS in Node, type-check the typed
# example against it, build a page with Vite and with webpack, and run those and a bundler-free
# page in headless Chromium (with and without cross-origin isolation). Every run of a
# forward pass is compared with PyTorch's fixtures.
set -euo pipefail
ROOT=$PWD
BIN=$ROOT/node_modules/.bin
WORK=$(mktemp -d)
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"' EXIT

echo "--- publint, arethetypeswrong"
"$BIN/publint" --strict
# The .wasm subpaths are files for bundlers and fetch(), not modules with types.
"$BIN/attw" --pack . --format ascii --exclude-entrypoints \
  ./dist/mha-simd.wasm ./dist/mha-scalar.wasm ./dist/mha-simd-threads.wasm

echo "--- npm pack, install into an empty project"
npm pack --silent --pack-destination "$WORK" > "$WORK/tarball-name"
TARBALL=$WORK/$(tail -n 1 "$WORK/tarball-name")
APP=$WORK/app
mkdir "$APP"
cp -r tests/package/vite-app/. "$APP/"
cp tests/package/run-cases.js tests/package/node-esm.mjs tests/package/node-cjs.cjs tests/package/plain-page.html \
  examples/typed-usage.ts "$APP/"
echo '{ "name": "app", "private": true, "type": "module" }' > "$APP/package.json"
node tests/package/export-cases.mjs "$APP/cases.json"
# webpack only for the bundler check (from the npm cache when it is there).
(cd "$APP" && npm install --no-audit --no-fund --prefer-offline --silent "$TARBALL" webpack@5 webpack-cli@6)
tar -tzf "$TARBALL" | sort | sed 's/^/  packed: /'

echo "--- Node: ESM and CommonJS"
(cd "$APP" && node node-esm.mjs && node node-cjs.cjs)

echo "--- TypeScript: examples/typed-usage.ts against the installed types"
cat > "$APP/tsconfig.json" <<'JSON'
{ "compilerOptions": { "strict": true, "noEmit": true, "module": "nodenext", "moduleResolution": "nodenext",
  "target": "es2022", "lib": ["es2023", "dom", "esnext.disposable"], "types": [] }, "files": ["typed-usage.ts"] }
JSON
(cd "$APP" && "$BIN/tsc" -p tsconfig.json)

echo "--- Vite 7 and webpack 5 builds, then headless Chromium (those pages and a bundler-free page)"
(cd "$APP" && "$BIN/vite" build)
cp tests/package/webpack/webpack.config.cjs "$APP/"
(cd "$APP" && node_modules/.bin/webpack --config webpack.config.cjs --stats errors-warnings)
cp tests/package/webpack/index.html "$APP/webpack-dist/"
node tests/package/browser-check.mjs "$APP"
