// Types of the formats room (bindings/js/formats/): .safetensors files, ONNX models, and state
// dicts from Keras' and onnxruntime's weights. index.d.ts re-exports them all.
import type { AttentionConfig, Dtype, QuantizedTensor, Tensor } from '../core/types.js';

/** The element types of the .safetensors format. */
export type SafetensorsDtype =
  | 'BOOL' | 'U8' | 'I8' | 'F8_E4M3' | 'F8_E5M2' | 'I16' | 'U16' | 'F16' | 'BF16'
  | 'I32' | 'U32' | 'F32' | 'I64' | 'U64' | 'F64';

/**
 * The typed array a dtype is held in: F32 Float32Array, F64 Float64Array, I8 Int8Array,
 * U8/BOOL/F8_* Uint8Array, I16 Int16Array, U16 Uint16Array, F16/BF16 Uint16Array (raw bit patterns),
 * I32 Int32Array, U32 Uint32Array, I64 BigInt64Array, U64 BigUint64Array.
 */
export type SafetensorsData =
  | Float32Array | Float64Array | Int8Array | Uint8Array | Int16Array | Uint16Array
  | Int32Array | Uint32Array | BigInt64Array | BigUint64Array;

/** One tensor read from a .safetensors file. `data` is a fresh copy the caller owns. */
export interface SafetensorsTensor {
  /** The stored element type. */
  dtype: SafetensorsDtype;
  /** Dimensions, outermost first (row-major). `[]` is a scalar. */
  shape: number[];
  /** The elements, in the typed array of `dtype` (see {@link SafetensorsData}). */
  data: SafetensorsData;
}

/** The contents of a .safetensors file. */
export interface SafetensorsFile {
  /** Tensors by name, in header order. */
  tensors: Record<string, SafetensorsTensor>;
  /** The header's `__metadata__` (string to string); `{}` when absent. */
  metadata: Record<string, string>;
}

/**
 * Parses a .safetensors file (8-byte little-endian header length, JSON header, raw data).
 * Strict, like the reference implementation: known dtypes, sizes matching dtype and shape,
 * data_offsets in range, tensors tiling the data with no overlap, gap or trailing bytes.
 * @throws {TypeError} for a malformed header (not JSON, unknown dtype, missing field), naming the tensor.
 * @throws {RangeError} for bad lengths, offsets or sizes, naming the tensor.
 */
export declare function readSafetensors(bytes: Uint8Array | ArrayBuffer): SafetensorsFile;

/** Options of {@link stateDictFromSafetensors}. */
export interface StateDictFromSafetensorsOptions {
  /**
   * Keep only tensors whose name starts with this, and strip it from the keys,
   * e.g. `'encoder.layers.0.self_attn.'` to take one layer out of a whole model.
   */
  prefix?: string;
  /**
   * The layer's dtype (default 'float32'): 'float64' gives Float64Arrays for a float64 layer
   * (F64 tensors as stored, the others widened).
   */
  dtype?: Dtype;
}

/**
 * A state dict for {@link MultiHeadAttention.loadStateDict} from a .safetensors file:
 * F32 tensors as stored, F16, BF16 and F64 converted to Float32Array.
 * @throws {TypeError} for a non-float tensor, or when no name starts with `prefix`; and as {@link readSafetensors}.
 */
export declare function stateDictFromSafetensors(
  bytes: Uint8Array | ArrayBuffer, options: StateDictFromSafetensorsOptions & { dtype: 'float64' }): Record<string, Float64Array>;
/** {@link stateDictFromSafetensors} for a float32 layer (see the overload above). */
export declare function stateDictFromSafetensors(
  bytes: Uint8Array | ArrayBuffer, options?: StateDictFromSafetensorsOptions): Record<string, Float32Array>;

/** A tensor to write. */
export interface SafetensorsInput {
  /** The elements; with dtype 'F16' or 'BF16' a Float32Array is rounded (to nearest, ties to even). */
  data: SafetensorsData;
  /** Dimensions; their product must equal `data.length`. */
  shape: number[];
  /** Default: from the array type (Float32Array F32, ...). Required for Uint16Array (F16, BF16 or U16). */
  dtype?: SafetensorsDtype;
}

/** Options of {@link writeSafetensors}. */
export interface WriteSafetensorsOptions {
  /** Stored as the header's `__metadata__`. */
  metadata?: Record<string, string>;
}

/**
 * Serializes tensors to .safetensors bytes (header padded to 8 bytes, data in the given order).
 * Pair with {@link MultiHeadAttention.stateDictShapes} to save a layer's weights.
 * @throws {TypeError | RangeError} naming the tensor for a bad dtype, array type or shape.
 */
export declare function writeSafetensors(
  tensors: Record<string, SafetensorsInput> | Map<string, SafetensorsInput>,
  options?: WriteSafetensorsOptions): Uint8Array;

/** A Keras MultiHeadAttention layer's weights by name, each a row-major { data, shape } tensor. */
export interface KerasMultiHeadAttentionWeights {
  /** [E, H, key_dim] */
  'query/kernel': Tensor;
  /** [H, key_dim] (absent with use_bias=False) */
  'query/bias'?: Tensor;
  /** [kdim, H, key_dim] */
  'key/kernel': Tensor;
  /** [H, key_dim] */
  'key/bias'?: Tensor;
  /** [vdim, H, value_dim] */
  'value/kernel': Tensor;
  /** [H, value_dim] */
  'value/bias'?: Tensor;
  /** [H, value_dim, E] */
  'attention_output/kernel': Tensor;
  /** [E] */
  'attention_output/bias'?: Tensor;
}

/**
 * A Keras `MultiHeadAttention` layer's weights -> a PyTorch state dict for loadStateDict.
 * Pass an object keyed by Keras weight names, or the `layer.get_weights()` list in its order
 * (query kernel, query bias, key kernel, key bias, value kernel, value bias, output kernel, output bias;
 * the 4 kernels alone with use_bias=False). Any key_dim / value_dim / output size: load it into
 * `new MultiHeadAttention(stateDict.config)` (a non-enumerable property: the config it needs).
 * @throws {RangeError} naming the weight and its expected shape; {TypeError} for unknown names or partial biases.
 */
export declare function stateDictFromKeras(
  weights: KerasMultiHeadAttentionWeights | Tensor[]): KerasStateDict;

/** {@link stateDictFromKeras}'s result: a state dict carrying the config to load it into. */
export type KerasStateDict = Record<string, Float32Array> & {
  /** The layer config the state dict fits (non-enumerable): `new mha.MultiHeadAttention(sd.config)`. */
  readonly config: AttentionConfig;
};

/** The initializers around onnxruntime's fused `Attention` op (com.microsoft). */
export interface OnnxAttentionWeights {
  /** The op's `weights` input, [E, 3E], input-major; columns hold Q, K, V in that order. */
  weight: Tensor;
  /** The op's `bias` input, [3E]. */
  bias?: Tensor;
  /** The output projection, the `B` of the MatMul after the op: [E, E], input-major. */
  outputWeight: Tensor;
  /** The Add after that MatMul: [E]. */
  outputBias?: Tensor;
}

/**
 * onnxruntime's fused [E, 3E] Attention weights (plus the output MatMul) -> a PyTorch state dict.
 * Load it into `{ embedDim: E, numHeads: num_heads }` (with `bias: false` when there are no biases).
 * @throws {RangeError} naming the weight and its expected shape; {TypeError} for unknown names or one bias only.
 */
export declare function stateDictFromOnnxAttention(weights: OnnxAttentionWeights): Record<string, Float32Array>;

/** One linear layer of an ONNX model with quantized weights, as {@link MultiHeadAttention.loadQuantized} takes it. */
export interface OnnxLinear extends QuantizedTensor {
  /** 'q4' from MatMulNBits, 'int8' from the int8 forms. */
  dtype: 'int8' | 'q4';
  /** [out, in]. */
  shape: number[];
  /** One per output feature (int8) or per block of 32 (q4), float32. */
  scales: Float32Array;
  /** The op it came from: 'MatMulNBits', 'MatMul' (after DequantizeLinear), 'MatMulInteger', 'DynamicQuantizeMatMul', 'MatMulIntegerToFloat'. */
  op: string;
  /** The node's name (may be empty). */
  node: string;
  /** The name of the layer's output (the product, before any bias Add). */
  output: string;
  /** The weight initializer's name. */
  weight: string;
}

/** What {@link readOnnx} finds in an ONNX model. */
export interface OnnxModel {
  /** The linear layers with quantized constant weights, by node name, output name and weight name. */
  linears: Map<string, OnnxLinear>;
  /** The linear layer named `name` (its node's, its output's or its weight's name). @throws {TypeError} listing the names found. */
  linear(name: string): OnnxLinear;
  /** A float initializer (float32, float16 or double) as a Float32Array, e.g. a bias. */
  floats(name: string): Float32Array;
}

/**
 * The quantized linear layers of an ONNX model (transformers.js' q4 / q8 / int8 exports,
 * onnxruntime's quantizers): com.microsoft MatMulNBits with bits 4 and block_size 32 (zero points
 * kept), and int8 weights of DequantizeLinear -> MatMul, MatMulInteger -> Cast -> Mul
 * (quantize_dynamic), DynamicQuantizeMatMul and MatMulIntegerToFloat, with one scale per output
 * feature or one in all and q - zeroPoint within int8. Copies the bytes as they are.
 * @throws {TypeError | RangeError} for a file it cannot read, external data, or weights the
 *   formats cannot hold exactly (other block sizes or bit widths, asymmetric int8 beyond int8's range).
 */
export declare function readOnnx(bytes: Uint8Array | ArrayBuffer): OnnxModel;
