#include "autograd/ops/linalg.h"

#include <algorithm>

#include "autograd/detail/checks.h"
#include "autograd/detail/record.h"
#include "autograd/kernels/blas.h"
#include "autograd/kernels/broadcast.h"
#include "autograd/kernels/einsum_plan.h"
#include "autograd/kernels/row_kernels.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

std::size_t product(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t s : shape) n *= s;
  return n;
}

// Columns per task of linear's bias gradient.
constexpr std::size_t kBiasColumns = 256;

// ---- matmul ----

// A product seen as matrices: A is [a_batch..., m, k], B is [b_batch..., k, n] (a 1-D A is [1, k],
// a 1-D B is [k, 1]); the batch axes broadcast to `batch`.
struct MatmulDims {
  Shape a_batch, b_batch, batch;
  std::size_t m = 1, k = 1, n = 1;
  Shape out_shape;  // torch.matmul's: batch, then m unless A is 1-D, then n unless B is 1-D
};

MatmulDims matmul_dims(const Shape& a, const Shape& b) {
  const std::string shapes = "a " + format_shape(a) + " and b " + format_shape(b);
  if (a.empty() || b.empty()) throw ShapeError("matmul: both arguments need at least 1 dim, got " + shapes);
  MatmulDims d;
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  d.m = a_vector ? 1 : a[a.size() - 2];
  d.k = a.back();
  d.n = b_vector ? 1 : b.back();
  const std::size_t b_rows = b_vector ? b[0] : b[b.size() - 2];
  if (b_rows != d.k) {
    throw ShapeError("matmul: " + shapes + " do not fit: a's last dim is " + std::to_string(d.k) + " but b's " +
                     (b_vector ? "only" : "second-to-last") + " dim is " + std::to_string(b_rows));
  }
  d.a_batch.assign(a.begin(), a.end() - std::min<std::size_t>(a.size(), 2));
  d.b_batch.assign(b.begin(), b.end() - std::min<std::size_t>(b.size(), 2));
  d.batch = kernels::broadcast_shapes(d.a_batch, d.b_batch, "matmul: batch dims of " + shapes);
  d.out_shape = d.batch;
  if (!a_vector) d.out_shape.push_back(d.m);
  if (!b_vector) d.out_shape.push_back(d.n);
  return d;
}

// Element stride of each axis of `batch` in an operand whose own batch axes are `own` (aligned
// from the right) and whose matrices have `matrix_size` elements; 0 where the operand broadcasts.
std::vector<std::size_t> batch_strides(const Shape& own, const Shape& batch, std::size_t matrix_size) {
  std::vector<std::size_t> strides(batch.size(), 0);
  std::size_t stride = matrix_size;
  const std::size_t lead = batch.size() - own.size();
  for (std::size_t d = own.size(); d-- > 0;) {
    if (own[d] != 1) strides[d + lead] = stride;
    stride *= own[d];
  }
  return strides;
}

// c[i] = op(a[i]) op(b[i]) for every index i of `batch`, c contiguous [batch..., m, n]. a holds
// [a_batch..., m, k] matrices ([.., k, m] when ta), b holds [b_batch..., k, n] ([.., n, k] when tb);
// their batch axes broadcast to `batch`.
template <class T>
void broadcast_gemm(const T* a, const Shape& a_batch, bool ta, const T* b, const Shape& b_batch, bool tb,
                    std::size_t m, std::size_t n, std::size_t k, const Shape& batch, T* c) {
  const std::size_t lda = ta ? m : k, ldb = tb ? k : n, count = product(batch);
  // No element to write: return before looping over a batch that may be huge (an empty b of
  // [2^30, k, 0] made 2^30 empty products, seconds of nothing).
  if (count == 0 || m == 0 || n == 0) return;
  // B shared by the whole batch and A an unbroadcast stack of untransposed matrices: one product
  // with count * m rows (split into row blocks by kernels::gemm) instead of count small ones.
  if (product(b_batch) == 1 && product(a_batch) == count && !ta) {
    kernels::gemm(false, tb, count * m, n, k, T(1), a, lda, b, ldb, T(0), c, n);
    return;
  }
  // Size-1 batch axes index nothing; drop them.
  const auto sa_all = batch_strides(a_batch, batch, m * k), sb_all = batch_strides(b_batch, batch, k * n);
  Shape sizes;
  std::vector<std::size_t> sa, sb;
  for (std::size_t d = 0; d < batch.size(); ++d) {
    if (batch[d] == 1) continue;
    sizes.push_back(batch[d]);
    sa.push_back(sa_all[d]);
    sb.push_back(sb_all[d]);
  }
  // Trailing axes that both operands step through uniformly merge into one gemm_batched; the
  // leading axes before them (only where broadcasting interleaves) are looped over here.
  std::size_t split = sizes.size();
  while (split > 0) {
    const std::size_t d = split - 1;
    if (d + 1 < sizes.size() && (sa[d] != sa[d + 1] * sizes[d + 1] || sb[d] != sb[d + 1] * sizes[d + 1])) break;
    split = d;
  }
  std::size_t inner = 1;
  for (std::size_t d = split; d < sizes.size(); ++d) inner *= sizes[d];
  const std::size_t inner_sa = split < sizes.size() ? sa.back() : 0, inner_sb = split < sizes.size() ? sb.back() : 0;
  Shape index(split, 0);
  std::size_t a_offset = 0, b_offset = 0;
  for (std::size_t outer = 0; outer < count / std::max<std::size_t>(inner, 1); ++outer) {
    kernels::gemm_batched(inner, ta, tb, m, n, k, T(1), a + a_offset, inner_sa, lda, b + b_offset, inner_sb, ldb, T(0),
                          c + outer * inner * m * n, m * n, n);
    for (std::size_t d = split; d-- > 0;) {
      a_offset += sa[d];
      b_offset += sb[d];
      if (++index[d] < sizes[d]) break;
      a_offset -= sa[d] * index[d];
      b_offset -= sb[d] * index[d];
      index[d] = 0;
    }
  }
}

// The gradient of one operand, computed over the whole broadcast batch as [batch..., rows, cols],
// summed back to the operand's own batch axes and given the operand's shape.
template <class T>
xt::xarray<T> reduce_to_operand(xt::xarray<T> full, const Shape& own_batch, std::size_t rows, std::size_t cols,
                                const Shape& operand_shape) {
  Shape own = own_batch;
  own.push_back(rows);
  own.push_back(cols);
  if (product(own) != full.size()) full = kernels::sum_to(full, own);
  full.reshape(operand_shape);
  return full;
}

// One operand's gradient: the batched product x y ([batch, rows, inner] x [batch, inner, cols],
// each transposed as flagged, each broadcast over its own batch axes) into a [batch, rows, cols]
// workspace, then summed to the operand's batch axes and shape.
template <class T>
xt::xarray<T> operand_gradient(const T* x, const Shape& x_batch, bool x_t, const T* y, const Shape& y_batch, bool y_t,
                               std::size_t rows, std::size_t cols, std::size_t inner, const MatmulDims& d,
                               const Shape& operand_batch, const Shape& operand_shape, const char* workspace) {
  Shape full_shape = d.batch;
  full_shape.push_back(rows);
  full_shape.push_back(cols);
  auto full = xt::xarray<T>::from_shape(detail::allocatable(full_shape, sizeof(T), "matmul", workspace));
  broadcast_gemm(x, x_batch, x_t, y, y_batch, y_t, rows, cols, inner, d.batch, full.data());
  return reduce_to_operand(std::move(full), operand_batch, rows, cols, operand_shape);
}

// dA = g B^T, [batch, m, n] x [batch, k, n]^T, summed to A's batch axes.
template <class T>
xt::xarray<T> matmul_grad_a(const xt::xarray<T>& g, const xt::xarray<T>& b, const MatmulDims& d, const Shape& a_shape) {
  return operand_gradient(g.data(), d.batch, false, b.data(), d.b_batch, true, d.m, d.k, d.n, d, d.a_batch, a_shape,
                          "the backward's workspace for a's gradient");
}

// dB = A^T g, [batch, m, k]^T x [batch, m, n], summed to B's batch axes. When B has no batch of
// its own and A has the whole batch, the sum over the batch is folded into one product:
// dB = A'^T g' with A' = [batch * m, k] and g' = [batch * m, n].
template <class T>
xt::xarray<T> matmul_grad_b(const xt::xarray<T>& g, const xt::xarray<T>& a, const MatmulDims& d, const Shape& b_shape) {
  const std::size_t count = product(d.batch);
  if (product(d.b_batch) == 1 && product(d.a_batch) == count) {
    auto grad = xt::xarray<T>::from_shape(Shape{d.k, d.n});
    kernels::gemm(true, false, d.k, d.n, count * d.m, T(1), a.data(), d.k, g.data(), d.n, T(0), grad.data(), d.n);
    grad.reshape(b_shape);
    return grad;
  }
  return operand_gradient(a.data(), d.a_batch, true, g.data(), d.batch, false, d.k, d.n, d.m, d, d.b_batch, b_shape,
                          "the backward's workspace for b's gradient");
}

// ---- einsum ----

// One recorded einsum over one or two operands. Its backward is einsum again: for operand i,
// d operand_i = einsum(output, other operand -> operand_i's letters), with the sizes of letters
// found in operand_i only (summed away in the forward) taken from `sizes`; a letter repeated in
// operand_i gets the gradient on its diagonal.
template <class T>
Tensor<T> einsum_node(const kernels::EinsumEquation& eq, const std::vector<Tensor<T>>& operands,
                      const kernels::EinsumSizes& sizes, CallSite where) {
  std::vector<const xt::xarray<T>*> values;
  for (const auto& x : operands) values.push_back(&x.value());
  return make_result("einsum", where, kernels::einsum(eq, values), detail::should_record_any(operands),
                     [eq, operands, sizes](const xt::xarray<T>& g, const xt::xarray<T>&) {
                       for (std::size_t i = 0; i < operands.size(); ++i) {
                         if (!operands[i].requires_grad()) continue;
                         kernels::EinsumEquation grad_eq{{eq.output}, eq.operands[i]};
                         std::vector<const xt::xarray<T>*> grad_values{&g};
                         if (operands.size() == 2) {
                           grad_eq.operands.push_back(eq.operands[1 - i]);
                           grad_values.push_back(&operands[1 - i].value());
                         }
                         accumulate(operands[i], kernels::einsum(grad_eq, grad_values, sizes));
                       }
                     });
}

}  // namespace

template <class T>
Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b, CallSite where) {
  detail::require_defined(a, "matmul", "a");
  detail::require_defined(b, "matmul", "b");
  const MatmulDims d = matmul_dims(a.shape(), b.shape());
  auto out = xt::xarray<T>::from_shape(detail::allocatable(d.out_shape, sizeof(T), "matmul", "the output"));
  broadcast_gemm(a.value().data(), d.a_batch, false, b.value().data(), d.b_batch, false, d.m, d.n, d.k, d.batch,
                 out.data());
  return make_result("matmul", where, std::move(out), should_record(a, b),
                     [a, b, d](const xt::xarray<T>& g, const xt::xarray<T>&) {
                       if (a.requires_grad()) accumulate(a, matmul_grad_a(g, b.value(), d, a.shape()));
                       if (b.requires_grad()) accumulate(b, matmul_grad_b(g, a.value(), d, b.shape()));
                     });
}

template <class T>
Tensor<T> linear(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias, CallSite where) {
  detail::require_defined(x, "linear", "x");
  detail::require_defined(weight, "linear", "weight");
  const auto shapes = [&] {
    return "x " + x.describe() + ", weight " + weight.describe() + (bias.defined() ? ", bias " + bias.describe() : "");
  };
  if (weight.ndim() != 2 || x.ndim() == 0 || x.size(-1) != weight.size(1)) {
    throw ShapeError("linear: weight must be [out, in] and x [..., in], got " + shapes());
  }
  const std::size_t in = weight.size(1), out_features = weight.size(0);
  const Shape x_shape = x.shape();
  const std::size_t rows = product(Shape(x_shape.begin(), x_shape.end() - 1));
  if (bias.defined() && (bias.ndim() != 1 || bias.size(0) != out_features)) {
    throw ShapeError("linear: bias must be [" + std::to_string(out_features) + "] (weight's out), got " + shapes());
  }
  Shape out_shape = x.shape();
  out_shape.back() = out_features;
  auto y = xt::xarray<T>::from_shape(detail::allocatable(out_shape, sizeof(T), "linear", "the output"));
  T beta = T(0);
  if (bias.defined()) {
    const T* b = bias.value().data();
    T* out = y.data();
    kernels::parallel_items(rows, out_features, [=](std::size_t begin, std::size_t end) {
      for (std::size_t r = begin; r < end; ++r) std::copy_n(b, out_features, out + r * out_features);
    });
    beta = T(1);
  }
  kernels::gemm(false, true, rows, out_features, in, T(1), x.value().data(), in, weight.value().data(), in, beta,
                y.data(), out_features);
  return make_result("linear", where, std::move(y), should_record(x, weight, bias),
                     [x, weight, bias, rows, in, out_features](const xt::xarray<T>& g, const xt::xarray<T>&) {
                       if (x.requires_grad()) {
                         auto dx = xt::xarray<T>::from_shape(x.shape());
                         kernels::gemm(false, false, rows, in, out_features, T(1), g.data(), out_features,
                                       weight.value().data(), in, T(0), dx.data(), in);
                         accumulate(x, std::move(dx));
                       }
                       if (weight.requires_grad()) {
                         auto dw = xt::xarray<T>::from_shape(weight.shape());
                         kernels::gemm(true, false, out_features, in, rows, T(1), g.data(), out_features,
                                       x.value().data(), in, T(0), dw.data(), in);
                         accumulate(weight, std::move(dw));
                       }
                       if (bias.defined() && bias.requires_grad()) {
                         // Column blocks in parallel; within one, rows are added in order with a
                         // contiguous (vectorised) inner loop: the same bits at any thread count.
                         xt::xarray<T> db = xt::zeros<T>(bias.shape());
                         T* sums = db.data();
                         const T* grad = g.data();
                         kernels::parallel_items(
                             (out_features + kBiasColumns - 1) / kBiasColumns, rows * kBiasColumns,
                             [=](std::size_t first_block, std::size_t end_block) {
                               const std::size_t begin = first_block * kBiasColumns;
                               const std::size_t end = std::min(out_features, end_block * kBiasColumns);
                               for (std::size_t r = 0; r < rows; ++r) {
                                 const T* row = grad + r * out_features;
                                 for (std::size_t j = begin; j < end; ++j) sums[j] += row[j];
                               }
                             });
                         accumulate(bias, std::move(db));
                       }
                     });
}

template <class T>
Tensor<T> einsum(std::string_view subscripts, const std::vector<Tensor<T>>& operands, CallSite where) {
  const std::string op = "einsum(\"" + std::string(subscripts) + "\")";
  for (std::size_t i = 0; i < operands.size(); ++i)
    detail::require_defined(operands[i], op, "operand " + std::to_string(i));
  const kernels::EinsumEquation eq = kernels::parse_einsum(subscripts, operands.size());
  std::vector<Shape> shapes;
  for (const auto& x : operands) shapes.push_back(x.shape());
  const kernels::EinsumSizes sizes = kernels::einsum_sizes(subscripts, eq, shapes);
  if (operands.size() <= 2) return einsum_node(eq, operands, sizes, where);
  // Left to right, one recorded pair at a time; each intermediate keeps the letters that a later
  // operand or the output still needs, in order of first appearance.
  Tensor<T> acc = operands[0];
  std::string acc_letters = eq.operands[0];
  for (std::size_t i = 1; i < operands.size(); ++i) {
    std::string keep = eq.output;
    if (i + 1 < operands.size()) {
      std::string later = eq.output;
      for (std::size_t j = i + 1; j < operands.size(); ++j) later += eq.operands[j];
      keep.clear();
      for (char c : acc_letters + eq.operands[i])
        if (later.find(c) != std::string::npos && keep.find(c) == std::string::npos) keep.push_back(c);
    }
    acc = einsum_node(kernels::EinsumEquation{{acc_letters, eq.operands[i]}, keep},
                      std::vector<Tensor<T>>{acc, operands[i]}, sizes, where);
    acc_letters = keep;
  }
  return acc;
}

#define TAPEGRAD_INSTANTIATE_LINALG(T)                                  \
  template Tensor<T> matmul(const Tensor<T>&, const Tensor<T>&, CallSite);                          \
  template Tensor<T> linear(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, CallSite);       \
  template Tensor<T> einsum(std::string_view, const std::vector<Tensor<T>>&, CallSite);
TAPEGRAD_INSTANTIATE_LINALG(float)
TAPEGRAD_INSTANTIATE_LINALG(double)

}  // namespace tapegrad
