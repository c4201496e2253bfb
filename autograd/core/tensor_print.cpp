// operator<< for Tensor: a header line (what the tensor is) and xtensor's printing of the values.
#include <ostream>

#include <xtensor/xio.hpp>

#include "autograd/core/tensor.h"

namespace tapegrad {

template <class T>
std::ostream& operator<<(std::ostream& out, const Tensor<T>& tensor) {
  if (!tensor.defined()) return out << "tensor (undefined)";
  out << "tensor " << tensor.describe() << (std::is_same_v<T, float> ? " float32" : " float64");
  if (tensor.requires_grad()) out << " requires_grad" << (tensor.has_grad() ? " (has a gradient)" : "");
  if (const char* op = tensor.node()->op) out << ", made by " << op;
  return out << '\n' << tensor.value();
}

template std::ostream& operator<<(std::ostream&, const Tensor<float>&);
template std::ostream& operator<<(std::ostream&, const Tensor<double>&);

}  // namespace tapegrad
