// Loads the executable Keras reference for the tests: the TensorFlow team's port of Keras'
// MultiHeadAttention in @tensorflow/tfjs-layers (keras-reference-entry.js, bundled on the fly with
// esbuild into build/, since it is not in the package's public index), with tfjs on its CPU backend.
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';

import { buildSync } from 'esbuild';

const ROOT = new URL('../../', import.meta.url).pathname;
mkdirSync(`${ROOT}build`, { recursive: true });
buildSync({
  entryPoints: [`${ROOT}tests/js/keras-reference-entry.js`], bundle: true, format: 'cjs', platform: 'node',
  mainFields: ['module', 'main'], outfile: `${ROOT}build/keras-reference.cjs`, logLevel: 'error',
});
const { log, warn } = console;
console.log = console.warn = () => {};  // tfjs greets Node users on load
const reference = createRequire(import.meta.url)(`${ROOT}build/keras-reference.cjs`);
await reference.tf.setBackend('cpu');
reference.tf.tensor([0]).dispose();  // the greeting comes with the first tensor
Object.assign(console, { log, warn });

/** Keras' MultiHeadAttention (tfjs-layers' port) and the tfjs namespace. */
export const { MultiHeadAttention: KerasReference, tf } = reference;
