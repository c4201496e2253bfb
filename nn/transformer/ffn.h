#pragma once
// The reference Transformer's position-wise FFN(d_model, d_ff): x [batch, seq, d_model] ->
//   linear2(relu(linear1(x)))   linear1: d_model -> d_ff, linear2: d_ff -> d_model.
#include <memory>

#include "nn/linear.h"
#include "nn/unary_module.h"

namespace tapegrad::nn::transformer {

template <class T>
class FFN : public UnaryModule<T> {
 public:
  FFN(std::size_t d_model, std::size_t d_ff, Generator& gen);

  std::string type_name() const override { return "FFN"; }
  Tensor<T> forward(const Tensor<T>& x) override;

  const Linear<T>& linear1() const { return *linear1_; }
  const Linear<T>& linear2() const { return *linear2_; }

 private:
  std::shared_ptr<Linear<T>> linear1_, linear2_;
};

extern template class FFN<float>;
extern template class FFN<double>;

}  // namespace tapegrad::nn::transformer
