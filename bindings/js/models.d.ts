// Types of mha-wasm/models (bindings/js/models/index.js): a Hugging Face checkpoint as a library,
// with TransformerLens' hook points and the workflows of interpretability. docs/models.md.
import type { MhaModule, Tensor } from './index.js';
import type { WebGpuModule } from './webgpu/types.js';

/** A checkpoint file as loadModel takes it: named as Hugging Face writes it ("config.json", "model.safetensors", ...). */
export interface NamedBytes {
  /** The file's name; a folder part ("gpt2/config.json") is ignored. */
  name: string;
  /** The file's bytes. */
  bytes: Uint8Array | ArrayBuffer;
}

/** A checkpoint file by its path (Node only): read at offsets, a tensor at a time. */
export interface NamedPath {
  /** The file's name, as Hugging Face writes it. */
  name: string;
  /** Its path on disk. */
  path: string;
}

/** What loadModel reports while it works. */
export interface LoadProgress {
  /** 'weights': a weight file's header was read; 'estimate': the memory estimate passed (name: the weightDtype); 'layers': a layer was read and built. */
  phase: 'weights' | 'estimate' | 'layers';
  /** How many are done. */
  done: number;
  /** How many there are. */
  total: number;
  /** The file or layer just done. */
  name: string;
}

/** The precision every matrix of a model is held in: 'auto' takes the most precise, at most the stored one, that fits the wasm heap. */
export type ModelWeightDtype = 'f32' | 'f16' | 'int8' | 'q4' | 'auto';

/** loadModel's options. */
export interface LoadModelOptions {
  /** With a WebGPU `mha`: the wasm module (`await init()`), which runs the products outside the attention. */
  wasm?: MhaModule;
  /** Every matrix's precision (attention, MLPs, unembedding, embedding rows); default the stored one (F32 as f32, F16 / BF16 as f16). docs/quantized.md. */
  weightDtype?: ModelWeightDtype;
  /** The tokens the memory estimate sizes the KV caches for (default 2048, or the model's positions if fewer). */
  contextLength?: number;
  /** Called after each weight file's header, the estimate and each layer. */
  onProgress?: (progress: LoadProgress) => void | Promise<void>;
  /** Stops the load between layers (rejecting with an Error named 'AbortError'). */
  signal?: AbortSignal;
}

/** estimateModelMemory's options. */
export interface EstimateOptions {
  /** The module whose heap is asked (what it can still hold); without it, an empty 4 GiB heap. */
  wasm?: MhaModule;
  /** The precision to size (default the stored one); 'auto' reports the one loadModel would take. */
  weightDtype?: ModelWeightDtype;
  /** The tokens the KV caches are sized for (default 2048, or the model's positions if fewer). */
  contextLength?: number;
}

/** Bytes of wasm heap, by what holds them. */
export interface MemoryBytes {
  /** The matrices, packed in the weightDtype (panels padded to 32 columns, scales, biases). */
  weights: number;
  /** The KV caches for contextLength tokens (float32). */
  caches: number;
  /** The largest transient: loading the largest matrix, or a 128-row product, plus the runtime's share. */
  work: number;
  /** weights + caches + work. */
  total: number;
}

/** The total bytes at each precision. */
export interface MemoryByDtype {
  /** At float32. */
  f32: number;
  /** At float16. */
  f16: number;
  /** At int8 (a scale per row). */
  int8: number;
  /** At q4 (a scale per 32 weights). */
  q4: number;
}

/** What a checkpoint needs of the wasm heap, from its headers alone (docs/models.md#memory). */
export interface MemoryEstimate {
  /** The precision sized (the one 'auto' picked). */
  weightDtype: 'f32' | 'f16' | 'int8' | 'q4';
  /** The weights' stored dtype: 'F32', 'F16' or 'BF16'. */
  storedDtype: string;
  /** The elements of every tensor. */
  parameters: number;
  /** The tokens the caches are sized for. */
  contextLength: number;
  /** Bytes: the packed matrices, the KV caches, the largest transient work, and their sum. */
  bytes: MemoryBytes;
  /** Bytes the heap can still give. */
  available: number;
  /** Whether `bytes.total` fits `available`. */
  fits: boolean;
  /** The total at every precision. */
  byDtype: MemoryByDtype;
}

/** A model's hyperparameters, as config.json gives them. */
export interface ModelConfig {
  /** The family: 'gpt2', 'llama' (Llama, Mistral, Qwen2), 'gpt_neox' (Pythia), 'gemma', 'gemma2', 'phi3'; the encoders 'bert', 'roberta', 'distilbert'; 'attn-only' for the demo page's default model. */
  readonly family: 'gpt2' | 'llama' | 'gpt_neox' | 'gemma' | 'gemma2' | 'phi3' | 'bert' | 'roberta' | 'distilbert' | 'attn-only';
  /** config.json's model_type. */
  readonly modelType: string;
  /** Transformer blocks. */
  readonly numLayers: number;
  /** The residual stream's width (d_model). */
  readonly embedDim: number;
  /** Query heads. */
  readonly numHeads: number;
  /** Key/value heads (fewer than numHeads with grouped-query attention). */
  readonly numKvHeads: number;
  /** Each head's size (d_head). */
  readonly headDim: number;
  /** Tokens in the vocabulary. */
  readonly vocabSize: number;
  /** The most tokens one run takes. */
  readonly maxPositions: number;
  /** The MLP's hidden width (d_mlp). */
  readonly hiddenDim: number;
  /** The norm the blocks use ('none': attention-only). */
  readonly normalization: 'layernorm' | 'rmsnorm' | 'none';
  /** Encoders only: true (bidirectional attention, padding masks, post-LN blocks). */
  readonly encoder?: true;
  /** Encoders only: whether the checkpoint has the masked-LM head (without it forward gives the last hidden state). */
  readonly mlmHead?: boolean;
  /** Encoders only: the token types the embeddings know. */
  readonly typeVocabSize?: number;
}

/** An encoder's inputs beside the ids (a decoder refuses them by name). */
export interface EncoderInputs {
  /** Hugging Face's attention mask: 1 for a token, 0 for padding (one per id). */
  attentionMask?: ArrayLike<number>;
  /** The token type of each id (BERT's segment A = 0, B = 1). */
  tokenTypeIds?: ArrayLike<number>;
}

/** A checkpoint's tokenizer.json, with TransformerLens' BOS handling. */
export interface ModelTokenizer {
  /** TransformerLens' default_prepend_bos for this model type (false for Qwen, GPT-NeoX, Phi, Bloom). */
  readonly prependBos: boolean;
  /** The BOS token (config.json's bos_token_id, else its eos_token_id), or null. */
  readonly bosTokenId: number | null;
  /** config.json's eos_token_id, or null. */
  readonly eosTokenId: number | null;
  /** An encoder's [MASK] (or <mask>) token, else null. */
  readonly maskTokenId?: number | null;
  /** The ids of `text`: a decoder's with the BOS token first when `prependBos` (default: {@link ModelTokenizer.prependBos}); an encoder's as [CLS] … [SEP] unless `addSpecialTokens: false`. */
  encode(text: string, options?: { prependBos?: boolean; addSpecialTokens?: boolean }): number[];
  /** Each id's text on its own (TransformerLens' to_str_tokens). */
  toStrTokens(ids: ArrayLike<number>): string[];
  /** The text of `ids`; skipSpecial leaves out special tokens. */
  decode(ids: ArrayLike<number>, options?: { skipSpecial?: boolean }): string;
}

/** A hook: gets a copy of the activation; returns a replacement of the same shape, or nothing (editing the copy in place also replaces). */
export type Hook = (activation: Tensor, point: { name: string }) => Tensor | void | undefined | Promise<Tensor | void | undefined>;

/** Which activations runWithCache keeps: names, one name, or a predicate of a name. */
export type HookNames = string[] | string | ((name: string) => boolean);

/** Activations recorded by one run, by hook name. */
export interface ActivationCache {
  /** The token ids of the run. */
  readonly ids: Int32Array;
  /** The names held, in forward order. */
  readonly names: string[];
  /** Whether `name` is held. */
  has(name: string): boolean;
  /** The activation at `name` (a TypeError when not held). */
  get(name: string): Tensor;
}

/** What forward resolves to. */
export interface ModelOutput {
  /** [1, pos, vocab]; null for an encoder without its masked-LM head. */
  logits: Tensor | null;
  /** An encoder without its masked-LM head: the last hidden state [1, pos, embedDim]. */
  lastHiddenState?: Tensor;
}

/** What runWithCache resolves to. */
export interface CachedOutput {
  /** [1, pos, vocab]; null for an encoder without its masked-LM head. */
  logits: Tensor | null;
  /** An encoder without its masked-LM head: the last hidden state [1, pos, embedDim]. */
  lastHiddenState?: Tensor;
  /** The activations kept. */
  cache: ActivationCache;
}

/** What runWithHooks resolves to. */
export interface HookedOutput {
  /** [1, pos, vocab]; null for an encoder without its masked-LM head. */
  logits: Tensor | null;
  /** An encoder without its masked-LM head: the last hidden state [1, pos, embedDim]. */
  lastHiddenState?: Tensor;
  /** The activations kept, when `names` was given. */
  cache?: ActivationCache;
}

/** What generate resolves to. */
export interface GenerateResult {
  /** The new token ids. */
  ids: number[];
  /** Their text. */
  text: string;
}

/** A loaded checkpoint: forward passes with hook points, and greedy generation. */
export interface HookedModel {
  /** The hyperparameters. */
  readonly config: ModelConfig;
  /** The checkpoint's tokenizer. */
  readonly tokenizer: ModelTokenizer;
  /** Every hook point's name, in forward order ('hook_embed', 'blocks.0.hook_resid_pre', ...). */
  readonly hookNames: string[];
  /** A hook point's shape for a run of `L` tokens. */
  hookShape(name: string, L: number): number[];
  /** The logits of one sequence, shape [1, pos, vocab]. */
  forward(ids: ArrayLike<number>, options?: EncoderInputs): Promise<ModelOutput>;
  /** The logits and the activations at `names` (all hook points when left out). */
  runWithCache(ids: ArrayLike<number>, options?: { names?: HookNames } & EncoderInputs): Promise<CachedOutput>;
  /** The logits with `hooks` run at their points (and a cache of `names` when given). */
  runWithHooks(ids: ArrayLike<number>, options?: { hooks?: Record<string, Hook>; names?: HookNames | null } & EncoderInputs): Promise<HookedOutput>;
  /** Greedy decoding through every layer's KV cache; `onToken` returning false stops. */
  generate(ids: ArrayLike<number>, options?: {
    maxNewTokens?: number;
    onToken?: (id: number, token: { index: number; text: string }) => boolean | void | Promise<boolean | void>;
    stopAtEos?: boolean;
    signal?: AbortSignal;
  }): Promise<GenerateResult>;
  /** Frees the model's wasm (and GPU) memory. */
  dispose(): void;
}

/** Loads a Hugging Face checkpoint's files (config.json, the weights, tokenizer.json). */
export declare function loadModel(mha: MhaModule | WebGpuModule, files: Array<File | Blob | NamedBytes | NamedPath>, options?: LoadModelOptions): Promise<HookedModel>;

/** What loading `files` would need of the wasm heap, from the JSON files and the weights' headers (no weight is read). */
export declare function estimateModelMemory(files: Array<File | Blob | NamedBytes | NamedPath>, options?: EstimateOptions): Promise<MemoryEstimate>;

/** loadModel on a checkpoint folder's files, by its path (Node only). */
export declare function loadModelFromFolder(mha: MhaModule | WebGpuModule, path: string, options?: LoadModelOptions): Promise<HookedModel>;

/** The sweeps of activationPatching: by layer and position, or by layer and head (at every position, or by position). */
export type PatchingSweep = 'resid_pre' | 'attn_out' | 'mlp_out' | 'head_out' | 'head_out_by_pos';

/** activationPatching's options. */
export interface ActivationPatchingOptions {
  /** The clean run's token ids. */
  clean: ArrayLike<number>;
  /** The corrupted run's token ids (as many as clean). */
  corrupted: ArrayLike<number>;
  /** The answer token of the default metric. */
  answer?: number;
  /** The wrong token of the default metric. */
  wrong?: number;
  /** What is patched, slice by slice. */
  over: PatchingSweep;
  /** Another metric of the patched logits ([1, pos, vocab]); its values are returned as they are. */
  metric?: (logits: Tensor) => number | Promise<number>;
  /** Called after each patched run. */
  onProgress?: (done: number, total: number) => void;
  /** Stops the sweep (rejecting with an Error named 'AbortError'). */
  signal?: AbortSignal;
}

/** Activation patching from the clean run into the corrupted one: [layers, positions], [layers, heads] or [layers, positions, heads]. */
export declare function activationPatching(model: HookedModel, options: ActivationPatchingOptions): Promise<Tensor>;

/** Each head's and each MLP's direct effect on the answer − wrong logit difference, and the accumulated residual. */
export declare function directLogitAttribution(model: HookedModel, cache: ActivationCache, options: { answer: number; wrong: number; position?: number }): {
  /** [layers, heads]. */
  heads: Tensor;
  /** [layers]. */
  mlps: Tensor;
  /** [layers + 1]: each layer's resid_pre, then the final residual. */
  accumulated: Tensor;
};

/** The kinds of head headScores detects. */
export type HeadScoreKind = 'previous_token' | 'duplicate_token' | 'induction';

/** TransformerLens' detect_head scores of every head on the cache's run: [layers, heads]. */
export declare function headScores(model: HookedModel, cache: ActivationCache, kind: HeadScoreKind): Tensor;
