#include "nn/init.h"

#include <cmath>

#include "autograd/base/checks.h"

namespace tapegrad::nn::init {

template <class T>
std::pair<std::size_t, std::size_t> fans(const Tensor<T>& t) {
  const Shape shape = t.shape();
  if (shape.empty()) throw ValueError("init: fans are undefined for a 0-d tensor " + t.describe());
  if (shape.size() == 1) return {shape[0], shape[0]};
  std::size_t receptive = 1;
  for (std::size_t d = 2; d < shape.size(); ++d) receptive *= shape[d];
  return {shape[1] * receptive, shape[0] * receptive};
}

template <class T>
void uniform_(Tensor<T>& t, double low, double high, Generator& gen) {
  if (!(low < high) || !std::isfinite(low) || !std::isfinite(high)) {
    throw ValueError("init::uniform_: low must be below high and both finite, got [" + format_number(low) +
                     ", " + format_number(high) + ") for " + t.describe());
  }
  auto& v = t.mutable_value();
  gen.fill_uniform(v.data(), v.size(), static_cast<T>(low), static_cast<T>(high));
}

template <class T>
void normal_(Tensor<T>& t, double mean, double std, Generator& gen) {
  if (!std::isfinite(mean) || !std::isfinite(std) || std < 0.0) {
    throw ValueError("init::normal_: mean and std must be finite and std >= 0, got mean " +
                     format_number(mean) + ", std " + format_number(std) + " for " + t.describe());
  }
  auto& v = t.mutable_value();
  gen.fill_normal(v.data(), v.size(), static_cast<T>(mean), static_cast<T>(std));
}

template <class T>
void constant_(Tensor<T>& t, double value) {
  t.mutable_value().fill(static_cast<T>(value));
}

template <class T>
void kaiming_uniform_(Tensor<T>& t, Generator& gen, double a) {
  if (!std::isfinite(a))
    throw ValueError("init::kaiming_uniform_: a must be finite, got " + format_number(a) + " for " +
                     t.describe());
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double bound = gain * std::sqrt(3.0 / static_cast<double>(fans(t).first));
  uniform_(t, -bound, bound, gen);
}

template <class T>
void xavier_uniform_(Tensor<T>& t, Generator& gen, double gain) {
  if (!std::isfinite(gain) || gain < 0.0) {
    throw ValueError("init::xavier_uniform_: gain must be finite and >= 0, got " + format_number(gain) +
                     " for " + t.describe());
  }
  const auto [fan_in, fan_out] = fans(t);
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  uniform_(t, -bound, bound, gen);
}

#define TAPEGRAD_INSTANTIATE_INIT(T)                                              \
  template std::pair<std::size_t, std::size_t> fans(const Tensor<T>&);           \
  template void uniform_(Tensor<T>&, double, double, Generator&);                \
  template void normal_(Tensor<T>&, double, double, Generator&);                 \
  template void constant_(Tensor<T>&, double);                                    \
  template void kaiming_uniform_(Tensor<T>&, Generator&, double);                \
  template void xavier_uniform_(Tensor<T>&, Generator&, double);
TAPEGRAD_INSTANTIATE_INIT(float)
TAPEGRAD_INSTANTIATE_INIT(double)

}  // namespace tapegrad::nn::init
