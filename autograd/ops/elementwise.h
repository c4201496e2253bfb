#pragma once
// Elementwise arithmetic and math. Binary ops broadcast as PyTorch/NumPy do (shapes aligned from
// the right; an axis of size 1 stretches); their backward sums the gradient back to each input's
// shape with kernels::sum_to. Scalars are plain T (not deduced, so `x * 2.0` works for float).
#include <type_traits>

#include "autograd/tensor.h"

namespace tapegrad {

template <class T> using Scalar = std::type_identity_t<T>;

template <class T> Tensor<T> add(const Tensor<T>& a, const Tensor<T>& b);
template <class T> Tensor<T> sub(const Tensor<T>& a, const Tensor<T>& b);
template <class T> Tensor<T> mul(const Tensor<T>& a, const Tensor<T>& b);
template <class T> Tensor<T> div(const Tensor<T>& a, const Tensor<T>& b);
// a^b elementwise, broadcasting; d/db = a^b log a (defined for a > 0).
template <class T> Tensor<T> pow(const Tensor<T>& a, const Tensor<T>& b);

template <class T> Tensor<T> add(const Tensor<T>& a, Scalar<T> s);
template <class T> Tensor<T> mul(const Tensor<T>& a, Scalar<T> s);
// s - a and s / a.
template <class T> Tensor<T> rsub(const Tensor<T>& a, Scalar<T> s);
template <class T> Tensor<T> rdiv(const Tensor<T>& a, Scalar<T> s);
template <class T> Tensor<T> pow(const Tensor<T>& a, Scalar<T> exponent);

template <class T> Tensor<T> neg(const Tensor<T>& a);
template <class T> Tensor<T> exp(const Tensor<T>& a);
template <class T> Tensor<T> log(const Tensor<T>& a);
template <class T> Tensor<T> sqrt(const Tensor<T>& a);
template <class T> Tensor<T> abs(const Tensor<T>& a);

// Differentiable element-type conversion (what Tensor<T>::to<U>() calls).
template <class To, class From> Tensor<To> cast(const Tensor<From>& a);

template <class T> Tensor<T> operator+(const Tensor<T>& a, const Tensor<T>& b) { return add(a, b); }
template <class T> Tensor<T> operator-(const Tensor<T>& a, const Tensor<T>& b) { return sub(a, b); }
template <class T> Tensor<T> operator*(const Tensor<T>& a, const Tensor<T>& b) { return mul(a, b); }
template <class T> Tensor<T> operator/(const Tensor<T>& a, const Tensor<T>& b) { return div(a, b); }
template <class T> Tensor<T> operator-(const Tensor<T>& a) { return neg(a); }
template <class T> Tensor<T> operator+(const Tensor<T>& a, Scalar<T> s) { return add(a, s); }
template <class T> Tensor<T> operator+(Scalar<T> s, const Tensor<T>& a) { return add(a, s); }
template <class T> Tensor<T> operator-(const Tensor<T>& a, Scalar<T> s) { return add(a, -s); }
template <class T> Tensor<T> operator-(Scalar<T> s, const Tensor<T>& a) { return rsub(a, s); }
template <class T> Tensor<T> operator*(const Tensor<T>& a, Scalar<T> s) { return mul(a, s); }
template <class T> Tensor<T> operator*(Scalar<T> s, const Tensor<T>& a) { return mul(a, s); }
template <class T> Tensor<T> operator/(const Tensor<T>& a, Scalar<T> s) { return mul(a, Scalar<T>(1) / s); }
template <class T> Tensor<T> operator/(Scalar<T> s, const Tensor<T>& a) { return rdiv(a, s); }

}  // namespace tapegrad
