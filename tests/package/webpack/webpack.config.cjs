// webpack 5 with nothing special for mha-wasm: the Vite page's main.js as the entry.
const path = require('node:path');
module.exports = {
  mode: 'production',
  entry: './main.js',
  output: { path: path.resolve(__dirname, 'webpack-dist'), filename: 'main.js', clean: true },
  experiments: { topLevelAwait: true },
  performance: { hints: false },
};
