#include "autograd/ops/embedding.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "autograd/base/checks.h"
#include "autograd/core/record.h"
#include "autograd/kernels/layout/indices.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/ops/operators.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

// The positions of the indices grouped by the row they pick (a stable counting sort): the
// positions that picked row r are order[start[r] .. start[r + 1]), in increasing order.
struct RowGroups {
  std::vector<std::size_t> start;
  std::vector<std::size_t> order;
};

RowGroups group_by_row(const Index* indices, std::size_t count, std::size_t rows) {
  RowGroups groups{std::vector<std::size_t>(rows + 1, 0), std::vector<std::size_t>(count)};
  for (std::size_t k = 0; k < count; ++k) ++groups.start[static_cast<std::size_t>(indices[k]) + 1];
  for (std::size_t r = 0; r < rows; ++r) groups.start[r + 1] += groups.start[r];
  std::vector<std::size_t> next(groups.start.begin(), groups.start.end() - 1);
  for (std::size_t k = 0; k < count; ++k) groups.order[next[static_cast<std::size_t>(indices[k])]++] = k;
  return groups;
}

// padding_idx in [-num, num) mapped to [0, num) as PyTorch does; ValueError otherwise.
std::optional<std::size_t> normalize_padding(std::optional<Index> padding_idx, const Shape& weight_shape) {
  if (!padding_idx) return std::nullopt;
  const auto num = static_cast<Index>(weight_shape[0]);
  const Index p = *padding_idx < 0 ? *padding_idx + num : *padding_idx;
  if (p < 0 || p >= num) {
    throw ValueError("embedding: padding_idx " + std::to_string(*padding_idx) + " is out of range for num_embeddings " +
                     std::to_string(num) + " (weight " + format_shape(weight_shape) + "); expected [-" +
                     std::to_string(num) + ", " + std::to_string(num) + ")");
  }
  return static_cast<std::size_t>(p);
}

void check_indices(const IndexArray& indices, const Shape& weight_shape) {
  const Shape index_shape(indices.shape().begin(), indices.shape().end());
  const auto num = static_cast<Index>(weight_shape[0]);
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const Index i = indices.data()[k];
    if (i < 0 || i >= num) {
      throw ValueError("embedding: index " + std::to_string(i) + " at position " +
                       format_shape(kernels::unravel_index(k, index_shape)) + " of indices " + format_shape(index_shape) +
                       " is out of range for num_embeddings " + std::to_string(num) + " (weight " +
                       format_shape(weight_shape) + ")");
    }
  }
}

// embedding's backward: g [indices..., dim] scatter-added into zeros [num, dim], row idx[k] receiving
// g[k]; the padding row stays 0. Linear in g, so its own backward is the matching gather: row
// idx[k] of u, with the padding row zeroed first (those positions received nothing).
template <class T>
Tensor<T> embedding_backward(const Tensor<T>& g, const std::shared_ptr<const IndexArray>& indices,
                             std::optional<std::size_t> pad, std::size_t num,
                             CallSite where = std::source_location::current()) {
  const std::size_t dim = g.shape().back();
  // Each weight row is summed by one task over the positions that picked it, in position order:
  // the same bits at any thread count, and no atomics.
  const RowGroups groups = group_by_row(indices->data(), indices->size(), num);
  xt::xarray<T> dw = xt::zeros<T>({num, dim});
  // Work per row on average, for the task grain.
  const std::size_t per_row = dim * indices->size() / std::max<std::size_t>(1, num);
  const T* gv = g.value().data();
  kernels::parallel_items(num, per_row, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      if (r == pad) continue;  // the padding row gets no gradient
      T* dst = dw.data() + r * dim;
      for (std::size_t q = groups.start[r]; q < groups.start[r + 1]; ++q) {
        const T* src = gv + groups.order[q] * dim;
        for (std::size_t j = 0; j < dim; ++j) dst[j] += src[j];
      }
    }
  });
  return make_result("embedding_backward", where, std::move(dw), should_record(g),
                     [g = detail::edge(g), indices, pad, num](const Tensor<T>& u) {
                       Tensor<T> rows = u;
                       if (pad) {
                         xt::xarray<T> keep = xt::ones<T>({num, std::size_t{1}});
                         keep(*pad, 0) = T(0);
                         rows = mul(u, Tensor<T>(std::move(keep)));
                       }
                       accumulate(g, embedding(rows, *indices));
                     });
}

}  // namespace

template <class T>
Tensor<T> embedding(const Tensor<T>& weight, const IndexArray& indices, std::optional<Index> padding_idx, CallSite where) {
  require_defined(weight, "embedding", "weight");
  const Shape weight_shape = weight.shape();
  if (weight_shape.size() != 2) {
    throw ShapeError("embedding: weight must be 2-D [num_embeddings, dim], got " + format_shape(weight_shape));
  }
  const std::optional<std::size_t> pad = normalize_padding(padding_idx, weight_shape);
  check_indices(indices, weight_shape);
  const std::size_t num = weight_shape[0], dim = weight_shape[1];

  Shape out_shape(indices.shape().begin(), indices.shape().end());
  out_shape.push_back(dim);
  xt::xarray<T> out = xt::xarray<T>::from_shape(allocatable(out_shape, sizeof(T), "embedding", "the output"));
  const T* w = weight.value().data();
  const Index* idx = indices.data();
  T* o = out.data();
  kernels::parallel_items(indices.size(), dim, [&](std::size_t begin, std::size_t end) {
    for (std::size_t k = begin; k < end; ++k) std::copy_n(w + static_cast<std::size_t>(idx[k]) * dim, dim, o + k * dim);
  });

  return make_result("embedding", where, std::move(out), should_record(weight),
                     // The indices are shared with the backward op's formula, not copied per backward.
                     [weight = detail::edge(weight), indices = std::make_shared<const IndexArray>(indices), pad,
                      num](const Tensor<T>& g) {
                       accumulate(weight, embedding_backward(g, indices, pad, num));
                     });
}

template Tensor<float> embedding(const Tensor<float>&, const IndexArray&, std::optional<Index>, CallSite);
template Tensor<double> embedding(const Tensor<double>&, const IndexArray&, std::optional<Index>, CallSite);

}  // namespace tapegrad
