#pragma once
// The pointwise ops, one row each: adding a row declares the op (autograd/ops/pointwise.h),
// defines and instantiates it (pointwise_unary.cpp, pointwise_binary.cpp) and puts it under the
// tests of every op (tests/test_pointwise.cpp: forward against the reference at every tail length
// and thread count; tests/higher_order/pointwise_cases.cpp: gradcheck, gradgradcheck,
// bit-identity, jvp). As
// PyTorch's derivatives.yaml and tinygrad's gradient table, a row is the op's whole definition:
//
// Unary ops, TAPEGRAD_UNARY_OPS:
//   OP(name, forward, reference, derivative, domain)
//   - forward:    y from x, elementwise. x is a T or an xsimd batch of T (kernels/simd/map.h), so use
//                 xsimd's functions (they take both), T(...) constants and kernels::simd::select.
//   - reference:  the same on one T with the standard library, which the tests compare against.
//   - derivative: dL/dx from the tensors g (dL/dy), x and y, written with tapegrad's ops: under
//                 create_graph it is recorded and differentiated again.
//   - domain:     where the op is differentiable, which the tests draw inputs from: any (-2, 2),
//                 positive (0.1, 2), above_minus_one (-0.9, 2), nonzero (0.1, 2) with either sign.
//
// `sign` is 0 at 0 and at NaN (as PyTorch's sgn), so abs's derivative is too.
#define TAPEGRAD_UNARY_OPS(OP)                                                                               \
  OP(neg, -x, -x, neg(g), any)                                                                               \
  OP(exp, xsimd::exp(x), std::exp(x), mul(g, y), any)                                                        \
  OP(expm1, xsimd::expm1(x), std::expm1(x), add(mul(g, y), g), any)                                          \
  OP(log, xsimd::log(x), std::log(x), div(g, x), positive)                                                   \
  OP(log1p, xsimd::log1p(x), std::log1p(x), div(g, add(x, T(1))), above_minus_one)                           \
  OP(sqrt, xsimd::sqrt(x), std::sqrt(x), div(g, mul(y, T(2))), positive)                                     \
  OP(rsqrt, T(1) / xsimd::sqrt(x), T(1) / std::sqrt(x), mul(g, mul(mul(y, mul(y, y)), T(-0.5))), positive)   \
  OP(reciprocal, T(1) / x, T(1) / x, neg(mul(g, mul(y, y))), nonzero)                                        \
  OP(sin, xsimd::sin(x), std::sin(x), mul(g, cos(x)), any)                                                   \
  OP(cos, xsimd::cos(x), std::cos(x), neg(mul(g, sin(x))), any)                                              \
  OP(abs, xsimd::abs(x), std::abs(x), mul(g, sign(x)), nonzero)                                              \
  OP(sign, kernels::simd::select(x > T(0), decltype(x)(1), decltype(x)(0)) -                                 \
               kernels::simd::select(x < T(0), decltype(x)(1), decltype(x)(0)),                              \
     T(x > T(0)) - T(x < T(0)), Tensor<T>::zeros(g.shape()), nonzero)

// Binary ops, TAPEGRAD_BINARY_OPS, broadcasting as NumPy and PyTorch do (kernels/layout/broadcast.h):
//   OP(name, forward, reference, derivative_a, derivative_b, domain_a, domain_b)
//   - forward, reference: y from a and b, as above (a and b both T, or both batches).
//   - derivative_a, derivative_b: dL/da and dL/db at the broadcast shape, from the tensors g, a, b
//     and y; the op sums each back to its input's shape.
//
// pow's derivatives are 0 where PyTorch's are, for a where the exponent is 0 and for b where the
// base is 0 and the exponent is not negative (the plain formulas give 0 * inf there); so are
// their own derivatives there, where finite (detail::exponent_less_one, detail::log_of_base).
// maximum and minimum propagate NaN and, at a tie, give each side half the gradient (PyTorch;
// detail::max_share). div_trunc and div_floor are div rounded toward zero and toward -inf
// (PyTorch's rounding_mode "trunc" and "floor", which div(a, b, RoundingMode) calls); their
// gradient is zero, as PyTorch's.
#define TAPEGRAD_BINARY_OPS(OP)                                                                          \
  OP(add, a + b, a + b, g, g, any, any)                                                                  \
  OP(sub, a - b, a - b, g, neg(g), any, any)                                                             \
  OP(mul, a * b, a * b, mul(g, b), mul(g, a), any, any)                                                  \
  OP(div, a / b, a / b, div(g, b), div(mul(neg(g), y), b), any, nonzero)                                 \
  OP(pow, kernels::ieee_pow(a, b), std::pow(a, b),                                                     \
     masked_fill(mul(mul(g, b), pow(a, detail::exponent_less_one(b))), Mask(xt::equal(b.value(), T(0))), T(0)), \
     masked_fill(mul(mul(g, y), detail::log_of_base(a, b)), detail::zero_base_nonnegative_exponent(a, b), T(0)), \
     positive, any)                                                                                      \
  OP(maximum, kernels::maximum(a, b), std::isnan(b) ? b : std::max(a, b), mul(g, detail::max_share(a, b)), \
     mul(g, detail::max_share(b, a)), any, any)                                                          \
  OP(minimum, kernels::minimum(a, b), std::isnan(b) ? b : std::min(a, b), mul(g, detail::max_share(b, a)), \
     mul(g, detail::max_share(a, b)), any, any)                                                          \
  OP(div_trunc, xsimd::trunc(a / b), std::trunc(a / b), Tensor<T>::zeros(g.shape()),                    \
     Tensor<T>::zeros(g.shape()), any, nonzero)                                                          \
  OP(div_floor, kernels::floor_divide(a, b), kernels::floor_divide(a, b), Tensor<T>::zeros(g.shape()),   \
     Tensor<T>::zeros(g.shape()), any, nonzero)

// Ops of a tensor and a scalar s (a plain T, the same for every element), TAPEGRAD_SCALAR_OPS:
//   OP(name, recorded_name, forward, reference, derivative, domain, scalars)
//   - forward, reference: y from x and s; derivative: dL/dx from the tensors g, x, y and the T s.
//   - recorded_name: the op's name on the tape and in messages (add_scalar beside add).
//   - scalars: the s the tests use, any (both signs) or positive (rpow: a negative base has no
//     real power at a fractional x).
// The operators +, -, *, / with a scalar (autograd/ops/operators.h) call these, and pow(s, x)
// calls rpow. rpow's derivative at s = 0 is PyTorch's: 0 where x >= 0 (detail::zero_base_slope).
#define TAPEGRAD_SCALAR_OPS(OP)                                                                  \
  OP(add, add_scalar, x + s, x + s, g, any, any)                                                 \
  OP(mul, mul_scalar, x * s, x * s, mul(g, s), any, any)                                         \
  OP(rsub, rsub_scalar, s - x, s - x, neg(g), any, any)                                          \
  OP(rdiv, rdiv_scalar, s / x, s / x, div(mul(neg(g), y), x), nonzero, any)                      \
  OP(pow, pow_scalar, kernels::ieee_pow(x, decltype(x)(s)), std::pow(x, s), s == T(0) ? Tensor<T>::zeros(g.shape()) : mul(mul(g, s), pow(x, s - T(1))), positive, any) \
  OP(rpow, rpow_scalar, kernels::ieee_pow(decltype(x)(s), x), std::pow(s, x),                          \
     mul(g, s == T(0) ? detail::zero_base_slope(x) : mul(y, std::log(s))), any, positive)
