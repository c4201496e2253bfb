#pragma once
// Sinusoidal positional encoding (the batch-first reference's PositionalEncoding, the reference Transformer's AddPositionalEncoding):
//   PE(pos, 2i) = sin(pos / 10000^(2i/d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).
// forward(x) for batch-first x [batch, seq, d_model] (or [seq, d_model]) returns x + PE[:seq].
// The table is fixed (not a parameter, not in the state dict); seq > max_len is a ShapeError.
#include "nn/unary_module.h"

namespace tapegrad::nn {

// The [max_len, d_model] table itself.
template <class T> xt::xarray<T> sinusoidal_table(std::size_t max_len, std::size_t d_model);

template <class T>
class PositionalEncoding : public UnaryModule<T> {
 public:
  explicit PositionalEncoding(std::size_t d_model, std::size_t max_len = 5000);

  std::string type_name() const override { return "PositionalEncoding"; }
  Tensor<T> forward(const Tensor<T>& x) override;
  const xt::xarray<T>& table() const { return table_.value(); }

 private:
  std::size_t d_model_, max_len_;
  Tensor<T> table_;
};

// The reference Transformer's name for the same module: AddPositionalEncoding(d_model, max_len).
template <class T> using AddPositionalEncoding = PositionalEncoding<T>;

extern template class PositionalEncoding<float>;
extern template class PositionalEncoding<double>;

}  // namespace tapegrad::nn
