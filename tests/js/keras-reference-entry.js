// The executable reference for KerasMultiHeadAttention: the TensorFlow team's port of Keras'
// MultiHeadAttention in @tensorflow/tfjs-layers (not in its public index, so bundled by
// keras.test.js with esbuild). @tensorflow/tfjs comes first so chained tensor ops are registered.
import * as tf from '@tensorflow/tfjs';
import { MultiHeadAttention } from '@tensorflow/tfjs-layers/dist/layers/nlp/multihead_attention.js';

export { MultiHeadAttention, tf };
