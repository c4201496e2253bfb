#pragma once
// Reductions built on the sums of autograd/ops/reduce.h: logsumexp, var and std. Axes are read as
// there (negative from the end; out of range or named twice: ValueError naming the op and the
// shape; an empty list reduces every axis). With keepdims the reduced axes stay as size 1.
//
//   logsumexp: y = m + log(sum exp(x - m)), m the group's maximum (0 when it is infinite), so no
//              exp overflows. A group of -inf only (or an empty group) gives -inf, one holding +inf
//              gives +inf. dL/dx = g exp(x - y): NaN throughout a group whose y is infinite, as
//              PyTorch 1.13 (exp(-inf - -inf)), except the finite elements of a +inf group, 0.
//   var:       y = sum (x - mean)^2 / max(0, n - correction), n the group's size; correction 1 is
//              PyTorch's default unbiased=True, 0 is unbiased=False. n <= correction gives NaN
//              (0/0) or inf. dL/dx = g 2 (x - mean) / (n - correction), PyTorch's formula, with the
//              divisor not clamped (so NaN for n = correction, as PyTorch).
//   std:       y = sqrt(var). dL/dx = var's with g / (2 y), and 0 where y = 0 (a constant group:
//              PyTorch 1.13 masks it to 0, not NaN or inf).
// Every sum is in double, in index order, by one thread per group: the same bits at any thread count.
#include "autograd/ops/reduce.h"
#include "autograd/core/tensor.h"

namespace tapegrad {

template <class T> Tensor<T> logsumexp(const Tensor<T>& a, const Axes& axes, bool keepdims = false,
    CallSite where = std::source_location::current());

// Over all elements (shape []), unbiased: torch.var(x).
template <class T> Tensor<T> var(const Tensor<T>& a, CallSite where = std::source_location::current());
// Along axes: torch.var(x, dim, correction=correction, keepdim=keepdims). A negative correction is a
// ValueError.
template <class T> Tensor<T> var(const Tensor<T>& a, const Axes& axes, Index correction = 1, bool keepdims = false,
    CallSite where = std::source_location::current());
template <class T> Tensor<T> std(const Tensor<T>& a, CallSite where = std::source_location::current());
template <class T> Tensor<T> std(const Tensor<T>& a, const Axes& axes, Index correction = 1, bool keepdims = false,
    CallSite where = std::source_location::current());

}  // namespace tapegrad
