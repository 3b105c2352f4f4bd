// A layer's config between JS and the core: the JS config read into mha::AttentionConfig, and
// the resolved config (and its state dict's shapes) written back as JS objects.
#pragma once

#include <emscripten/val.h>

#include "mha/plan/attention_config.hpp"

namespace mha_embind {

// The JS config after bindings/js/api/config-reader.js checked its types; absent keys take the
// core's defaults, and resolve() checks the values.
mha::AttentionConfig config_of(const emscripten::val& config);

// The resolved config as the JS layer's `config` shows it (the variants only where the layer has them).
emscripten::val config_object(const mha::ResolvedConfig& c);

// The state-dict keys a layer of config c takes, with their shapes: { key: [dims] }.
emscripten::val state_dict_shapes(const mha::ResolvedConfig& c);

}  // namespace mha_embind
