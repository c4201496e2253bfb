#pragma once
// The arithmetic operators and cast. The ops the operators call (add, sub, mul, div with tensors,
// broadcasting as PyTorch/NumPy do; add, mul, rsub, rdiv with a scalar) and the unary math (exp,
// log, ...) are rows of the pointwise table (autograd/ops/pointwise.h). Scalars are plain T (not
// deduced, so `x * 2.0` works for float).
#include "autograd/base/source_location.h"
#include <type_traits>

#include "autograd/ops/pointwise.h"
#include "autograd/core/tensor.h"

namespace tapegrad {

// How div(a, b, mode) rounds the quotient, as PyTorch's rounding_mode: none is true division (the
// default, PyTorch's None), trunc rounds toward zero, floor toward -inf (Python's //). Rounded
// quotients have a zero gradient, as in PyTorch. a and b broadcast, as div's.
enum class RoundingMode { none, trunc, floor };
template <class T> Tensor<T> div(const Tensor<T>& a, const Tensor<T>& b, RoundingMode mode,
                                 CallSite where = std::source_location::current()) {
  switch (mode) {
    case RoundingMode::trunc: return div_trunc(a, b, where);
    case RoundingMode::floor: return div_floor(a, b, where);
    case RoundingMode::none: break;
  }
  return div(a, b, where);
}

// s^x elementwise for a scalar base s (torch.pow(s, x)): the rpow row of the pointwise table.
template <class T> Tensor<T> pow(Scalar<T> s, const Tensor<T>& x, CallSite where = std::source_location::current()) {
  return rpow(x, s, where);
}

// Differentiable element-type conversion (what Tensor<T>::to<U>() calls).
template <class To, class From> Tensor<To> cast(const Tensor<From>& a,
    CallSite where = std::source_location::current());

// An operator cannot take a defaulted extra parameter, so operators learn their call site from the
// conversion of one operand: a converting constructor's default argument is evaluated where the
// conversion happens, i.e. where the operator is used. TensorAt/ScalarAt are not deduced
// (type_identity_t), so T still comes from the plain Tensor operand.
namespace detail {
template <class T> struct TensorAt {
  TensorAt(const Tensor<T>& tensor, CallSite where = std::source_location::current())
      : tensor(tensor), where(where) {}
  const Tensor<T>& tensor;
  std::source_location where;
};
template <class T> struct ScalarAt {
  ScalarAt(T value, CallSite where = std::source_location::current()) : value(value), where(where) {}
  T value;
  std::source_location where;
};
}  // namespace detail
template <class T> using TensorAt = std::type_identity_t<detail::TensorAt<T>>;
template <class T> using ScalarAt = std::type_identity_t<detail::ScalarAt<T>>;

template <class T> Tensor<T> operator+(const Tensor<T>& a, TensorAt<T> b) { return add(a, b.tensor, b.where); }
template <class T> Tensor<T> operator-(const Tensor<T>& a, TensorAt<T> b) { return sub(a, b.tensor, b.where); }
template <class T> Tensor<T> operator*(const Tensor<T>& a, TensorAt<T> b) { return mul(a, b.tensor, b.where); }
template <class T> Tensor<T> operator/(const Tensor<T>& a, TensorAt<T> b) { return div(a, b.tensor, b.where); }
// Unary minus has no other operand to deduce T from: one overload per element type.
inline Tensor<float> operator-(detail::TensorAt<float> a) { return neg(a.tensor, a.where); }
inline Tensor<double> operator-(detail::TensorAt<double> a) { return neg(a.tensor, a.where); }
template <class T> Tensor<T> operator+(const Tensor<T>& a, ScalarAt<T> s) { return add(a, s.value, s.where); }
template <class T> Tensor<T> operator+(ScalarAt<T> s, const Tensor<T>& a) { return add(a, s.value, s.where); }
template <class T> Tensor<T> operator-(const Tensor<T>& a, ScalarAt<T> s) { return add(a, -s.value, s.where); }
template <class T> Tensor<T> operator-(ScalarAt<T> s, const Tensor<T>& a) { return rsub(a, s.value, s.where); }
template <class T> Tensor<T> operator*(const Tensor<T>& a, ScalarAt<T> s) { return mul(a, s.value, s.where); }
template <class T> Tensor<T> operator*(ScalarAt<T> s, const Tensor<T>& a) { return mul(a, s.value, s.where); }
template <class T> Tensor<T> operator/(const Tensor<T>& a, ScalarAt<T> s) { return mul(a, T(1) / s.value, s.where); }
template <class T> Tensor<T> operator/(ScalarAt<T> s, const Tensor<T>& a) { return rdiv(a, s.value, s.where); }

}  // namespace tapegrad
