// Scaled dot-product attention for one (batch, head) pair: softmax(scale * q k^T + mask) v.
#pragma once

#include <cstdint>

#include "score_epilogue.hpp"

namespace mha::kernels {

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
};

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
// with no repacking. Same contract.
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
