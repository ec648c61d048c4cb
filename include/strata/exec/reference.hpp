// exec/reference: the single-process model as a function of a flat weight vector — loss and gradient of any set
// of samples — so that tests can apply an update rule (SGD, PipeDream weight stashing, 2BW) independently of the
// runtime's pipeline machinery and compare losses. Same layers, initialisation and data as the runtime.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "strata/exec/run.hpp"

namespace strata::exec {

class ReferenceModel {
 public:
  ReferenceModel(const GptDims& dims, std::uint64_t seed);
  ~ReferenceModel();
  ReferenceModel(const ReferenceModel&) = delete;
  ReferenceModel& operator=(const ReferenceModel&) = delete;

  // Initial weights, chain entries in order (embedding, blocks, head; the head's tied copy of the embedding is
  // stored separately, as in the runtime).
  std::vector<float> initial_weights() const;
  // Index of the first weight of each chain entry (size layers + 3; last = total).
  std::vector<std::int64_t> entry_offsets() const;
  // Sum of token cross-entropies of the given samples / normalizer at weights w, and its gradient. With tied
  // embeddings both copies get the sum of their gradients (they then stay equal under elementwise updates).
  double loss_and_grad(const std::vector<float>& w, const std::vector<std::int64_t>& sample_ids, double normalizer,
                       std::vector<float>& grad) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::exec
