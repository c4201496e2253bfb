#pragma once
// The Annotated Transformer's LabelSmoothing(size, padding_idx, smoothing = 0) loss: the KL
// divergence, summed, from log-probabilities x [N, size] to a smoothed one-hot of the targets:
//   true_dist[n][c] = 1 - smoothing               at c = target[n],
//                     smoothing / (size - 2)      elsewhere (the target and padding columns excluded),
//                     0                           in the padding column, and in every column of a
//                                                 row whose target is padding_idx.
// loss = kl_div(x, true_dist, Reduction::Sum); zero entries of true_dist add 0 whatever x is.
// size < 3 (size - 2 would be 0), padding_idx outside [0, size) or smoothing outside [0, 1] is a
// ValueError at construction; x not [N, size] or targets not [N] a ShapeError; a target outside
// [0, size) a ValueError. true_dist() is the last distribution built (the original's
// self.true_dist), for inspection.
#include "nn/module.h"

namespace tapegrad::nn {

template <class T>
class LabelSmoothing : public Module<T> {
 public:
  LabelSmoothing(std::size_t size, Index padding_idx, double smoothing = 0.0);

  std::string type_name() const override { return "LabelSmoothing"; }
  Tensor<T> forward(const Tensor<T>& x, const IndexArray& target);
  Tensor<T> operator()(const Tensor<T>& x, const IndexArray& target) { return forward(x, target); }
  const xt::xarray<T>& true_dist() const { return true_dist_; }

 private:
  std::size_t size_;
  Index padding_idx_;
  double smoothing_;
  xt::xarray<T> true_dist_;
};

extern template class LabelSmoothing<float>;
extern template class LabelSmoothing<double>;

}  // namespace tapegrad::nn
