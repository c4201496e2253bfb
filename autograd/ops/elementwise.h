#pragma once
// The arithmetic operators and cast. The ops the operators call (add, sub, mul, div with tensors,
// broadcasting as PyTorch/NumPy do; add, mul, rsub, rdiv with a scalar) and the unary math (exp,
// log, ...) are rows of the pointwise table (autograd/ops/pointwise.h). Scalars are plain T (not
// deduced, so `x * 2.0` works for float).
#include "autograd/source_location.h"
#include <type_traits>

#include "autograd/ops/pointwise.h"
#include "autograd/tensor.h"

namespace tapegrad {

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
