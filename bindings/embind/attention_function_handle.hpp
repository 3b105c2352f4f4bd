// The attention function (src/mha/function/attention_function.hpp) on tensors the JS wrapper
// (bindings/js/core/attention-function.js) checked and copied into the heap: plan() gives the
// result's shapes, run() writes into the outputs the wrapper then allocated. A request:
// { query, key, value, pastKey?, pastValue?, attnMask? (isBool: nonzero = attend), causalOffsets?,
// kvSeqLens?, sinks? ({ ptr, shape } each), numHeads, kvNumHeads, causal (0 none, 1 top-left,
// 2 bottom-right, 3 offset), scale?, softcap, dropout, seed, slidingWindow, alibiSlopes?,
// needWeights, capture }.
#pragma once

#include <emscripten/val.h>

#include <string>

#include "handle_errors.hpp"
#include "request_keys.hpp"

namespace mha_embind {

class AttentionFunctionHandle : public HandleErrors {
 public:
  // The last error's message, handed over: the handle lives as long as the module, and keeps no
  // message after the wrapper has read it.
  std::string takeError() {
    std::string message;
    message.swap(error_);
    return message;
  }

  // { output, presentKey, presentValue, weights, steps: shapes or null, capped: bool, sizes: { B,
  // Hq, Hkv, L, S, P, T, E, Ev, packed, batched } }, or null after an error.
  val plan(val request);

  // outputs: { output, presentKey, presentValue, weights, scores, capped, logits, pattern, lse }
  // addresses sized by plan() (0: not asked for).
  bool run(val request, val outputs);

  // The backward pass of a run() with lse, on the same request: buffers { output, lse, dOutput,
  // dQuery, dKey, dValue, dPastKey, dPastValue } (addresses; the pasts' 0 without a past).
  bool backward(val request, val buffers);

 private:
  RequestKeys keys_;
};

}  // namespace mha_embind
