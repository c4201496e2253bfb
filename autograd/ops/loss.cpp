#include "autograd/ops/loss.h"

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "autograd/base/checks.h"
#include "autograd/core/record.h"
#include "autograd/kernels/simd/chunked_sum.h"
#include "autograd/kernels/layout/indices.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/kernels/simd/simd_span.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/masking.h"
#include "autograd/ops/pointwise.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/softmax.h"
#include "autograd/core/tape.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

const char* reduction_name(Reduction reduction) {
  switch (reduction) {
    case Reduction::None: return "None";
    case Reduction::Mean: return "Mean";
    case Reduction::Sum: return "Sum";
    case Reduction::BatchMean: return "BatchMean";
  }
  return "?";
}

void reject_batchmean(Reduction reduction, const char* op, const char* input_name, const Shape& shape) {
  if (reduction == Reduction::BatchMean) {
    throw ValueError(std::string(op) + ": reduction " + reduction_name(reduction) + " (" + input_name + " " +
                     format_shape(shape) + ") is only defined for kl_div; use Mean, Sum or None");
  }
}

// out[i] = f(i) for every element of a new array of `shape`, in parallel. Each element is written
// by one task, so the bits do not depend on the split.
template <class T, class F>
xt::xarray<T> generate(const Shape& shape, const F& f) {
  xt::xarray<T> out = xt::xarray<T>::from_shape(shape);
  T* o = out.data();
  kernels::parallel_items(out.size(), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) o[i] = f(i);
  });
  return out;
}

// The loss value from the unreduced losses: themselves for None, otherwise their sum divided by
// `divisor` as a 0-d array. A divisor of 0 (a Mean over nothing: no elements, every target
// ignored, or class weights of the kept targets summing to 0) gives 0 rather than PyTorch's NaN,
// so one empty batch cannot poison a training run.
template <class T>
xt::xarray<T> reduce(xt::xarray<T> losses, Reduction reduction, T divisor) {
  if (reduction == Reduction::None) return losses;
  const T* l = losses.data();
  const T total = kernels::chunked_sum<T>(losses.size(), [l](std::size_t i) { return l[i]; });
  return xt::xarray<T>(divisor == T(0) ? T(0) : total / divisor);
}

// dL/d(unreduced loss i) given the gradient g of the loss value: g[i] for None, g / divisor for a
// reduction (0 when the divisor is 0, matching reduce()).
template <class T>
class Upstream {
 public:
  Upstream(const xt::xarray<T>& g, Reduction reduction, T divisor)
      : g_(g.data()),
        per_element_(reduction == Reduction::None),
        scale_(per_element_ || divisor == T(0) ? T(0) : g.data()[0] / divisor) {}
  T operator[](std::size_t i) const { return per_element_ ? g_[i] : scale_; }

 private:
  const T* g_;
  bool per_element_;
  T scale_;
};

// Upstream for backward formulas: dL/d(unreduced losses) as a tensor that broadcasts against
// them, g itself for None, the 0-d g / divisor otherwise (a constant 0 when the divisor is 0).
template <class T>
Tensor<T> spread(const Tensor<T>& g, Reduction reduction, T divisor) {
  if (reduction == Reduction::None) return g;
  if (divisor == T(0)) return Tensor<T>(xt::xarray<T>(T(0)));
  return div(g, Tensor<T>(xt::xarray<T>(divisor)));
}

// spread's adjoint: the gradient of g given w, that of the unreduced losses.
template <class T>
Tensor<T> unspread(const Tensor<T>& w, Reduction reduction, T divisor) {
  return reduction == Reduction::None ? w : spread(sum(w), reduction, divisor);
}

// Divisor of the pointwise losses (kl_div, mse_loss): every element for Mean, the first axis for
// BatchMean (1 for a 0-d input, as PyTorch).
template <class T>
T pointwise_divisor(Reduction reduction, const Shape& shape, std::size_t numel) {
  if (reduction == Reduction::Mean) return static_cast<T>(numel);
  if (reduction == Reduction::BatchMean) return shape.empty() ? T(1) : static_cast<T>(shape[0]);
  return T(1);
}

template <class T>
void require_same_shape(const Tensor<T>& a, const Tensor<T>& b, const char* op, const char* a_name,
                        const char* b_name) {
  require_defined(a, op, a_name);
  require_defined(b, op, b_name);
  if (a.shape() != b.shape()) {
    throw ShapeError(std::string(op) + ": " + a_name + " " + format_shape(a.shape()) + " and " + b_name + " " +
                     format_shape(b.shape()) + " must have the same shape");
  }
}

// PyTorch's class axis: input [C] with a 0-d target, or [N, C, d1, ...] with targets [N, d1, ...].
// The input is seen as N * inner lanes of C classes (inner = d1 * ...); the lane of the target at
// flat position r starts at (r / inner) * C * inner + r % inner and steps by inner.
struct ClassAxis {
  kernels::AxisLayout layout;  // outer = N, n = C, inner
  std::size_t rows = 0;        // N * inner = number of targets
  std::size_t counted = 0;     // targets other than ignore_index: the divisor of Mean

  std::size_t lane_start(std::size_t r) const { return (r / layout.inner) * layout.n * layout.inner + r % layout.inner; }
  // The target position of the first lane of a lane block starting at element `offset`.
  std::size_t row_of(std::size_t offset) const {
    const std::size_t span = layout.n * layout.inner;
    return (offset / span) * layout.inner + offset % span;
  }
};

// Validates the input and targets shapes and every target value.
ClassAxis check_class_targets(const Shape& input, const IndexArray& targets, Index ignore_index, const char* op,
                              const char* input_name) {
  const Shape target_shape(targets.shape().begin(), targets.shape().end());
  if (input.empty()) {
    throw ShapeError(std::string(op) + ": " + input_name + " [] has no class axis; expected [C], [N, C] or " +
                     "[N, C, d1, ...] (targets " + format_shape(target_shape) + ")");
  }
  const std::size_t class_axis = input.size() == 1 ? 0 : 1;
  Shape expected = input;
  expected.erase(expected.begin() + static_cast<std::ptrdiff_t>(class_axis));
  if (target_shape != expected) {
    throw ShapeError(std::string(op) + ": targets " + format_shape(target_shape) + " do not fit " + input_name + " " +
                     format_shape(input) + " (expected targets " + format_shape(expected) + ")");
  }
  ClassAxis axis{kernels::axis_layout(input, class_axis), targets.size(), 0};
  const auto classes = static_cast<Index>(axis.layout.n);
  for (std::size_t r = 0; r < axis.rows; ++r) {
    const Index t = targets.data()[r];
    if (t == ignore_index) continue;
    if (t < 0 || t >= classes) {
      throw ValueError(std::string(op) + ": target " + std::to_string(t) + " at position " +
                       format_shape(kernels::unravel_index(r, target_shape)) + " of targets " +
                       format_shape(target_shape) + " is outside [0, " + std::to_string(classes) + ") for " +
                       input_name + " " + format_shape(input) + " and is not ignore_index " +
                       std::to_string(ignore_index));
    }
    ++axis.counted;
  }
  return axis;
}

// The class weights: undefined, or [C] (see CrossEntropyOptions::weight), and constant unless
// `differentiable` (probability targets, where PyTorch's composite differentiates them).
template <class T>
void check_class_weight(const Tensor<T>& weight, std::size_t classes, const Shape& input, const char* op,
                        const char* input_name, bool differentiable = false) {
  if (!weight.defined()) return;
  if (weight.shape() != Shape{classes}) {
    throw ShapeError(std::string(op) + ": weight " + format_shape(weight.shape()) + " must be [" +
                     std::to_string(classes) + "], one weight per class of " + input_name + " " + format_shape(input));
  }
  if (!differentiable && weight.requires_grad() && is_recording()) {
    throw ValueError(std::string(op) + ": weight " + format_shape(weight.shape()) +
                     " requires a gradient, which PyTorch 1.13 does not define either; pass weight.detach() (" +
                     input_name + " " + format_shape(input) + ")");
  }
}

// Mean's divisor: the class weights of the kept targets summed in target order, or their count
// without weights. Sum and None divide by 1.
template <class T>
T class_divisor(Reduction reduction, const ClassAxis& axis, const IndexArray& targets, Index ignore,
                const Tensor<T>& weight) {
  if (reduction != Reduction::Mean) return T(1);
  if (!weight.defined()) return static_cast<T>(axis.counted);
  const T* w = weight.value().data();
  T total(0);
  for (std::size_t r = 0; r < axis.rows; ++r) {
    if (targets.data()[r] != ignore) total += w[targets.data()[r]];
  }
  return total;
}

// Class weights as the kernels see them: null for none (every weight 1), and their sum W.
template <class T>
struct ClassWeights {
  const T* w = nullptr;
  T total = T(0);

  static ClassWeights of(const Tensor<T>& weight) {
    if (!weight.defined()) return {};
    const T* w = weight.value().data();
    T total(0);
    for (std::size_t c = 0; c < weight.numel(); ++c) total += w[c];
    return {w, total};
  }
};

// What backward needs of one target's row besides the logits: the shift m subtracted before exp and
// log_sum = log sum_c exp(x_c - m), so that p_c = exp((x_c - m) - log_sum). They are kept apart
// because m + log_sum rounds: with logits near 1e7 in float the sum loses log_sum entirely.
template <class T>
struct ShiftAndLogSum {
  T* shift;
  T* log_sum;
};

// The shift of a row with maximum m: m itself, or 0 for a row of only -inf (where x - m would be
// -inf - -inf = NaN). After it sum_c exp(x_c - shift) is >= 1 for every row with a finite entry
// (the maximum contributes exp(0)) and exactly 0 for a fully masked row.
template <class T>
T shift_of(T m) {
  return m == -std::numeric_limits<T>::infinity() ? T(0) : m;
}

// sum_c exp(x_c - m) and sum_c (x_c - m) over one contiguous row, in one xsimd pass.
template <class T>
std::pair<T, T> shifted_sums(const T* row, std::size_t n, T m) {
  using Batch = kernels::simd::Batch<T>;
  Batch exps(T(0)), diffs(T(0));
  std::size_t i = 0;
  for (; i + Batch::size <= n; i += Batch::size) {
    const Batch d = Batch::load_unaligned(row + i) - m;
    exps += xsimd::exp(d);
    diffs += d;
  }
  std::pair<T, T> out{xsimd::hadd(exps), xsimd::hadd(diffs)};
  for (; i < n; ++i) {
    out.first += std::exp(row[i] - m);
    out.second += row[i] - m;
  }
  return out;
}

// The loss of one target through its log-softmax, log p_c = (x_c - m) - log_sum:
//   loss = (1 - s)(-log p_t) + s * mean_c(-log p_c) = log_sum - (1 - s)(x_t - m) - s * mean_c(x_c - m).
// Nothing is subtracted from a value near the logits' size, so large logits keep their precision.
// A -inf logit has p_c = 0: it adds nothing to the first term, and makes the smoothing term inf
// (as PyTorch 1.13). A target whose own logit is -inf gives inf. Each term is formed only when its
// weight is not 0, since 0 * -inf would be NaN (s = 0 with any -inf logit; s = 1 with a -inf
// target, where PyTorch gives NaN and the loss here is the smoothing term's inf). A fully masked
// row (every logit -inf, sum_exp == 0) gives inf where PyTorch gives NaN, and no gradient
// (softmax.h's rule for such rows).
template <class T>
T row_loss(T x_t_shifted, T sum_exp, T sum_shifted, T log_sum, T smoothing, std::size_t classes) {
  if (sum_exp == T(0)) return std::numeric_limits<T>::infinity();
  T loss = log_sum;
  if (smoothing != T(1)) loss -= (T(1) - smoothing) * x_t_shifted;
  if (smoothing != T(0)) loss -= smoothing * sum_shifted / static_cast<T>(classes);
  return loss;
}

// row_loss with class weights w, W = sum_c w_c:
//   (1 - s) w_t (-log p_t) + s / C * sum_c w_c (-log p_c)
//     = (1 - s) w_t (log_sum - (x_t - m)) + s / C * (W log_sum - sum_c w_c (x_c - m)),
// each term formed only when its factor 1 - s or s is not 0, as in row_loss.
template <class T>
T weighted_row_loss(T x_t_shifted, T w_t, T sum_exp, T weighted_shifted, T log_sum, T smoothing,
                    const ClassWeights<T>& weights, std::size_t classes) {
  if (sum_exp == T(0)) return std::numeric_limits<T>::infinity();
  T loss(0);
  if (smoothing != T(1)) loss += (T(1) - smoothing) * w_t * (log_sum - x_t_shifted);
  if (smoothing != T(0)) loss += smoothing / static_cast<T>(classes) * (weights.total * log_sum - weighted_shifted);
  return loss;
}

// The fused cross-entropy row kernel over one block of `width` lanes (see kernels::for_each_lane_block):
// one pass for the maximum, one for sum_c exp(x_c - m) and sum_c (x_c - m), then row_loss.
// Ignored lanes get loss 0.
template <class T, class Stride, class Width>
void cross_entropy_lanes(const T* x, std::size_t offset, Stride stride, Width width, std::size_t classes,
                         std::size_t first_row, const Index* targets, Index ignore_index, T smoothing,
                         const ClassWeights<T>& weights, T* loss, ShiftAndLogSum<T> stats) {
  T shift[kernels::kLaneBlock], sum_exp[kernels::kLaneBlock], sum_shifted[kernels::kLaneBlock];
  if constexpr (std::is_same_v<Width, kernels::One>) {  // one contiguous row: xsimd passes
    const T* row = x + offset;
    shift[0] = shift_of(kernels::simd::max(row, classes));
    std::tie(sum_exp[0], sum_shifted[0]) = shifted_sums(row, classes, shift[0]);
  } else {
    for (std::size_t j = 0; j < width; ++j) {
      shift[j] = -std::numeric_limits<T>::infinity();
      sum_exp[j] = T(0);
      sum_shifted[j] = T(0);
    }
    for (std::size_t c = 0; c < classes; ++c) {
      const T* xc = x + offset + c * stride;
      for (std::size_t j = 0; j < width; ++j) shift[j] = std::max(shift[j], xc[j]);
    }
    for (std::size_t j = 0; j < width; ++j) shift[j] = shift_of(shift[j]);
    for (std::size_t c = 0; c < classes; ++c) {
      const T* xc = x + offset + c * stride;
      for (std::size_t j = 0; j < width; ++j) {
        sum_exp[j] += std::exp(xc[j] - shift[j]);
        sum_shifted[j] += xc[j] - shift[j];
      }
    }
  }
  T weighted_shifted[kernels::kLaneBlock];  // sum_c w_c (x_c - m): the smoothing term with weights
  if (weights.w && smoothing != T(0)) {
    for (std::size_t j = 0; j < width; ++j) weighted_shifted[j] = T(0);
    for (std::size_t c = 0; c < classes; ++c) {
      const T* xc = x + offset + c * stride;
      for (std::size_t j = 0; j < width; ++j) weighted_shifted[j] += weights.w[c] * (xc[j] - shift[j]);
    }
  }
  for (std::size_t j = 0; j < width; ++j) {
    const std::size_t r = first_row + j;
    const Index t = targets[r];
    stats.shift[r] = shift[j];
    stats.log_sum[r] = std::log(sum_exp[j]);
    if (t == ignore_index) {
      loss[r] = T(0);
      continue;
    }
    const T x_t = x[offset + static_cast<std::size_t>(t) * stride + j];
    loss[r] = weights.w ? weighted_row_loss(x_t - shift[j], weights.w[t], sum_exp[j], weighted_shifted[j], stats.log_sum[r],
                                            smoothing, weights, classes)
                        : row_loss(x_t - shift[j], sum_exp[j], sum_shifted[j], stats.log_sum[r], smoothing, classes);
  }
}

// Backward of cross_entropy_lanes: dx_c = u * (a p_c - b_c - hit [c == t]), p_c = exp((x_c - m) - log_sum),
// with a = (1 - s) w_t + s W / C, b_c = s w_c / C and hit = (1 - s) w_t (without weights a = 1,
// b_c = s / C, hit = 1 - s); 0 for ignored lanes and fully masked rows (log_sum == -inf).
template <class T, class Stride, class Width>
void cross_entropy_backward_lanes(const T* x, T* dx, std::size_t offset, Stride stride, Width width,
                                  std::size_t classes, std::size_t first_row, const Index* targets, Index ignore_index,
                                  T smoothing, const ClassWeights<T>& weights, ShiftAndLogSum<const T> stats,
                                  const Upstream<T>& upstream) {
  constexpr T minus_inf = -std::numeric_limits<T>::infinity();
  const T uniform = smoothing / static_cast<T>(classes);
  const auto b = [&](std::size_t c) { return weights.w ? smoothing * weights.w[c] / static_cast<T>(classes) : uniform; };
  T u[kernels::kLaneBlock], a[kernels::kLaneBlock], hit[kernels::kLaneBlock];
  for (std::size_t j = 0; j < width; ++j) {
    const std::size_t r = first_row + j;
    const Index t = targets[r];
    u[j] = t == ignore_index || stats.log_sum[r] == minus_inf ? T(0) : upstream[r];
    const T w_t = weights.w && t != ignore_index ? weights.w[t] : T(1);
    a[j] = weights.w ? (T(1) - smoothing) * w_t + uniform * weights.total : T(1);
    hit[j] = (T(1) - smoothing) * w_t;
  }
  if constexpr (std::is_same_v<Width, kernels::One>) {  // one contiguous row: xsimd exp
    const Index t = targets[first_row];
    T* d = dx + offset;
    if (u[0] == T(0)) {
      std::fill_n(d, classes, T(0));
      return;
    }
    const T* row = x + offset;
    const T shift = stats.shift[first_row], log_sum = stats.log_sum[first_row];
    for (std::size_t c = 0; c < classes; ++c) d[c] = (row[c] - shift) - log_sum;
    kernels::simd::exp_inplace(d, classes);
    const T p_t = d[t];
    for (std::size_t c = 0; c < classes; ++c) d[c] = u[0] * (a[0] * d[c] - b(c));
    d[t] = u[0] * (a[0] * p_t - b(static_cast<std::size_t>(t)) - hit[0]);
    return;
  }
  for (std::size_t c = 0; c < classes; ++c) {
    const std::size_t at = offset + c * stride;
    const T b_c = b(c);
    for (std::size_t j = 0; j < width; ++j) {
      const std::size_t r = first_row + j;
      const T h = targets[r] == static_cast<Index>(c) ? hit[j] : T(0);
      // The branch keeps an ignored lane at exactly 0 even if its logits overflow exp().
      dx[at + j] = u[j] == T(0)
                       ? T(0)
                       : u[j] * (a[j] * std::exp((x[at + j] - stats.shift[r]) - stats.log_sum[r]) - b_c - h);
    }
  }
}

// The targets of cross_entropy and nll_loss, shared by the loss's formula and its backward op's
// (a backward does not copy them).
using Targets = std::shared_ptr<const IndexArray>;

// cross_entropy's backward (the kernel above) as an op of its own. With u the upstream of a
// target's row (0 when it is ignored or its row fully masked: live = 0), p = softmax over the
// class axis, differentiable in the logits, and a, b_c, hit as in the kernel, its backward for a
// gradient v of dx is
//   d/dlogits = u * a * p * (v - sum_c v_c p_c),
//   d/dg      = unspread(live * (a * sum_c v_c p_c - sum_c b_c v_c - hit * v_t)).
template <class T>
Tensor<T> cross_entropy_backward(const Tensor<T>& g, const Tensor<T>& logits, const Targets& targets,
                                 const ClassAxis& axis, Index ignore, T smoothing, const Tensor<T>& weight,
                                 ShiftAndLogSum<const T> stats, Reduction reduction, T divisor,
                                 CallSite where = std::source_location::current()) {
  const Upstream<T> upstream(g.value(), reduction, divisor);
  const ClassWeights<T> weights = ClassWeights<T>::of(weight);
  xt::xarray<T> dx = xt::xarray<T>::from_shape(logits.value().shape());
  if (dx.size() > 0) {
    kernels::for_each_lane_block(axis.layout, [&](std::size_t offset, auto stride, auto width) {
      cross_entropy_backward_lanes(logits.value().data(), dx.data(), offset, stride, width, axis.layout.n,
                                   axis.row_of(offset), targets->data(), ignore, smoothing, weights, stats, upstream);
    });
  }
  return make_result(
      "cross_entropy_backward", where, std::move(dx), should_record(g, logits),
      [g, logits, targets, ignore, smoothing, weight, classes = axis.layout.n, reduction, divisor](const Tensor<T>& v) {
        const std::size_t class_axis = logits.ndim() == 1 ? 0 : 1;
        const auto axis = static_cast<Index>(class_axis);
        const Tensor<T> p = softmax(logits, axis);
        const ClassWeights<T> weights = ClassWeights<T>::of(weight);
        const T uniform = smoothing / static_cast<T>(classes);
        // softmax gives a fully masked row zeros, so its probabilities sum to 0.
        const xt::xarray<T> mass = xt::sum(p.value(), {class_axis});
        xt::xarray<T> live_rows = xt::xarray<T>::from_shape(mass.shape());
        xt::xarray<T> a_rows = xt::ones<T>(mass.shape());  // a per row (1 without weights)
        for (std::size_t r = 0; r < live_rows.size(); ++r) {
          const Index t = targets->data()[r];
          live_rows.data()[r] = t != ignore && mass.data()[r] > T(0) ? T(1) : T(0);
          if (weights.w && t != ignore) a_rows.data()[r] = (T(1) - smoothing) * weights.w[t] + uniform * weights.total;
        }
        const Tensor<T> live(std::move(live_rows));
        const Tensor<T> a(std::move(a_rows));
        const Tensor<T> vp = sum(mul(v, p), {axis}, true);
        if (logits.requires_grad()) {
          const Tensor<T> scale = weights.w ? mul(live, a) : live;
          const Tensor<T> u = unsqueeze(mul(spread(g, reduction, divisor), scale), axis);
          accumulate(logits, mul(u, mul(p, sub(v, vp))));
        }
        if (g.requires_grad()) {
          Tensor<T> w = squeeze(vp, axis);
          if (weights.w) w = mul(w, a);
          if (smoothing != T(0)) {
            // sum_c b_c v_c, b_c = s w_c / C: the weights along the class axis.
            xt::xarray<T> along = weight.defined() ? weight.value() : xt::xarray<T>();
            Shape along_shape(logits.ndim(), 1);
            along_shape[class_axis] = classes;
            if (weights.w) along.reshape(along_shape);
            const Tensor<T> weighted_v = weights.w ? mul(v, Tensor<T>(std::move(along))) : v;
            w = sub(w, mul(sum(weighted_v, {axis}), uniform));
          }
          // nll_loss gives -w_t v_t, and 0 for an ignored target.
          if (smoothing != T(1)) {
            w = add(w, mul(nll_loss(v, *targets, {.weight = weight, .ignore_index = ignore, .reduction = Reduction::None}),
                           T(1) - smoothing));
          }
          accumulate(g, unspread(mul(w, live), reduction, divisor));
        }
      });
}

// nll_loss's backward: -upstream * w_t at each kept target's class, 0 elsewhere, as an op of its
// own. Linear in g; its backward is nll_loss itself, which gathers -w_t v at those classes and
// reduces the same way.
template <class T>
Tensor<T> nll_loss_backward(const Tensor<T>& g, const Shape& shape, const Targets& targets, const ClassAxis& axis,
                            Index ignore, const Tensor<T>& weight, Reduction reduction, T divisor,
                            CallSite where = std::source_location::current()) {
  // One entry per target: -u w_t at its class; a serial scatter of `rows` writes.
  const Upstream<T> upstream(g.value(), reduction, divisor);
  const T* w = weight.defined() ? weight.value().data() : nullptr;
  xt::xarray<T> dlp = xt::zeros<T>(shape);
  for (std::size_t r = 0; r < axis.rows; ++r) {
    const Index c = targets->data()[r];
    if (c == ignore) continue;
    dlp.data()[axis.lane_start(r) + static_cast<std::size_t>(c) * axis.layout.inner] =
        w ? -upstream[r] * w[c] : -upstream[r];
  }
  return make_result("nll_loss_backward", where, std::move(dlp), should_record(g),
                     [g = detail::edge(g), targets, ignore, weight, reduction](const Tensor<T>& v) {
                       accumulate(g, nll_loss(v, *targets, {.weight = weight, .ignore_index = ignore, .reduction = reduction}));
                     });
}

// kl_div's gradients, each computed in one pass and an op of its own. With up the upstream and
// m = [target > 0] (the loss is the constant 0 where target == 0), for a gradient v of each:
//   d_input  = -target * up:                    d/dg = unspread(-target v),  d/dtarget = -up v;
//   d_target = m (log target + 1 - input) up:   d/dg = unspread(m (log target + 1 - input) v),
//                                               d/dinput = -up v,  d/dtarget = m up v / target.
// The mixed derivative is -up at every target, 0 included, in either order (as PyTorch's): d_input
// is smooth in the target, and masking one order alone would make the Hessian asymmetric there.
template <class T>
Tensor<T> kl_div_backward_input(const Tensor<T>& g, const Tensor<T>& target, Reduction reduction, T divisor,
                                CallSite where = std::source_location::current()) {
  const Upstream<T> upstream(g.value(), reduction, divisor);
  const T* p = target.value().data();
  return make_result("kl_div_backward_input", where,
                     generate<T>(target.shape(), [&](std::size_t i) { return -p[i] * upstream[i]; }),
                     should_record(g, target), [g, target, reduction, divisor](const Tensor<T>& v) {
                       if (g.requires_grad()) accumulate(g, unspread(mul(neg(target), v), reduction, divisor));
                       if (target.requires_grad()) accumulate(target, mul(neg(spread(g, reduction, divisor)), v));
                     });
}

template <class T>
Tensor<T> kl_div_backward_target(const Tensor<T>& g, const Tensor<T>& log_input, const Tensor<T>& target,
                                 Reduction reduction, T divisor,
                                 CallSite where = std::source_location::current()) {
  const Upstream<T> upstream(g.value(), reduction, divisor);
  const T* x = log_input.value().data();
  const T* p = target.value().data();
  // d/dt [t (log t - x)] = log t + 1 - x for t > 0; the loss is the constant 0 at t == 0.
  xt::xarray<T> dt = generate<T>(target.shape(), [&](std::size_t i) {
    return p[i] > T(0) ? (std::log(p[i]) + T(1) - x[i]) * upstream[i] : T(0);
  });
  return make_result(
      "kl_div_backward_target", where, std::move(dt), should_record(g, log_input, target),
      [g, log_input, target, reduction, divisor](const Tensor<T>& v) {
        const xt::xarray<T> positive = xt::cast<T>(target.value() > T(0));
        const Tensor<T> m(positive);
        // The target where it is positive and 1 elsewhere: its log and inverse stay finite.
        const Tensor<T> safe = add(mul(target, m), Tensor<T>(xt::xarray<T>(T(1) - positive)));
        const Tensor<T> up_v = mul(spread(g, reduction, divisor), v);
        if (g.requires_grad()) {
          accumulate(g, unspread(mul(mul(sub(add(log(safe), T(1)), log_input), m), v), reduction, divisor));
        }
        if (log_input.requires_grad()) accumulate(log_input, neg(up_v));
        if (target.requires_grad()) accumulate(target, div(mul(up_v, m), safe));
      });
}

// mse_loss's gradient of the input, 2 (x - y) up, as an op of its own (the target's is its
// negation). Its backward for a gradient v: d/dg = unspread(2 (x - y) v), d/dx = 2 up v = -d/dy.
template <class T>
Tensor<T> mse_loss_backward(const Tensor<T>& g, const Tensor<T>& input, const Tensor<T>& target, Reduction reduction,
                            T divisor, CallSite where = std::source_location::current()) {
  const Upstream<T> upstream(g.value(), reduction, divisor);
  const T* x = input.value().data();
  const T* y = target.value().data();
  // d/dx (x - y)^2 = 2 (x - y) = -d/dy.
  xt::xarray<T> dx =
      generate<T>(input.shape(), [&](std::size_t i) { return T(2) * (x[i] - y[i]) * upstream[i]; });
  return make_result("mse_loss_backward", where, std::move(dx), should_record(g, input, target),
                     [g, input, target, reduction, divisor](const Tensor<T>& v) {
                       if (g.requires_grad()) {
                         accumulate(g, unspread(mul(mul(sub(input, target), T(2)), v), reduction, divisor));
                       }
                       if (!input.requires_grad() && !target.requires_grad()) return;
                       Tensor<T> dx = mul(mul(spread(g, reduction, divisor), T(2)), v);
                       if (target.requires_grad()) accumulate(target, neg(dx));
                       if (input.requires_grad()) accumulate(input, std::move(dx));
                     });
}

}  // namespace

// What both forms of cross_entropy check of the logits and the options.
template <class T>
void check_cross_entropy_options(const Tensor<T>& logits, const CrossEntropyOptions<T>& options) {
  require_defined(logits, "cross_entropy", "logits");
  reject_batchmean(options.reduction, "cross_entropy", "logits", logits.shape());
  if (!(options.label_smoothing >= 0.0 && options.label_smoothing <= 1.0)) {
    throw ValueError("cross_entropy: label_smoothing " + std::to_string(options.label_smoothing) +
                     " is outside [0, 1] (logits " + format_shape(logits.shape()) + ")");
  }
}

template <class T>
Tensor<T> cross_entropy(const Tensor<T>& logits, const IndexArray& targets, const CrossEntropyOptions<T>& options,
                        CallSite where) {
  check_cross_entropy_options(logits, options);
  const ClassAxis axis = check_class_targets(logits.shape(), targets, options.ignore_index, "cross_entropy", "logits");
  check_class_weight(options.weight, axis.layout.n, logits.shape(), "cross_entropy", "logits");
  const Shape target_shape(targets.shape().begin(), targets.shape().end());
  const T smoothing = static_cast<T>(options.label_smoothing);
  const Index ignore = options.ignore_index;
  const ClassWeights<T> weights = ClassWeights<T>::of(options.weight);

  // The shift and log_sum per target are what backward needs besides the logits, which the
  // captured handle holds anyway: recomputing p there avoids keeping a second logits-sized array.
  xt::xarray<T> losses = xt::zeros<T>(target_shape);
  xt::xarray<T> shift = xt::zeros<T>(target_shape), log_sum = xt::zeros<T>(target_shape);
  if (axis.layout.n > 0) {  // with no classes every target is ignored (checked above): all zeros
    const T* x = logits.value().data();
    kernels::for_each_lane_block(axis.layout, [&](std::size_t offset, auto stride, auto width) {
      cross_entropy_lanes(x, offset, stride, width, axis.layout.n, axis.row_of(offset), targets.data(), ignore,
                          smoothing, weights, losses.data(), ShiftAndLogSum<T>{shift.data(), log_sum.data()});
    });
  }
  const T divisor = class_divisor(options.reduction, axis, targets, ignore, options.weight);
  return make_result(
      "cross_entropy", where, reduce(std::move(losses), options.reduction, divisor), should_record(logits),
      [logits, targets = std::make_shared<const IndexArray>(targets), axis, ignore, smoothing, weight = options.weight,
       shift = std::move(shift), log_sum = std::move(log_sum), reduction = options.reduction,
       divisor](const Tensor<T>& g) {
        accumulate(logits, cross_entropy_backward(g, logits, targets, axis, ignore, smoothing, weight,
                                                  ShiftAndLogSum<const T>{shift.data(), log_sum.data()}, reduction, divisor));
      });
}

// PyTorch 1.13's composite for probability targets, written with recorded ops (so every
// derivative comes from theirs): -sum_c w_c q_c log_softmax(x)_c over the class axis, reduced.
template <class T>
Tensor<T> cross_entropy(const Tensor<T>& logits, const Tensor<T>& target, const CrossEntropyOptions<T>& options,
                        CallSite where) {
  check_cross_entropy_options(logits, options);
  require_defined(target, "cross_entropy", "target");
  if (logits.ndim() == 0) {
    throw ShapeError("cross_entropy: logits [] has no class axis; expected [C], [N, C] or [N, C, d1, ...] (target " +
                     format_shape(target.shape()) + ")");
  }
  if (target.shape() != logits.shape()) {
    throw ShapeError("cross_entropy: target probabilities " + format_shape(target.shape()) +
                     " must have the shape of logits " + format_shape(logits.shape()) +
                     " (class indices are an IndexArray)");
  }
  if (options.ignore_index != CrossEntropyOptions<T>{}.ignore_index) {
    throw ValueError("cross_entropy: ignore_index " + std::to_string(options.ignore_index) +
                     " applies to class-index targets, not to probabilities (target " + format_shape(target.shape()) +
                     "), as in PyTorch");
  }
  const std::size_t class_axis = logits.ndim() == 1 ? 0 : 1;
  const std::size_t classes = logits.shape()[class_axis];
  check_class_weight(options.weight, classes, logits.shape(), "cross_entropy", "logits", true);
  const auto axis = static_cast<Index>(class_axis);
  const T s = static_cast<T>(options.label_smoothing);
  const Tensor<T> q = s > T(0) ? add(mul(target, T(1) - s), s / static_cast<T>(classes)) : target;
  Tensor<T> terms = mul(log_softmax(logits, axis), q);
  if (options.weight.defined()) {
    std::vector<Index> along(logits.ndim(), 1);
    along[class_axis] = static_cast<Index>(classes);
    terms = mul(terms, reshape(options.weight, along));
  }
  const Tensor<T> losses = neg(sum(terms, {axis}));
  if (options.reduction == Reduction::None) return losses;
  const Tensor<T> total = sum(losses);
  // Mean over the positions; over none it is 0 (PyTorch: NaN), as reduce()'s rule.
  if (options.reduction == Reduction::Sum || losses.numel() == 0) return total;
  return div(total, Tensor<T>(xt::xarray<T>(static_cast<T>(losses.numel()))), where);
}

template <class T>
Tensor<T> nll_loss(const Tensor<T>& log_probs, const IndexArray& targets, const NllLossOptions<T>& options,
                   CallSite where) {
  require_defined(log_probs, "nll_loss", "log_probs");
  reject_batchmean(options.reduction, "nll_loss", "log_probs", log_probs.shape());
  const ClassAxis axis = check_class_targets(log_probs.shape(), targets, options.ignore_index, "nll_loss", "log_probs");
  check_class_weight(options.weight, axis.layout.n, log_probs.shape(), "nll_loss", "log_probs");
  const Shape target_shape(targets.shape().begin(), targets.shape().end());
  const Index ignore = options.ignore_index;
  const std::size_t inner = axis.layout.inner;
  const T* lp = log_probs.value().data();
  const T* w = options.weight.defined() ? options.weight.value().data() : nullptr;
  const Index* t = targets.data();
  xt::xarray<T> losses = generate<T>(target_shape, [&](std::size_t r) {
    if (t[r] == ignore) return T(0);
    const T at = lp[axis.lane_start(r) + static_cast<std::size_t>(t[r]) * inner];
    return w ? -w[t[r]] * at : -at;
  });
  const T divisor = class_divisor(options.reduction, axis, targets, ignore, options.weight);
  return make_result("nll_loss", where, reduce(std::move(losses), options.reduction, divisor), should_record(log_probs),
                     [log_probs = detail::edge(log_probs), targets = std::make_shared<const IndexArray>(targets), axis, ignore,
                      weight = options.weight, reduction = options.reduction, divisor](const Tensor<T>& g) {
                       accumulate(log_probs, nll_loss_backward(g, log_probs.shape(), targets, axis, ignore, weight,
                                                               reduction, divisor));
                     });
}

namespace {

// kl_div with log_target, as PyTorch's composite exp(t) * (t - x) in recorded ops. Where t is -inf
// the loss is 0 (a zero probability, as target == 0 without log_target): t is replaced there by 0
// before the formula and its loss masked, so neither 0 * -inf nor its gradient makes a NaN.
template <class T>
Tensor<T> kl_div_log_target(const Tensor<T>& log_input, const Tensor<T>& target, Reduction reduction, CallSite where) {
  const Mask zero_probability = xt::equal(target.value(), -std::numeric_limits<T>::infinity());
  const bool any_zero = xt::any(zero_probability);
  const Tensor<T> t = any_zero ? masked_fill(target, zero_probability, T(0)) : target;
  Tensor<T> losses = mul(exp(t), sub(t, log_input), where);
  if (any_zero) losses = masked_fill(losses, zero_probability, T(0));
  if (reduction == Reduction::None) return losses;
  // spread divides the sum by the divisor, as reduce() does (0 for a Mean over nothing).
  const T divisor = pointwise_divisor<T>(reduction, log_input.shape(), log_input.numel());
  return spread(sum(losses), reduction, divisor);
}

}  // namespace

template <class T>
Tensor<T> kl_div(const Tensor<T>& log_input, const Tensor<T>& target, Reduction reduction, bool log_target,
                 CallSite where) {
  require_same_shape(log_input, target, "kl_div", "log_input", "target");
  if (log_target) return kl_div_log_target(log_input, target, reduction, where);
  const Shape shape = log_input.shape();
  const T* x = log_input.value().data();
  const T* p = target.value().data();
  // 0 where target == 0 (the limit of t log t), so zero-probability classes give no NaN; a
  // negative target gives NaN, as in PyTorch.
  xt::xarray<T> losses =
      generate<T>(shape, [&](std::size_t i) { return p[i] == T(0) ? T(0) : p[i] * (std::log(p[i]) - x[i]); });
  const T divisor = pointwise_divisor<T>(reduction, shape, log_input.numel());
  return make_result("kl_div", where, reduce(std::move(losses), reduction, divisor), should_record(log_input, target),
                     [log_input, target, reduction, divisor](const Tensor<T>& g) {
                       if (log_input.requires_grad()) {
                         accumulate(log_input, kl_div_backward_input(g, target, reduction, divisor));
                       }
                       if (target.requires_grad()) {
                         accumulate(target, kl_div_backward_target(g, log_input, target, reduction, divisor));
                       }
                     });
}

template <class T>
Tensor<T> mse_loss(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction, CallSite where) {
  require_same_shape(input, target, "mse_loss", "input", "target");
  reject_batchmean(reduction, "mse_loss", "input", input.shape());
  const Shape shape = input.shape();
  const T* x = input.value().data();
  const T* y = target.value().data();
  xt::xarray<T> losses = generate<T>(shape, [&](std::size_t i) { return (x[i] - y[i]) * (x[i] - y[i]); });
  const T divisor = pointwise_divisor<T>(reduction, shape, input.numel());
  return make_result("mse_loss", where, reduce(std::move(losses), reduction, divisor), should_record(input, target),
                     [input, target, reduction, divisor](const Tensor<T>& g) {
                       Tensor<T> dx = mse_loss_backward(g, input, target, reduction, divisor);
                       if (target.requires_grad()) accumulate(target, neg(dx));
                       if (input.requires_grad()) accumulate(input, std::move(dx));
                     });
}

#define TAPEGRAD_INSTANTIATE_LOSS(T)                                                                   \
  template Tensor<T> cross_entropy(const Tensor<T>&, const IndexArray&, const CrossEntropyOptions<T>&, CallSite); \
  template Tensor<T> cross_entropy(const Tensor<T>&, const Tensor<T>&, const CrossEntropyOptions<T>&, CallSite);  \
  template Tensor<T> nll_loss(const Tensor<T>&, const IndexArray&, const NllLossOptions<T>&, CallSite);           \
  template Tensor<T> kl_div(const Tensor<T>&, const Tensor<T>&, Reduction, bool, CallSite);                    \
  template Tensor<T> mse_loss(const Tensor<T>&, const Tensor<T>&, Reduction, CallSite);
TAPEGRAD_INSTANTIATE_LOSS(float)
TAPEGRAD_INSTANTIATE_LOSS(double)

}  // namespace tapegrad
