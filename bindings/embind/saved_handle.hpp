// What a forward pass with grad kept for its backward pass, as JS holds it (made by a layer
// handle's forwardForTraining; the JS wrapper deletes it after backward or on release()).
#pragma once

#include <memory>

#include "mha/float64/float64_attention.hpp"
#include "mha/layer/saved_forward.hpp"

namespace mha_embind {

template <typename Saved>
class SavedHandle {
 public:
  explicit SavedHandle(std::unique_ptr<Saved> saved) : saved_(std::move(saved)) {}
  const Saved& saved() const { return *saved_; }

 private:
  std::unique_ptr<Saved> saved_;
};

using SavedForwardHandle = SavedHandle<mha::SavedForward>;
using Float64SavedHandle = SavedHandle<mha::Float64SavedForward>;

}  // namespace mha_embind
