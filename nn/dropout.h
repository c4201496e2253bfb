#pragma once
// Dropout(p = 0.5): in training, zeroes each element with probability p and scales the rest by
// 1/(1-p); identity in eval. p in [0, 1] (check_dropout_p, autograd/ops/masking.h): p = 1 zeroes
// everything in training. Its random stream is a Generator of its own, seeded from the
// construction generator, so a model is reproducible from one seed and a checkpoint can save the
// stream's state (Module::named_generators()).
#include <optional>

#include "autograd/ops/masking.h"
#include "nn/unary_module.h"

namespace tapegrad::nn {

// Data-parallel training: while a BatchRowsScope is alive on this thread, every Dropout in
// training treats axis 0 of its input as rows [first, first + n) of a batch of `total` rows and
// draws through dropout's BatchRows overload, so each example's mask follows its index in the
// whole batch, not the process holding it: ranks that split a batch drop what one process
// training on the whole batch would. Axis 0 must be the batch axis (nn::transformer's layout);
// a Dropout input with fewer rows left than it holds throws ShapeError. Scopes nest.
class BatchRowsScope {
 public:
  explicit BatchRowsScope(BatchRows rows);
  ~BatchRowsScope();
  BatchRowsScope(const BatchRowsScope&) = delete;
  BatchRowsScope& operator=(const BatchRowsScope&) = delete;
  // The innermost scope's rows on this thread, if any.
  static const std::optional<BatchRows>& current();

 private:
  std::optional<BatchRows> previous_;
};

template <class T>
class Dropout : public UnaryModule<T> {
 public:
  explicit Dropout(Generator& gen, double p = 0.5);

  std::string type_name() const override { return "Dropout"; }
  Tensor<T> forward(const Tensor<T>& x) override;
  double p() const { return p_; }
  // Whether a forward changes its input (training with p > 0).
  bool active() const { return this->is_training() && p_ > 0; }

 private:
  double p_;
  Generator stream_;
};

extern template class Dropout<float>;
extern template class Dropout<double>;

}  // namespace tapegrad::nn
