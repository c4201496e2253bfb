#pragma once
// SGD with momentum, dampening, Nesterov and L2 weight decay, as torch.optim.SGD:
//   g = grad + weight_decay * p
//   b = g (first step) or momentum * b + (1 - dampening) * g     (when momentum != 0)
//   g = g + momentum * b (nesterov) or b
//   p = p - lr * g
// Buffer: momentum_buffer.
#include "optim/optimizer.h"

namespace tapegrad::optim {

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

template <class T>
class SGD : public Optimizer<T> {
 public:
  SGD(NamedParameters<T> params, const SGDOptions& options = {});
  SGD(std::vector<ParamGroup<T>> groups, const SGDOptions& options = {});

 protected:
  void update(const ParamGroup<T>& group, Tensor<T>& param, const xt::xarray<T>& grad, std::size_t step,
              StateMap<T>& buffers) override;
  std::vector<std::string> buffer_names() const override;

 private:
  SGDOptions options_;
};

extern template class SGD<float>;
extern template class SGD<double>;

}  // namespace tapegrad::optim
