#pragma once
// How a row of the pointwise table (pointwise_table.h) becomes an op: TAPEGRAD_DEFINE_UNARY,
// TAPEGRAD_DEFINE_BINARY and TAPEGRAD_DEFINE_SCALAR expand a row into the op's definition, inside
// namespace tapegrad.
// pointwise_unary.cpp and pointwise_binary.cpp expand the table with them;
// tests/test_contributing_row.cpp expands the example row of CONTRIBUTING.md, so the guide's row
// is compiled and checked as written.
#include <cmath>
#include <limits>
#include <string_view>

#include "autograd/base/checks.h"
#include "autograd/core/record.h"
#include "autograd/kernels/layout/broadcast.h"
#include "autograd/kernels/simd/ieee_pow.h"
#include "autograd/kernels/simd/map.h"
#include "autograd/kernels/simd/pointwise_math.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/masking.h"
#include "autograd/ops/pointwise.h"
#include "autograd/ops/reduce.h"

namespace tapegrad {

namespace detail {

// Whether a row's derivative, as written, names `operand` (x, y, a or b) as a whole word: the
// values its backward must keep. The others are kept as edges only (detail::Edge), as PyTorch's
// codegen finds a formula's saved variables in the text of derivatives.yaml.
constexpr bool names(std::string_view formula, std::string_view operand) {
  const auto in_word = [](char c) { return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  for (std::size_t at = formula.find(operand); at != std::string_view::npos; at = formula.find(operand, at + 1)) {
    const std::size_t end = at + operand.size();
    if ((at == 0 || !in_word(formula[at - 1])) && (end == formula.size() || !in_word(formula[end]))) return true;
  }
  return false;
}

// An operand as a formula keeps it: the tensor when the derivative reads it, else its edge.
template <bool Read, class T>
auto kept(const Tensor<T>& x) {
  if constexpr (Read) return x;
  else return edge(x);
}
// What the derivative gets for an operand: the tensor, or an undefined one it never names.
template <class T> const Tensor<T>& operand(const Tensor<T>& x) { return x; }
template <class T> Tensor<T> operand(const Edge<T>&) { return {}; }

// One unary or scalar row: y = forward(x) by the map kernel (a scalar row's forward holds its s);
// backward accumulates derivative(g, x, y), keeping x and y only if it names them.
// `recorded_name` names it on the tape (add_scalar).
template <bool ReadsX, bool ReadsY, class T, class Forward, class Derivative>
Tensor<T> unary_op(const char* op, const char* recorded_name, const Tensor<T>& a, CallSite where, Forward forward,
                   Derivative derivative) {
  require_defined(a, op, "a");
  xt::xarray<T> y = xt::xarray<T>::from_shape(a.value().shape());
  kernels::map(y.size(), a.value().data(), y.data(), forward);
  if constexpr (ReadsY) {
    return make_result(recorded_name, where, std::move(y), should_record(a),
                       [x = kept<ReadsX>(a), derivative](const Tensor<T>& g, const Tensor<T>& out) {
                         accumulate(x, derivative(g, operand(x), out));
                       });
  } else {
    return make_result(recorded_name, where, std::move(y), should_record(a),
                       [x = kept<ReadsX>(a), derivative](const Tensor<T>& g) {
                         accumulate(x, derivative(g, operand(x), Tensor<T>()));
                       });
  }
}

// Accumulates a binary row's derivatives, each summed back to its operand's shape. g's handle is
// dropped before b's gradient is accumulated: where that gradient is g itself (add's b), b then
// takes g's array instead of a copy.
template <class T, class A, class B, class DerivativeA, class DerivativeB>
void accumulate_binary(Tensor<T> g, const A& a, const B& b, const Tensor<T>& y, const DerivativeA& derivative_a,
                       const DerivativeB& derivative_b) {
  if (a.requires_grad()) accumulate(a, unbroadcast(derivative_a(g, operand(a), operand(b), y), a.shape()));
  if (b.requires_grad()) {
    Tensor<T> db = derivative_b(g, operand(a), operand(b), y);
    g = Tensor<T>();
    accumulate(b, unbroadcast(std::move(db), b.shape()));
  }
}

// One binary row: y = forward(a, b) broadcast by the map kernel; backward accumulates each
// derivative summed back to its input's shape, keeping a, b and y only if a derivative names them.
template <bool ReadsA, bool ReadsB, bool ReadsY, class T, class Forward, class DerivativeA, class DerivativeB>
Tensor<T> binary_op(const char* op, const Tensor<T>& a, const Tensor<T>& b, CallSite where, Forward forward,
                    DerivativeA derivative_a, DerivativeB derivative_b) {
  require_defined(a, op, "a");
  require_defined(b, op, "b");
  const Shape shape = allocatable(kernels::broadcast_shapes(a.shape(), b.shape(), op), sizeof(T), op, "the output");
  xt::xarray<T> y = xt::xarray<T>::from_shape(shape);
  kernels::map(a.value().data(), a.shape(), b.value().data(), b.shape(), y.data(), shape, forward);
  if constexpr (ReadsY) {
    return make_result(op, where, std::move(y), should_record(a, b),
                       [a = kept<ReadsA>(a), b = kept<ReadsB>(b), derivative_a, derivative_b](Tensor<T> g,
                                                                                             const Tensor<T>& out) {
                         accumulate_binary(std::move(g), a, b, out, derivative_a, derivative_b);
                       });
  } else {
    return make_result(op, where, std::move(y), should_record(a, b),
                       [a = kept<ReadsA>(a), b = kept<ReadsB>(b), derivative_a, derivative_b](Tensor<T> g) {
                         accumulate_binary(std::move(g), a, b, Tensor<T>(), derivative_a, derivative_b);
                       });
  }
}

// The share of maximum(a, b)'s gradient that goes to a, at the broadcast shape, as PyTorch: 1
// where a > b (and where either is NaN: both sides get all of it), 1/2 where a == b, 0 where
// a < b. minimum(a, b) gives a the share max_share(b, a). A constant: maximum is piecewise linear.
template <class T>
Tensor<T> max_share(const Tensor<T>& a, const Tensor<T>& b) {
  const Shape shape = kernels::broadcast_shapes(a.shape(), b.shape(), "maximum");
  xt::xarray<T> share = xt::xarray<T>::from_shape(shape);
  kernels::map(a.value().data(), a.shape(), b.value().data(), b.shape(), share.data(), shape, [](auto x, auto y) {
    using V = decltype(x);
    return kernels::simd::select(x < y, V(0), kernels::simd::select(x == y, V(0.5f), V(1)));
  });
  return Tensor<T>(std::move(share));
}

// Where pow's derivative for the exponent is 0 by PyTorch's rule: the base is 0 and the exponent
// not negative, over the broadcast of a and b. Made by the map kernel: xtensor 0.24's `&&` of two
// bool arrays of different shapes gives wrong values (true where neither operand is).
template <class T>
Mask zero_base_nonnegative_exponent(const Tensor<T>& a, const Tensor<T>& b) {
  const Shape shape = kernels::broadcast_shapes(a.shape(), b.shape(), "pow");
  xt::xarray<T> flags = xt::xarray<T>::from_shape(shape);
  kernels::map(a.value().data(), a.shape(), b.value().data(), b.shape(), flags.data(), shape, [](auto x, auto y) {
    using V = decltype(x);
    return kernels::simd::select((x == V(0)) & (y >= V(0)), V(1), V(0));
  });
  return xt::not_equal(flags, T(0));
}

// pow's exponent less one as its derivative for the base reads it, a^(b - 1): b - 1, and 0 where b
// is 0. There the derivative is 0 (the row masks it) and a^-1 would make the derivatives of that
// 0 at a zero base 0 * inf, NaN, where they are 0.
template <class T>
Tensor<T> exponent_less_one(const Tensor<T>& b) {
  return masked_fill(add(b, T(-1)), Mask(xt::equal(b.value(), T(0))), T(0));
}

// log a as pow's derivative for the exponent, y log a, reads it: with 1 in place of a where that
// derivative is 0 by PyTorch's rule (zero_base_nonnegative_exponent), at the broadcast shape. log 0
// there would make the derivatives of that 0 NaN (0 * -inf); with log 1 they are the limits where
// those are finite (0 for d/db at b > 0 and d/da at b > 1). Where the true mixed or exponent
// second derivative is infinite (a zero base under an exponent in [0, 1]) the value is not it
// (PyTorch's is NaN).
template <class T>
Tensor<T> log_of_base(const Tensor<T>& a, const Tensor<T>& b) {
  return log(masked_fill(a, zero_base_nonnegative_exponent(a, b), T(1)));
}

// d(0^x)/dx as PyTorch takes it: 0 where x >= 0 (0^x is 0 for x > 0, and PyTorch picks 0 at
// x = 0), -inf where x < 0 (inf times log 0). A constant.
template <class T>
Tensor<T> zero_base_slope(const Tensor<T>& x) {
  xt::xarray<T> slope = xt::xarray<T>::from_shape(x.shape());
  kernels::map(slope.size(), x.value().data(), slope.data(), [](auto v) {
    using V = decltype(v);
    return kernels::simd::select(v < V(0), V(-std::numeric_limits<float>::infinity()), V(0));
  });
  return Tensor<T>(std::move(slope));
}

}  // namespace detail

#define TAPEGRAD_DEFINE_UNARY(name, forward, reference, derivative, domain)                          \
  template <class T>                                                                                 \
  Tensor<T> name(const Tensor<T>& a, CallSite where) {                                               \
    return detail::unary_op<detail::names(#derivative, "x"), detail::names(#derivative, "y")>(       \
        #name, #name, a, where, [](auto x) { return forward; },                                      \
        [](const Tensor<T>& g, [[maybe_unused]] const Tensor<T>& x, [[maybe_unused]] const Tensor<T>& y) { \
          return derivative;                                                                         \
        });                                                                                          \
  }

#define TAPEGRAD_DEFINE_BINARY(name, forward, reference, derivative_a, derivative_b, domain_a, domain_b) \
  template <class T>                                                                                   \
  Tensor<T> name(const Tensor<T>& a, const Tensor<T>& b, CallSite where) {                             \
    return detail::binary_op<detail::names(#derivative_a " " #derivative_b, "a"),                      \
                             detail::names(#derivative_a " " #derivative_b, "b"),                      \
                             detail::names(#derivative_a " " #derivative_b, "y")>(                     \
        #name, a, b, where, [](auto a, auto b) { return forward; },                                    \
        [](const Tensor<T>& g, [[maybe_unused]] const Tensor<T>& a, [[maybe_unused]] const Tensor<T>& b, \
           [[maybe_unused]] const Tensor<T>& y) { return derivative_a; },                              \
        [](const Tensor<T>& g, [[maybe_unused]] const Tensor<T>& a, [[maybe_unused]] const Tensor<T>& b, \
           [[maybe_unused]] const Tensor<T>& y) { return derivative_b; });                             \
  }

#define TAPEGRAD_DEFINE_SCALAR(name, recorded_name, forward, reference, derivative, domain, scalars)   \
  template <class T>                                                                                  \
  Tensor<T> name(const Tensor<T>& a, Scalar<T> s, CallSite where) {                                   \
    return detail::unary_op<detail::names(#derivative, "x"), detail::names(#derivative, "y")>(        \
        #name, #recorded_name, a, where, [s](auto x) { return forward; },                             \
        [s](const Tensor<T>& g, [[maybe_unused]] const Tensor<T>& x, [[maybe_unused]] const Tensor<T>& y) { \
          static_cast<void>(s); /* add's and rsub's derivatives do not read it */                     \
          return derivative;                                                                          \
        });                                                                                           \
  }

}  // namespace tapegrad
