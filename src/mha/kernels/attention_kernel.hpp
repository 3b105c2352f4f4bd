// Scaled dot-product attention for one (batch, head) pair: softmax(scale * q k^T + mask) v.
#pragma once

#include <cstdint>

#include "score_epilogue.hpp"

namespace mha::kernels {

// Attention dropout (training only): probability p of zeroing a probability, the kept ones
// scaled by 1 / (1 - p). Whether key j is kept for query row i comes from a counter-based
// generator (dropout.hpp: Philox) keyed by (seed, stream, i, j), so the backward pass
// regenerates the same mask and no L x S mask is ever stored. stream = batch row * H + head.
struct DropoutArgs {
  float p = 0.0f;  // 0: off
  uint64_t seed = 0;
  uint64_t stream = 0;
  bool active() const { return p > 0.0f; }
};

struct AttentionHeadArgs {
  const float* q;  // [L, Dh], row stride q_stride
  const float* k;  // [S, Dh], row stride k_stride
  const float* v;  // [S, Dv], row stride v_stride
  float* out;      // [L, Dv], row stride out_stride
  int64_t q_stride, k_stride, v_stride, out_stride;
  int64_t query_len, key_len, head_dim;
  int64_t value_head_dim = 0;  // Dv; 0 means head_dim
  float scale;
  bool causal;             // key j is blocked for query i when j > first_query + i
  ScoreEpilogue epilogue;  // window, softcap, ALiBi, sink (its `causal` is set from the field above)
  const float* key_bias;   // [S] added to every row's scores, or null
  const float* attn_bias;  // [L, S] added to the scores (row stride key_len), or null
  // Optional probabilities [L, S] (row stride key_len): weights += weights_factor * p.
  // The caller zeroes the buffer; factor 1 gives per-head weights, 1/H an average over heads.
  float* weights;
  float weights_factor;
  // Position of row 0 among the head's queries, so a block of rows can run alone (threads split
  // long heads) and a KV cache's new queries sit after the cached keys: causal masking, the
  // window and ALiBi use position first_query + i. q, out, attn_bias and weights point at
  // the block's first row.
  int64_t first_query = 0;
  // Optional scratch (the layer reuses one per thread); null: the kernel allocates its own. The
  // flash kernel's packed keys and values take attention_scratch_floats(args) floats, the decode
  // kernel's scores attention_decode_scratch_floats(args, count) (in heads[0] of the group).
  float* scratch = nullptr;
  // Training. lse: optional [L] output, row i's log-sum-exp of its final scores (the sink
  // included), -inf for a row with every key blocked: what the backward pass needs to recompute
  // the probabilities. dropout: applied to the probabilities after the softmax's sum (the
  // weights returned are after dropout, as PyTorch's); query row i is row first_query + i.
  float* lse = nullptr;
  DropoutArgs dropout;
  bool weights_before_dropout = false;  // weights without dropout's mask (Keras' scores)
};

// The backward pass of one head over a range of its keys (FlashAttention-2's backward):
// recomputes each probability from q, k and lse, then
//   dV[j] += sum_i P~[i][j] dO[i]             (P~: after dropout)
//   dP[i][j] = dO[i] . V[j]  (times the dropout factor of (i, j))
//   dS[i][j] = P[i][j] (dP[i][j] - D[i]),  D[i] = dO[i] . O[i]
//   through the score step (score_epilogue.hpp: softcap's derivative; ALiBi and masks add constants)
//   dQ[i] += scale * sum_j dS[i][j] K[j],   dK[j] += scale * sum_i dS[i][j] Q[i]
//   d_sink += -sum_i P_sink[i] D[i]
// Only keys key_begin .. key_end-1 are visited, so threads can split a head's keys; dQ, dK, dV
// and d_sink are accumulated (+=): the caller zeroes them and may add several heads (a GQA
// group) into one dK / dV. Calls on pieces of one head's keys all add to dQ (threads need their
// own dQ, summed afterwards); the sink's gradient is added by the piece with key_begin = 0 only. A blocked (i, j) contributes nothing and its k or v is never read
// (NaN there reaches no gradient); a row with every key blocked (lse = -inf) gives zero
// gradients.
struct AttentionBackwardArgs {
  AttentionHeadArgs forward;  // the forward call's args: q, k, v, sizes, scale, causal, epilogue,
                              // masks, first_query, dropout; `out` = O, the forward's output rows
                              // (out_stride); weights, lse and scratch are not read
  const float* lse;           // [L] from the forward call
  const float* d_out;         // dO [L, Dv], row stride d_out_stride
  float* d_q;                 // [L, Dh] +=, row stride d_q_stride
  float* d_k;                 // [S, Dh] +=, row stride d_k_stride (rows key_begin.. are written)
  float* d_v;                 // [S, Dv] +=, row stride d_v_stride
  int64_t d_out_stride, d_q_stride, d_k_stride, d_v_stride;
  float* d_sink = nullptr;    // += this head's sink gradient (with a sink, when key_begin = 0)
  int64_t key_begin = 0, key_end = -1;  // -1: key_len
  // Optional scratch of attention_backward_scratch_floats(args) floats; null: the kernel allocates.
  float* scratch = nullptr;
};

// Floats of scratch attention_head_backward needs for these args: O((L + block) * head sizes)
// (the queries packed once per call, one key block at a time). L = S = 2048, Dh = Dv = 64: 2.8 MB
// (wasm), 3.1 MB (AVX-512).
int64_t attention_backward_scratch_floats(const AttentionBackwardArgs& args);

// The contract stated plainly (attention_backward_reference.cpp): one row at a time.
void attention_head_backward_reference(const AttentionBackwardArgs& args);

// The fast kernel (attention_backward_flash.cpp): key blocks outer, query blocks inner, SIMD tiles.
void attention_head_backward_flash(const AttentionBackwardArgs& args);

// The fastest backward kernel this build has (attention_head_backward_flash).
void attention_head_backward(const AttentionBackwardArgs& args);

// Query rows the flash kernel takes together. Callers that split a head's rows between threads
// split at multiples of it, so every row meets the same neighbours (and rounding) at any thread count.
int64_t attention_query_block();

// Floats of scratch attention_head needs for these args: O(key_len * (head_dim + value_head_dim)).
int64_t attention_scratch_floats(const AttentionHeadArgs& args);

// Floats of scratch attention_heads_decode needs for a group of `count` heads: a row of scores
// per head, count * key_len (a 7-head group at 4096 keys: 112 KiB, against 2 MiB packed).
int64_t attention_decode_scratch_floats(const AttentionHeadArgs& args, int64_t count);

// Keys whose mask bias is -inf cannot influence the output, so NaN or Inf in their k or v
// cannot reach it: the reference never reads them; the flash kernel copies them into its
// packed tiles but gives them a -inf score whatever the dot product and never multiplies their
// v into a row that blocks them. A query row with every key blocked gives zeros; NaN scores
// of unblocked keys make the row NaN (they are not "blocked").
void attention_head_reference(const AttentionHeadArgs& args);

// Flash-attention style kernel (attention_flash.cpp): same contract, memory O((L + S) * Dh).
void attention_head_flash(const AttentionHeadArgs& args);

// For a few query rows (decoding, attention_decode.cpp): reads the keys and values in place,
// with no repacking. Same contract, except training's: lse and dropout are not supported (they
// are ignored); the layer sends training calls to attention_head_flash whatever their rows.
void attention_head_decode(const AttentionHeadArgs& args);

// The same for `count` heads that share their keys and values (a GQA group), which are read
// once for all of them. heads[0] gives what they share: k, v, their strides and sizes, rows,
// positions, causal, window and key_bias; each head has its own q, out, weights, attn_bias,
// softcap, ALiBi slope and sink.
void attention_heads_decode(const AttentionHeadArgs* heads, int64_t count);

// Calls with fewer query rows than this run attention_head_decode (a micro-tile of the flash
// kernel; decided per call, not per thread's chunk, so results do not depend on the threads).
int64_t decode_query_rows();

// The fastest kernel this build has for a head's queries in blocks (attention_head_flash).
void attention_head(const AttentionHeadArgs& args);

}  // namespace mha::kernels
