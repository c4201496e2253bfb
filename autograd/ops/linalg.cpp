#include "autograd/ops/linalg.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "autograd/ops/detail/dims.h"
#include "autograd/core/record.h"
#include "autograd/kernels/gemm/blas.h"
#include "autograd/kernels/layout/broadcast.h"
#include "autograd/kernels/einsum/einsum_plan.h"
#include "autograd/kernels/einsum/einsum_subscripts.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/base/matmul_precision.h"
#include "autograd/ops/shape.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

// Columns per task of linear's bias gradient.
constexpr std::size_t kBiasColumns = 256;

// ---- bf16 copies, made once ----

using RoundedCopies = kernels::ReuseRoundedSource::Copies;

// In bf16 mode (base/matmul_precision.h) a product rounds its operands to bf16. Its backward reads the
// same operands again, and its output gradient g twice (once per operand gradient): inside this
// scope over those tensors' values each is rounded once. A forward hands the copies it made to its
// backward (`kept`); they are still the operands' own, since backward first checks that no input
// was modified since. Null or undefined tensors are skipped. Nothing in float32 or float64.
template <class T>
std::optional<kernels::ReuseRoundedSource> round_once(std::initializer_list<const Tensor<T>*> tensors,
                                                      RoundedCopies kept = {}) {
  if constexpr (std::is_same_v<T, float>) {
    if (matmul_precision() == MatmulPrecision::kBfloat16) {
      std::vector<std::span<const float>> sources;
      for (const Tensor<T>* t : tensors)
        if (t && t->defined()) sources.emplace_back(t->value().data(), t->value().size());
      return std::optional<kernels::ReuseRoundedSource>(std::in_place, std::move(sources), std::move(kept));
    }
  }
  return std::nullopt;
}

// The copies a forward made inside `scope`, for its backward.
RoundedCopies copies_made(const std::optional<kernels::ReuseRoundedSource>& scope) {
  return scope ? scope->copies() : RoundedCopies{};
}

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
  const std::size_t lda = ta ? m : k, ldb = tb ? k : n, count = shape_product(batch);
  // No element to write: return before looping over a batch that may be huge (an empty b of
  // [2^30, k, 0] made 2^30 empty products, seconds of nothing).
  if (count == 0 || m == 0 || n == 0) return;
  // B shared by the whole batch and A an unbroadcast stack of untransposed matrices: one product
  // with count * m rows (split into row blocks by kernels::gemm) instead of count small ones.
  if (shape_product(b_batch) == 1 && shape_product(a_batch) == count && !ta) {
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

// A batched matrix product summed over part of its batch: out[b'] = sum of op(x[b]) op(y[b]) over
// the indices b of `batch` that broadcast from b' (an index of out_batch). x holds
// [x_batch..., rows, inner] matrices ([.., inner, rows] read transposed when x_t), y holds
// [y_batch..., inner, cols] ([.., cols, inner] when y_t), out [out_batch..., rows, cols]; all read
// from the data, so any shape with those elements fits (a 1-D matmul operand, linear's leading
// axes folded into rows). matmul is one with out_batch = batch, and the gradient of either operand
// of one is another (accumulate_product_gradients): products all the way up, each reading its
// operands transposed in place by a BLAS flag.
struct MatrixProduct {
  Shape x_batch;
  bool x_t = false;
  Shape y_batch;
  bool y_t = false;
  std::size_t rows = 1, cols = 1, inner = 1;
  Shape batch, out_batch;
  const char* op = "matmul";  // the op whose backward this is, for error messages
};

// The product's value, given `shape`. `workspace` names the [batch, rows, cols] array computed
// before the sum over the batch (it can dwarf every input) when it is refused.
template <class T>
xt::xarray<T> product_value(const T* x, const T* y, const MatrixProduct& p, const Shape& shape, const char* workspace) {
  const std::size_t count = shape_product(p.batch);
  // x^T y summed over the whole batch, neither operand broadcast: the sum is folded into one
  // product, x' [count * inner, rows]^T y' [count * inner, cols].
  if (p.x_t && !p.y_t && shape_product(p.out_batch) == 1 && shape_product(p.x_batch) == count && shape_product(p.y_batch) == count) {
    auto out = xt::xarray<T>::from_shape(Shape{p.rows, p.cols});
    kernels::gemm(true, false, p.rows, p.cols, count * p.inner, T(1), x, p.rows, y, p.cols, T(0), out.data(), p.cols);
    out.reshape(shape);
    return out;
  }
  Shape full_shape = p.batch, own = p.out_batch;
  for (Shape* s : {&full_shape, &own}) s->insert(s->end(), {p.rows, p.cols});
  auto full = xt::xarray<T>::from_shape(allocatable(full_shape, sizeof(T), p.op, workspace));
  broadcast_gemm(x, p.x_batch, p.x_t, y, p.y_batch, p.y_t, p.rows, p.cols, p.inner, p.batch, full.data());
  if (shape_product(own) != full.size()) full = kernels::sum_to(full, own);
  full.reshape(shape);
  return full;
}

constexpr const char* kHigherOrderWorkspace = "the workspace of a higher-order gradient";

template <class T>
void accumulate_product_gradients(const Tensor<T>& x, const Tensor<T>& y, const MatrixProduct& p, const Tensor<T>& g,
                                  const char* x_workspace, const char* y_workspace, CallSite where);

// A product as a recorded op (the gradient of a matmul's or a linear's operand), of `shape`.
template <class T>
Tensor<T> product_op(const Tensor<T>& x, const Tensor<T>& y, const MatrixProduct& p, const Shape& shape,
                     const char* workspace, CallSite where) {
  return make_result("matmul_backward", where, product_value(x.value().data(), y.value().data(), p, shape, workspace),
                     should_record(x, y), [x, y, p, where, precision = matmul_precision()](const Tensor<T>& g) {
                       const MatmulPrecisionGuard as_forward(precision);
                       const auto rounded_once = round_once<T>({&g, &x, &y});
                       accumulate_product_gradients(x, y, p, g, kHigherOrderWorkspace, kHigherOrderWorkspace, where);
                     });
}

// Adds the gradients of the operands x and y of product p, given g, the gradient of its output:
// d op(x) = g op(y)^T and d op(y) = op(x)^T g, each summed to its operand's batch axes. For a
// transposed operand the product is transposed instead ((g op(y)^T)^T = op(y) g^T), so each
// gradient is again a product of g and the other operand with transpose flags, never a copy.
template <class T>
void accumulate_product_gradients(const Tensor<T>& x, const Tensor<T>& y, const MatrixProduct& p, const Tensor<T>& g,
                                  const char* x_workspace, const char* y_workspace, CallSite where) {
  if (x.requires_grad()) {
    if (!p.x_t) {
      const MatrixProduct dx{p.out_batch, false, p.y_batch, !p.y_t, p.rows, p.inner, p.cols, p.batch, p.x_batch, p.op};
      accumulate(x, product_op(g, y, dx, x.shape(), x_workspace, where));
    } else {
      const MatrixProduct dx{p.y_batch, p.y_t, p.out_batch, true, p.inner, p.rows, p.cols, p.batch, p.x_batch, p.op};
      accumulate(x, product_op(y, g, dx, x.shape(), x_workspace, where));
    }
  }
  if (y.requires_grad()) {
    if (!p.y_t) {
      const MatrixProduct dy{p.x_batch, !p.x_t, p.out_batch, false, p.inner, p.cols, p.rows, p.batch, p.y_batch, p.op};
      accumulate(y, product_op(x, g, dy, y.shape(), y_workspace, where));
    } else {
      const MatrixProduct dy{p.out_batch, true, p.x_batch, p.x_t, p.cols, p.inner, p.rows, p.batch, p.y_batch, p.op};
      accumulate(y, product_op(g, x, dy, y.shape(), y_workspace, where));
    }
  }
}

// linear's bias gradient: g [rows, out] summed over its rows, an op of its own so that the sum
// keeps its kernel. Column blocks in parallel; within one, rows are added in order with a
// contiguous (vectorised) inner loop: the same bits at any thread count. Its backward broadcasts
// the gradient back over the rows.
template <class T>
Tensor<T> bias_gradient(const Tensor<T>& g, std::size_t rows, std::size_t out_features, CallSite where) {
  xt::xarray<T> db = xt::zeros<T>(Shape{out_features});
  T* sums = db.data();
  const T* grad = g.value().data();
  kernels::parallel_items((out_features + kBiasColumns - 1) / kBiasColumns, rows * kBiasColumns,
                          [=](std::size_t first_block, std::size_t end_block) {
                            const std::size_t begin = first_block * kBiasColumns;
                            const std::size_t end = std::min(out_features, end_block * kBiasColumns);
                            for (std::size_t r = 0; r < rows; ++r) {
                              const T* row = grad + r * out_features;
                              for (std::size_t j = begin; j < end; ++j) sums[j] += row[j];
                            }
                          });
  return make_result("linear_bias_backward", where, std::move(db), should_record(g),
                     [g = detail::edge(g)](const Tensor<T>& u) {
                       accumulate(g, expand(u, detail::as_dims(g.shape())));
                     });
}

// ---- einsum ----

// One recorded einsum over one or two operands (`op` names it in the tape). Its backward is
// einsum again, recorded: for operand i, d operand_i = einsum(output, other operand -> operand_i's
// letters), with the sizes of letters found in operand_i only (summed away in the forward) taken
// from `sizes`; a letter repeated in operand_i gets the gradient on its diagonal. That gradient is
// an einsum of the same kind (output-only letters broadcast, repeated output letters written on
// their diagonal), whose gradients are einsums again.
template <class T>
Tensor<T> einsum_node(const char* op, const kernels::EinsumEquation& eq, const std::vector<Tensor<T>>& operands,
                      const kernels::EinsumSizes& sizes, CallSite where) {
  std::vector<const xt::xarray<T>*> values;
  for (const auto& x : operands) values.push_back(&x.value());
  const Tensor<T>* second = operands.size() == 2 ? &operands[1] : nullptr;
  RoundedCopies forward_copies;
  xt::xarray<T> out = [&] {
    const auto rounded_once = round_once<T>({&operands[0], second});
    xt::xarray<T> value = kernels::einsum(eq, values, sizes);
    forward_copies = copies_made(rounded_once);
    return value;
  }();
  return make_result(op, where, std::move(out), detail::should_record_any(operands),
                     [eq, operands, sizes, where, precision = matmul_precision(),
                      forward_copies = std::move(forward_copies)](const Tensor<T>& g) {
                       const MatmulPrecisionGuard as_forward(precision);
                       const Tensor<T>* second = operands.size() == 2 ? &operands[1] : nullptr;
                       const auto rounded_once = round_once<T>({&g, &operands[0], second}, forward_copies);
                       for (std::size_t i = 0; i < operands.size(); ++i) {
                         if (!operands[i].requires_grad()) continue;
                         const bool pair = operands.size() == 2;
                         kernels::EinsumEquation grad_eq{{eq.output}, eq.operands[i]};
                         if (pair) grad_eq.operands.push_back(eq.operands[1 - i]);
                         const auto grad_operands = pair ? std::vector<Tensor<T>>{g, operands[1 - i]}
                                                         : std::vector<Tensor<T>>{g};
                         accumulate(operands[i], einsum_node("einsum_backward", grad_eq, grad_operands, sizes, where));
                       }
                     });
}

}  // namespace

template <class T>
Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b, CallSite where) {
  require_defined(a, "matmul", "a");
  require_defined(b, "matmul", "b");
  const MatmulDims d = matmul_dims(a.shape(), b.shape());
  auto out = xt::xarray<T>::from_shape(allocatable(d.out_shape, sizeof(T), "matmul", "the output"));
  RoundedCopies forward_copies;
  {
    const auto rounded_once = round_once<T>({&a, &b});
    broadcast_gemm(a.value().data(), d.a_batch, false, b.value().data(), d.b_batch, false, d.m, d.n, d.k, d.batch,
                   out.data());
    forward_copies = copies_made(rounded_once);
  }
  const MatrixProduct p{d.a_batch, false, d.b_batch, false, d.m, d.n, d.k, d.batch, d.batch};
  return make_result("matmul", where, std::move(out), should_record(a, b),
                     [a, b, p, where, precision = matmul_precision(),
                      forward_copies = std::move(forward_copies)](const Tensor<T>& g) {
                       const MatmulPrecisionGuard as_forward(precision);
                       const auto rounded_once = round_once<T>({&g, &a, &b}, forward_copies);
                       accumulate_product_gradients(a, b, p, g, "the backward's workspace for a's gradient",
                                                    "the backward's workspace for b's gradient", where);
                     });
}

template <class T>
Tensor<T> linear(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias, CallSite where) {
  require_defined(x, "linear", "x");
  require_defined(weight, "linear", "weight");
  const auto shapes = [&] {
    return "x " + x.describe() + ", weight " + weight.describe() + (bias.defined() ? ", bias " + bias.describe() : "");
  };
  if (weight.ndim() != 2 || x.ndim() == 0 || x.size(-1) != weight.size(1)) {
    throw ShapeError("linear: weight must be [out, in] and x [..., in], got " + shapes());
  }
  const std::size_t in = weight.size(1), out_features = weight.size(0);
  const Shape x_shape = x.shape();
  const std::size_t rows = shape_product(Shape(x_shape.begin(), x_shape.end() - 1));
  if (bias.defined() && (bias.ndim() != 1 || bias.size(0) != out_features)) {
    throw ShapeError("linear: bias must be [" + std::to_string(out_features) + "] (weight's out), got " + shapes());
  }
  Shape out_shape = x.shape();
  out_shape.back() = out_features;
  auto y = xt::xarray<T>::from_shape(allocatable(out_shape, sizeof(T), "linear", "the output"));
  T beta = T(0);
  if (bias.defined()) {
    const T* b = bias.value().data();
    T* out = y.data();
    kernels::parallel_items(rows, out_features, [=](std::size_t begin, std::size_t end) {
      for (std::size_t r = begin; r < end; ++r) std::copy_n(b, out_features, out + r * out_features);
    });
    beta = T(1);
  }
  RoundedCopies forward_copies;
  {
    const auto rounded_once = round_once<T>({&x, &weight});
    kernels::gemm(false, true, rows, out_features, in, T(1), x.value().data(), in, weight.value().data(), in, beta,
                  y.data(), out_features);
    forward_copies = copies_made(rounded_once);
  }
  // As a product: x [rows, in] times weight [out, in] read transposed.
  const MatrixProduct p{{}, false, {}, true, rows, out_features, in, {}, {}, "linear"};
  return make_result("linear", where, std::move(y), should_record(x, weight, bias),
                     [x, weight, bias = detail::edge(bias), p, where, precision = matmul_precision(),
                      forward_copies = std::move(forward_copies)](const Tensor<T>& g) {
                       const MatmulPrecisionGuard as_forward(precision);
                       const auto rounded_once = round_once<T>({&g, &x, &weight}, forward_copies);
                       accumulate_product_gradients(x, weight, p, g, "the backward's workspace for x's gradient",
                                                    "the backward's workspace for weight's gradient", where);
                       if (bias.requires_grad()) {
                         accumulate(bias, bias_gradient(g, p.rows, p.cols, where));
                       }
                     });
}

template <class T>
Tensor<T> einsum(std::string_view subscripts, const std::vector<Tensor<T>>& operands, CallSite where) {
  const std::string op = "einsum(\"" + std::string(subscripts) + "\")";
  for (std::size_t i = 0; i < operands.size(); ++i)
    require_defined(operands[i], op, "operand " + std::to_string(i));
  std::vector<Shape> shapes;
  for (const auto& x : operands) shapes.push_back(x.shape());
  const kernels::ResolvedEinsum resolved = kernels::resolve_einsum(subscripts, shapes);
  const kernels::EinsumEquation& eq = resolved.eq;
  const kernels::EinsumSizes& sizes = resolved.sizes;
  // An operand's size-1 axes that broadcast leave it through a recorded reshape (same elements,
  // same order), whose gradient reshapes back: the planner sees only exact shapes.
  std::vector<Tensor<T>> xs = operands;
  for (std::size_t k = 0; k < xs.size(); ++k)
    if (resolved.shapes[k] != shapes[k]) xs[k] = reshape(xs[k], detail::as_dims(resolved.shapes[k]), where);
  if (xs.size() <= 2) return einsum_node("einsum", eq, xs, sizes, where);
  // Left to right, one recorded pair at a time; each intermediate keeps the letters that a later
  // operand or the output still needs, in order of first appearance.
  Tensor<T> acc = xs[0];
  std::string acc_letters = eq.operands[0];
  for (std::size_t i = 1; i < xs.size(); ++i) {
    std::string keep = eq.output;
    if (i + 1 < xs.size()) {
      std::string later = eq.output;
      for (std::size_t j = i + 1; j < xs.size(); ++j) later += eq.operands[j];
      keep.clear();
      for (char c : acc_letters + eq.operands[i])
        if (later.find(c) != std::string::npos && keep.find(c) == std::string::npos) keep.push_back(c);
    }
    acc = einsum_node("einsum", kernels::EinsumEquation{{acc_letters, eq.operands[i]}, keep},
                      std::vector<Tensor<T>>{acc, xs[i]}, sizes, where);
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
