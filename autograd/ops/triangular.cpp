#include "autograd/ops/triangular.h"

#include <string>

#include "autograd/base/checks.h"
#include "autograd/core/record.h"
#include "autograd/kernels/simd/row_kernels.h"

namespace tapegrad {

namespace {

// tril (lower) or triu: a with the other triangle of every matrix set to 0. Its derivative is the
// same op on g.
template <class T>
Tensor<T> triangle(const char* op, bool lower, const Tensor<T>& a, Index diagonal, CallSite where) {
  require_defined(a, op, "a");
  const Shape shape = a.shape();
  if (shape.size() < 2) {
    throw ShapeError(std::string(op) + ": input " + format_shape(shape) + " has " + std::to_string(shape.size()) +
                     " dims; it acts on the last two axes, so it needs at least 2 (a matrix or a batch of them)");
  }
  const std::size_t rows = shape[shape.size() - 2], cols = shape.back();
  const std::size_t lines = cols == 0 ? 0 : a.value().size() / cols;  // matrix rows across the batch
  xt::xarray<T> out = xt::xarray<T>::from_shape(shape);
  const T* x = a.value().data();
  T* y = out.data();
  kernels::parallel_items(lines, cols, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const Index i = static_cast<Index>(r % rows);
      for (std::size_t j = 0; j < cols; ++j) {
        const Index offset = static_cast<Index>(j) - i;  // which diagonal (i, j) is on
        const bool keep = lower ? offset <= diagonal : offset >= diagonal;
        y[r * cols + j] = keep ? x[r * cols + j] : T(0);
      }
    }
  });
  return detail::make_result(op, where, std::move(out), detail::should_record(a),
                             [a = detail::edge(a), op, lower, diagonal](const Tensor<T>& g) {
                               detail::accumulate(a, triangle(op, lower, g, diagonal, std::source_location::current()));
                             });
}

}  // namespace

template <class T>
Tensor<T> tril(const Tensor<T>& a, Index diagonal, CallSite where) {
  return triangle("tril", true, a, diagonal, where);
}

template <class T>
Tensor<T> triu(const Tensor<T>& a, Index diagonal, CallSite where) {
  return triangle("triu", false, a, diagonal, where);
}

#define TAPEGRAD_INSTANTIATE_TRIANGULAR(T)                        \
  template Tensor<T> tril(const Tensor<T>&, Index, CallSite);    \
  template Tensor<T> triu(const Tensor<T>&, Index, CallSite);
TAPEGRAD_INSTANTIATE_TRIANGULAR(float)
TAPEGRAD_INSTANTIATE_TRIANGULAR(double)

}  // namespace tapegrad
