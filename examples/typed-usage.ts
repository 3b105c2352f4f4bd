// A typed tour of the public API; `tsc --noEmit` checks it against the package's .d.ts
// (tests/stages/40-package.sh runs it in a project that installed the packed tarball).
import {
  init, readSafetensors, stateDictFromKeras, stateDictFromOnnxAttention, stateDictFromSafetensors,
  writeSafetensors,
} from 'mha-wasm';
import type {
  BuildInfo, ForwardResult, MultiHeadAttention, InitOptions, KerasMultiHeadAttentionWeights, MhaModule, SafetensorsFile, StateDict, Tensor,
} from 'mha-wasm';

const options: InitOptions = { threads: 2, simd: true, locateFile: (fileName, defaultUrl) => (fileName.endsWith('.wasm') ? defaultUrl : undefined) };
const mha: MhaModule = await init(options);
const build: BuildInfo = mha.build;
console.log(`${build.name}: simd ${build.simd}, ${build.numThreads} thread(s), ${mha.memoryBytes()} bytes of memory`);

const E = 8, H = 2, L = 3;
const ones = (n: number): Float32Array => new Float32Array(n).fill(0.1);

// PyTorch weights, saved to and read from .safetensors.
const layer: MultiHeadAttention = new mha.MultiHeadAttention({ embedDim: E, numHeads: H });
const shapes: Record<string, number[]> = layer.stateDictShapes();
const file: Uint8Array = writeSafetensors(
  Object.fromEntries(Object.entries(shapes).map(([name, shape]) => [name, { data: ones(shape.reduce((a, b) => a * b, 1)), shape }])),
  { metadata: { source: 'typed-usage' } });
const parsed: SafetensorsFile = readSafetensors(file);
console.log(Object.keys(parsed.tensors), parsed.metadata.source);
const stateDict: StateDict = stateDictFromSafetensors(file);
layer.loadStateDict(stateDict);

const query: Tensor = { data: ones(L * E), shape: [1, L, E] };
const mask: Tensor<Uint8Array> = { data: new Uint8Array(L), shape: [1, L] };
const result: ForwardResult = layer.forward(query, null, null, { keyPaddingMask: mask, causal: true, needWeights: true });
const weights: Tensor | null = result.weights;
if (weights) console.log(weights.shape);
layer.dispose();

// Keras and ONNX layouts.
const keras: KerasMultiHeadAttentionWeights = {
  'query/kernel': { data: ones(E * E), shape: [E, H, E / H] },
  'key/kernel': { data: ones(E * E), shape: [E, H, E / H] },
  'value/kernel': { data: ones(E * E), shape: [E, H, E / H] },
  'attention_output/kernel': { data: ones(E * E), shape: [H, E / H, E] },
};
const fromKeras: Record<string, Float32Array> = stateDictFromKeras(keras);
const fromOnnx = stateDictFromOnnxAttention({
  weight: { data: ones(3 * E * E), shape: [E, 3 * E] }, outputWeight: { data: ones(E * E), shape: [E, E] },
});

// `using` frees the layer at the end of the block ([Symbol.dispose]).
function run(sd: Record<string, Float32Array>): Float32Array {
  using scoped = new mha.MultiHeadAttention({ embedDim: E, numHeads: H, bias: false });
  return scoped.loadStateDict(sd).forward(query).output.data;
}
console.log(run(fromKeras)[0], run(fromOnnx)[0]);

// The layer class comes from init(): the package exports `MultiHeadAttention` as a type only, so
// `new MultiHeadAttention(...)` from the import is a compile error, not a runtime one (this
// function exists for the type check and is never called).
function notAConstructor(): void {
  // @ts-expect-error  'MultiHeadAttention' only refers to a type
  void new MultiHeadAttention({ embedDim: E, numHeads: H });
}
void notAConstructor;
const fromModule: MultiHeadAttention = new mha.MultiHeadAttention({ embedDim: E, numHeads: H });
fromModule.dispose();
