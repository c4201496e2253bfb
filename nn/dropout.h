#pragma once
// Dropout(p = 0.5): in training, zeroes each element with probability p and scales the rest by
// 1/(1-p); identity in eval. p in [0, 1] (check_dropout_p, autograd/ops/masking.h): p = 1 zeroes
// everything in training. Its random stream is a Generator of its own, seeded from the
// construction generator, so a model is reproducible from one seed and a checkpoint can save the
// stream's state (Module::named_generators()).
#include "nn/unary_module.h"

namespace tapegrad::nn {

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
