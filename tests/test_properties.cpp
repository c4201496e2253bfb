// Property tests over the whole op set, in float64:
//  1. Random compositions: 300 chains of 3-5 ops drawn from elementwise / activation / reduce /
//     shape / matmul / einsum / softmax / layer_norm / masked_fill, on random shapes with
//     broadcasting, each ending in a weighted sum, pass gradcheck. Every draw comes from a fixed
//     seed; a failure prints the seed and the chain, e.g.
//       seed 17: x0 [2,3] -> mul(x1 [1,3]) -> softmax(axis 0) -> sum(axes [1], keepdims)
//     Inputs stay away from kinks: log/sqrt/pow/div see x*x + 0.5, relu and max see x plus a
//     fixed ramp of distinct offsets (no exact zeros, no ties), masked_fill fills with a finite
//     value (its -inf form appears only right before softmax, as attention uses it).
//  2. Each fused kernel equals its composition from primitives, forward and backward, tolerance
//     1e-11: softmax, log_softmax, layer_norm and masked attention (scale + masked_fill + softmax
//     + matmul/einsum), including fully masked rows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// 1. Random compositions

// A chain of ops applied to inputs[0]; a step may read further inputs (a second operand, a
// layer_norm weight) by index.
struct Composition {
  using Step = std::function<Tensor<double>(const Tensor<double>&, const Inputs&)>;
  Inputs inputs;
  std::vector<Step> steps;
  std::string description;

  Tensor<double> operator()(const Inputs& in) const {
    Tensor<double> x = in[0];
    for (const auto& step : steps) x = step(x, in);
    return x;
  }
};

// Draws one composition from a seed. Tensors stay small (at most kMaxNumel elements) so that the
// full-Jacobian gradcheck stays cheap.
class CompositionBuilder {
 public:
  static constexpr std::size_t kMaxNumel = 36;

  explicit CompositionBuilder(std::uint64_t seed) : seed_(seed), rng_(seed) {}

  Composition build() {
    const Shape first = random_shape();
    add_input(first);
    c_.description = "seed " + std::to_string(seed_) + ": x0 " + format_shape(first);
    current_ = c_.inputs[0].detach();
    const std::size_t depth = 3 + pick(3);
    while (c_.steps.size() < depth) {
      // A step that draws new inputs and is then rejected (too big) must not leave them behind:
      // gradcheck would find inputs that nothing reads.
      const std::size_t inputs_before = c_.inputs.size(), steps_before = c_.steps.size();
      draw_step();
      if (c_.steps.size() == steps_before) c_.inputs.resize(inputs_before);
    }
    // A fixed random weighting makes every output element matter to the scalar that is checked.
    const Tensor<double> weights = random_tensor(current_.shape(), seed_ * 7919 + 1, false);
    c_.steps.push_back([weights](const Tensor<double>& x, const Inputs&) { return sum(x * weights); });
    c_.description += " -> sum(x * w)";
    return c_;
  }

 private:
  std::size_t pick(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
  bool coin(double p) { return static_cast<double>(rng_() % 1000) < p * 1000; }

  Shape random_shape() {
    Shape s(1 + pick(3));
    for (auto& d : s) d = 1 + pick(3);
    return s;
  }

  std::size_t add_input(const Shape& shape) {
    c_.inputs.push_back(random_tensor(shape, seed_ * 1000 + c_.inputs.size() + 1));
    return c_.inputs.size() - 1;
  }

  // "[1,-1]": axis lists and target shapes, which may be negative.
  static std::string format_indices(const std::vector<Index>& v) {
    std::string text = "[";
    for (std::size_t i = 0; i < v.size(); ++i) text += (i > 0 ? "," : "") + std::to_string(v[i]);
    return text + "]";
  }

  static std::size_t numel(const Shape& s) {
    return std::accumulate(s.begin(), s.end(), std::size_t{1}, std::multiplies<>());
  }

  // A shape that broadcasts to s: some axes set to 1, maybe the leading axis dropped.
  Shape broadcasts_to(const Shape& s) {
    Shape p = s;
    for (auto& d : p)
      if (coin(0.3)) d = 1;
    if (!p.empty() && coin(0.2)) p.erase(p.begin());
    return p;
  }

  // A shape that broadcasts with s, sometimes widening the result by a leading axis of 2.
  Shape broadcast_partner(const Shape& s) {
    Shape p = broadcasts_to(s);
    if (p.size() == s.size() && coin(0.15)) p.insert(p.begin(), 2);
    return p;
  }

  // Distinct offsets 0.01 * k in x's shape: added before relu and max so that no value sits on a
  // kink and no two values tie, even after broadcasting copied them.
  static Tensor<double> ramp(const Shape& s) {
    xt::xarray<double> r = xt::xarray<double>::from_shape(s);
    for (std::size_t i = 0; i < r.size(); ++i) r.data()[i] = 0.0137 + 0.01 * static_cast<double>(i);
    return Tensor<double>(std::move(r));
  }

  Mask random_mask(const Shape& s) {
    Mask m = Mask::from_shape(s);
    for (auto& v : m) v = coin(0.35);
    return m;
  }

  Index random_axis(std::size_t ndim) { return static_cast<Index>(pick(ndim)) - (coin(0.5) ? Index(ndim) : 0); }

  void push(std::string what, Composition::Step step) {
    Tensor<double> next = step(current_, c_.inputs);
    if (next.numel() == 0 || next.numel() > kMaxNumel) return;  // too big: draw another step
    current_ = next.detach();
    c_.steps.push_back(std::move(step));
    c_.description += " -> " + what;
  }

  // Positive, smooth, away from 0: what log, sqrt, pow and divisors see.
  static Tensor<double> positive(const Tensor<double>& x) { return x * x + 0.5; }

  void draw_step() {
    const Shape s = current_.shape();
    const std::size_t nd = s.size();
    switch (pick(16)) {
      case 0: {
        static const char* names[] = {"tanh", "sigmoid", "gelu", "gelu_tanh", "neg", "exp(tanh)"};
        const std::size_t k = pick(6);
        push(names[k], [k](const Tensor<double>& x, const Inputs&) {
          switch (k) {
            case 0: return tanh(x);
            case 1: return sigmoid(x);
            case 2: return gelu(x);
            case 3: return gelu(x, GeluApproximation::Tanh);
            case 4: return -x;
            default: return exp(tanh(x));
          }
        });
        return;
      }
      case 1: {
        static const char* names[] = {"log(x*x+0.5)", "sqrt(x*x+0.5)", "pow(x*x+0.5, 1.5)", "2 / (x*x+0.5)",
                                      "relu(x + ramp)", "1.5 - 0.7 * x"};
        const std::size_t k = pick(6);
        const Tensor<double> r = ramp(s);
        push(names[k], [k, r](const Tensor<double>& x, const Inputs&) {
          switch (k) {
            case 0: return log(positive(x));
            case 1: return sqrt(positive(x));
            case 2: return pow(positive(x), 1.5);
            case 3: return 2.0 / positive(x);
            case 4: return relu(x + r);
            default: return 1.5 - 0.7 * x;
          }
        });
        return;
      }
      case 2:
      case 3: {  // binary with a new broadcasting operand, on either side
        static const char* names[] = {"add", "sub", "mul", "div", "pow"};
        const std::size_t k = pick(5);
        const Shape ps = broadcast_partner(s);
        const std::size_t i = add_input(ps);
        const bool swap = coin(0.5);
        const std::string other = "x" + std::to_string(i) + " " + format_shape(ps);
        push(std::string(names[k]) + (swap ? "(" + other + ", x)" : "(x, " + other + ")"),
             [k, i, swap](const Tensor<double>& x, const Inputs& in) {
               const Tensor<double>& a = swap ? in[i] : x;
               const Tensor<double>& b = swap ? x : in[i];
               switch (k) {
                 case 0: return a + b;
                 case 1: return a - b;
                 case 2: return a * b;
                 case 3: return a / positive(b);
                 default: return pow(positive(a), b);
               }
             });
        return;
      }
      case 4: {  // sum / mean / max over random axes
        if (nd == 0) return;
        Axes axes;
        for (std::size_t d = 0; d < nd; ++d)
          if (coin(0.5)) axes.push_back(static_cast<Index>(d));
        if (axes.empty()) axes.push_back(random_axis(nd));
        const bool keep = coin(0.5);
        const std::size_t k = pick(3);
        const std::string name = k == 0 ? "sum" : k == 1 ? "mean" : "max(x + ramp";
        const Tensor<double> r = ramp(s);
        push(name + (k == 2 ? ", " : "(") + "axes " + format_indices(axes) +
                 (keep ? ", keepdims)" : ")"),
             [k, axes, keep, r](const Tensor<double>& x, const Inputs&) {
               if (k == 0) return sum(x, axes, keep);
               if (k == 1) return mean(x, axes, keep);
               return max(x + r, axes, keep);
             });
        return;
      }
      case 5: {  // reshape / permute / transpose / unsqueeze / squeeze
        if (nd == 0) return;
        const std::size_t k = pick(5);
        if (k == 0) {
          const std::vector<Index> to = coin(0.5) ? std::vector<Index>{-1} : std::vector<Index>{1, -1};
          push("reshape" + format_indices(to), [to](const Tensor<double>& x, const Inputs&) { return reshape(x, to); });
        } else if (k == 1) {
          std::vector<Index> perm(nd);
          std::iota(perm.begin(), perm.end(), Index{0});
          std::shuffle(perm.begin(), perm.end(), rng_);
          push("permute" + format_indices(perm),
               [perm](const Tensor<double>& x, const Inputs&) { return permute(x, perm); });
        } else if (k == 2) {
          const Index a = random_axis(nd), b = random_axis(nd);
          push("transpose(" + std::to_string(a) + ", " + std::to_string(b) + ")",
               [a, b](const Tensor<double>& x, const Inputs&) { return transpose(x, a, b); });
        } else if (k == 3 && nd < 4) {
          const Index a = static_cast<Index>(pick(nd + 1));
          push("unsqueeze(" + std::to_string(a) + ")", [a](const Tensor<double>& x, const Inputs&) { return unsqueeze(x, a); });
        } else {
          push("squeeze", [](const Tensor<double>& x, const Inputs&) { return squeeze(x); });
        }
        return;
      }
      case 6: {  // expand a size-1 axis, slice, narrow, index_select
        if (nd == 0) return;
        const std::size_t d = pick(nd);
        const std::size_t k = pick(4);
        if (k == 0) {
          std::vector<Index> to(s.begin(), s.end());
          if (s[d] == 1) to[d] = 3;
          to.insert(to.begin(), 2);
          push("expand" + format_indices(to),
               [to](const Tensor<double>& x, const Inputs&) { return expand(x, to); });
        } else if (s[d] >= 2 && k == 1) {
          push("slice(axis " + std::to_string(d) + ", 1:, step 2)",
               [d](const Tensor<double>& x, const Inputs&) { return slice(x, Index(d), 1, 100, 2); });
        } else if (s[d] >= 2 && k == 2) {
          push("narrow(axis " + std::to_string(d) + ", 0, " + std::to_string(s[d] - 1) + ")",
               [d, len = Index(s[d] - 1)](const Tensor<double>& x, const Inputs&) { return narrow(x, Index(d), 0, len); });
        } else {
          IndexArray idx = {Index(s[d] - 1), Index(0), Index(s[d] - 1)};
          push("index_select(axis " + std::to_string(d) + ", [last,0,last])",
               [d, idx](const Tensor<double>& x, const Inputs&) { return index_select(x, Index(d), idx); });
        }
        return;
      }
      case 7: {  // concat with a new input, or chunk and keep the last piece
        if (nd == 0) return;
        const std::size_t d = pick(nd);
        if (coin(0.5)) {
          Shape ps = s;
          ps[d] = 1 + pick(2);
          const std::size_t i = add_input(ps);
          push("concat(x, x" + std::to_string(i) + " " + format_shape(ps) + ", axis " + std::to_string(d) + ")",
               [d, i](const Tensor<double>& x, const Inputs& in) { return concat({x, in[i]}, Index(d)); });
        } else {
          push("chunk(2, axis " + std::to_string(d) + ").back()",
               [d](const Tensor<double>& x, const Inputs&) { return chunk(x, 2, Index(d)).back(); });
        }
        return;
      }
      case 8:
      case 9: {  // matmul with a new operand: [.., n] x [n, m], or a broadcast batch of them
        if (nd == 0) return;
        if (nd >= 2 && coin(0.3)) {  // x on the right: [2, rows] x [.., rows, cols]
          const Shape ls = {2, s[nd - 2]};
          const std::size_t j = add_input(ls);
          push("matmul(x" + std::to_string(j) + " " + format_shape(ls) + ", x)",
               [j](const Tensor<double>& x, const Inputs& in) { return matmul(in[j], x); });
        } else {
          Shape ws = {s.back(), 1 + pick(3)};
          if (nd >= 3 && coin(0.5)) ws.insert(ws.begin(), s[nd - 3]);
          const std::size_t i = add_input(ws);
          push("matmul(x, x" + std::to_string(i) + " " + format_shape(ws) + ")",
               [i](const Tensor<double>& x, const Inputs& in) { return matmul(x, in[i]); });
        }
        return;
      }
      case 10: {  // einsum: contractions, outer products, diagonals, sums
        if (nd == 2 && coin(0.5)) {
          const Shape ws = {s[1], 2};
          const std::size_t i = add_input(ws);
          push("einsum(ij,jk->ki, x, x" + std::to_string(i) + " " + format_shape(ws) + ")",
               [i](const Tensor<double>& x, const Inputs& in) { return einsum("ij,jk->ki", x, in[i]); });
        } else if (nd == 2 && s[0] == s[1]) {
          push("einsum(ii->i)", [](const Tensor<double>& x, const Inputs&) { return einsum("ii->i", x); });
        } else if (nd == 3) {
          const Shape ws = {s[0], s[2], 2};
          const std::size_t i = add_input(ws);
          push("einsum(bij,bjk->bik, x, x" + std::to_string(i) + " " + format_shape(ws) + ")",
               [i](const Tensor<double>& x, const Inputs& in) { return einsum("bij,bjk->bik", x, in[i]); });
        } else if (nd == 1) {
          const Shape ws = {2};
          const std::size_t i = add_input(ws);
          push("einsum(i,j->ji, x, x" + std::to_string(i) + " [2])",
               [i](const Tensor<double>& x, const Inputs& in) { return einsum("i,j->ji", x, in[i]); });
        } else if (nd == 2) {
          push("einsum(ij->j)", [](const Tensor<double>& x, const Inputs&) { return einsum("ij->j", x); });
        }
        return;
      }
      case 11:
      case 12: {  // softmax / log_softmax
        if (nd == 0) return;
        const Index a = random_axis(nd);
        const bool log_form = coin(0.5);
        push(std::string(log_form ? "log_softmax" : "softmax") + "(axis " + std::to_string(a) + ")",
             [a, log_form](const Tensor<double>& x, const Inputs&) { return log_form ? log_softmax(x, a) : softmax(x, a); });
        return;
      }
      case 13: {  // layer_norm over the last 1 or 2 axes, with a new weight and bias
        if (nd == 0) return;
        const std::size_t k = nd >= 2 && coin(0.4) ? 2 : 1;
        const Shape ns(s.end() - static_cast<std::ptrdiff_t>(k), s.end());
        if (numel(ns) < 2) return;  // a single element normalises to exactly 0: nothing to check
        const std::size_t w = add_input(ns), b = add_input(ns);
        push("layer_norm(" + format_shape(ns) + ", x" + std::to_string(w) + ", x" + std::to_string(b) + ")",
             [ns, w, b](const Tensor<double>& x, const Inputs& in) { return layer_norm(x, ns, in[w], in[b]); });
        return;
      }
      case 14: {  // masked_fill with a finite value and a broadcasting mask
        if (nd == 0) return;
        const Mask m = random_mask(broadcasts_to(s));
        const double value = coin(0.5) ? -1.25 : 0.75;
        push("masked_fill(mask " + format_shape(m.shape()) + ", " + std::to_string(value) + ")",
             [m, value](const Tensor<double>& x, const Inputs&) { return masked_fill(x, m, value); });
        return;
      }
      default: {  // attention-style: masked_fill(-inf) then softmax over the last axis
        if (nd == 0) return;
        const Mask m = random_mask(s);
        push("softmax(masked_fill(mask, -inf), axis -1)", [m](const Tensor<double>& x, const Inputs&) {
          return softmax(masked_fill(x, m, -kInf), -1);
        });
        return;
      }
    }
  }

  std::uint64_t seed_;
  std::mt19937_64 rng_;
  Composition c_;
  Tensor<double> current_;
};

TEST(Properties, RandomCompositionsPassGradcheck) {
  constexpr std::uint64_t kCompositions = 300;
  std::size_t checked_elements = 0;
  for (std::uint64_t seed = 1; seed <= kCompositions; ++seed) {
    const Composition c = CompositionBuilder(seed).build();
    SCOPED_TRACE(c.description);
    EXPECT_TRUE(passes_gradcheck([&c](const Inputs& in) { return c(in); }, c.inputs));
    for (const auto& x : c.inputs) checked_elements += x.numel();
  }
  // The draws are meant to exercise real tensors, not scalars only.
  EXPECT_GT(checked_elements, 10 * kCompositions);
}

// ---------------------------------------------------------------------------------------------
// 2. Fused kernels against their compositions from primitives

constexpr double kTol = 1e-11;
constexpr double kLayerNormEps = 1e-5;

// |a - b| <= kTol everywhere, where two equal infinities count as equal.
::testing::AssertionResult same_values(const xt::xarray<double>& a, const xt::xarray<double>& b) {
  if (a.shape() != b.shape()) {
    return ::testing::AssertionFailure() << "shapes " << format_shape(a.shape()) << " and " << format_shape(b.shape());
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a.data()[i], y = b.data()[i];
    if (x == y) continue;
    if (!(std::abs(x - y) <= kTol)) {
      return ::testing::AssertionFailure() << "element " << i << ": " << x << " vs " << y;
    }
  }
  return ::testing::AssertionSuccess();
}

struct Evaluation {
  xt::xarray<double> value;
  std::vector<xt::xarray<double>> grads;  // d <value, seed> / d input, per input
};

// Runs fn on fresh copies of the inputs and backpropagates a fixed random seed.
Evaluation evaluate(const std::function<Tensor<double>(const Inputs&)>& fn, const Inputs& inputs) {
  Inputs leaves;
  for (const auto& x : inputs) leaves.push_back(x.detach().set_requires_grad(true));
  GradientTape tape;
  const Tensor<double> y = fn(leaves);
  tape.backward(y, random_tensor(y.shape(), 99, false).value());
  Evaluation e{y.value(), {}};
  for (const auto& x : leaves) e.grads.push_back(x.has_grad() ? x.grad() : xt::xarray<double>(xt::zeros<double>(x.shape())));
  return e;
}

void expect_same(const std::function<Tensor<double>(const Inputs&)>& fused,
                 const std::function<Tensor<double>(const Inputs&)>& composed, const Inputs& inputs) {
  const Evaluation f = evaluate(fused, inputs), c = evaluate(composed, inputs);
  EXPECT_TRUE(same_values(f.value, c.value)) << "forward";
  for (std::size_t i = 0; i < inputs.size(); ++i) EXPECT_TRUE(same_values(f.grads[i], c.grads[i])) << "gradient of input " << i;
}

// A mask over `shape` hiding about a third of the elements and the whole of lane 0 along the last
// axis (a fully masked row), true = hidden.
Mask hiding_mask(const Shape& shape, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Mask m = Mask::from_shape(shape);
  for (auto& v : m) v = rng() % 3 == 0;
  for (std::size_t i = 0; i < shape.back(); ++i) m.data()[i] = true;
  return m;
}

// 1.0 where the mask hides, 0.0 where it keeps, as a constant tensor.
Tensor<double> as_number(const Mask& m, bool hidden) {
  return Tensor<double>(xt::xarray<double>(xt::cast<double>(xt::equal(m, hidden))));
}

// Softmax from primitives: e = exp(x - max x) * keep, e / (sum e + dead), where dead is 1 on
// fully masked rows (so they come out 0, as the fused kernel defines) and the shift is a constant.
Tensor<double> composed_softmax(const Tensor<double>& x, Index axis, const Mask& hidden) {
  const Tensor<double> keep = as_number(hidden, false);
  const Tensor<double> e = exp(x - max(x.detach(), {axis}, true)) * keep;
  const Tensor<double> total = sum(e, {axis}, true);
  const Tensor<double> dead(xt::xarray<double>(xt::cast<double>(xt::equal(total.value(), 0.0))));
  return e / (total + dead);
}

// log_softmax from primitives: z - max - log(sum exp(x - max) over the kept elements), with
// z = masked_fill(x, hidden, -inf): -inf where hidden, and, as for the fused kernel (and PyTorch),
// the gradient arriving at a hidden output still reaches the log-sum through the subtraction.
// On a fully masked row the sum is 0 and dead makes its log 0: the row is -inf, its gradient 0.
Tensor<double> composed_log_softmax(const Tensor<double>& x, Index axis, const Mask& hidden) {
  const Tensor<double> keep = as_number(hidden, false);
  const Tensor<double> shift = max(x.detach(), {axis}, true);
  const Tensor<double> total = sum(exp(x - shift) * keep, {axis}, true);
  const Tensor<double> dead(xt::xarray<double>(xt::cast<double>(xt::equal(total.value(), 0.0))));
  return masked_fill(x, hidden, -kInf) - shift - log(total + dead);
}

struct SoftmaxForm {
  const char* name;
  Tensor<double> (*fused)(const Tensor<double>&, Index);
  Tensor<double> (*composed)(const Tensor<double>&, Index, const Mask&);
};
const std::vector<SoftmaxForm> kSoftmaxForms = {
    {"softmax", [](const Tensor<double>& x, Index axis) { return softmax(x, axis); }, composed_softmax},
    {"log_softmax", [](const Tensor<double>& x, Index axis) { return log_softmax(x, axis); }, composed_log_softmax}};

TEST(FusedEqualsComposed, SoftmaxAndLogSoftmaxOverEveryAxis) {
  for (const auto& form : kSoftmaxForms) {
    for (const Shape& shape : {Shape{5}, Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 1, 3}, Shape{4, 1}}) {
      for (Index axis = 0; axis < Index(shape.size()); ++axis) {
        SCOPED_TRACE(std::string(form.name) + " shape " + format_shape(shape) + " axis " + std::to_string(axis));
        const Mask none = Mask(xt::zeros<bool>(shape));
        expect_same([&](const Inputs& x) { return form.fused(x[0], axis); },
                    [&](const Inputs& x) { return form.composed(x[0], axis, none); }, {random_tensor(shape, 1, true, -3, 3)});
      }
    }
  }
}

TEST(FusedEqualsComposed, MaskedSoftmaxAndLogSoftmaxIncludingFullyMaskedRows) {
  for (const auto& form : kSoftmaxForms) {
    for (const Shape& shape : {Shape{3, 4}, Shape{2, 3, 5}, Shape{1, 2}}) {
      SCOPED_TRACE(std::string(form.name) + " shape " + format_shape(shape));
      const Mask hidden = hiding_mask(shape, 3);
      expect_same([&](const Inputs& x) { return form.fused(masked_fill(x[0], hidden, -kInf), -1); },
                  [&](const Inputs& x) { return form.composed(x[0], -1, hidden); }, {random_tensor(shape, 4, true, -3, 3)});
    }
  }
}

TEST(FusedEqualsComposed, LayerNormWithGainAndBias) {
  struct Case {
    Shape shape, normalized;
  };
  for (const auto& [shape, normalized] : {Case{{3, 5}, {5}}, Case{{2, 3, 4}, {4}}, Case{{2, 3, 4}, {3, 4}}, Case{{6}, {6}}}) {
    SCOPED_TRACE("shape " + format_shape(shape) + " normalized " + format_shape(normalized));
    Axes axes;
    for (std::size_t k = 0; k < normalized.size(); ++k) axes.push_back(-1 - Index(k));
    expect_same([normalized = normalized](const Inputs& x) { return layer_norm(x[0], normalized, x[1], x[2], kLayerNormEps); },
                [axes](const Inputs& x) {
                  const Tensor<double> centred = x[0] - mean(x[0], axes, true);
                  const Tensor<double> var = mean(centred * centred, axes, true);
                  return centred / sqrt(var + kLayerNormEps) * x[1] + x[2];
                },
                {random_tensor(shape, 5, true, -2, 2), random_tensor(normalized, 6, true, 0.5, 1.5),
                 random_tensor(normalized, 7)});
  }
}

// Attention: softmax(mask(q k^T * scale)) v with q [b, n, d], k and v [b, m, d]; mask true = hidden.
// Fused: matmul (or einsum), masked_fill(-inf), softmax. Composed: products as broadcast
// multiply + sum, the softmax composition above.
TEST(FusedEqualsComposed, MaskedAttentionIncludingFullyMaskedRows) {
  constexpr std::size_t b = 2, n = 3, m = 4, d = 5;
  const double scale = 1.0 / std::sqrt(double(d));
  Mask hidden = hiding_mask({b, n, m}, 8);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 2; j < m; ++j) hidden(1, i, j) = true;  // batch 1: causal-style band
  const Inputs qkv = {random_tensor({b, n, d}, 9), random_tensor({b, m, d}, 10), random_tensor({b, m, d}, 11)};
  const auto composed = [&](const Inputs& x) {
    const Tensor<double> scores = sum(unsqueeze(x[0], 2) * unsqueeze(x[1], 1), {-1}) * scale;
    const Tensor<double> p = composed_softmax(scores, -1, hidden);
    return sum(unsqueeze(p, -1) * unsqueeze(x[2], 1), {2});
  };
  {
    SCOPED_TRACE("matmul");
    expect_same([&](const Inputs& x) {
                  const Tensor<double> scores = matmul(x[0], transpose(x[1], 1, 2)) * scale;
                  return matmul(softmax(masked_fill(scores, hidden, -kInf), -1), x[2]);
                },
                composed, qkv);
  }
  {
    SCOPED_TRACE("einsum");
    expect_same([&](const Inputs& x) {
                  const Tensor<double> scores = einsum("bnd,bmd->bnm", x[0], x[1]) * scale;
                  return einsum("bnm,bmd->bnd", softmax(masked_fill(scores, hidden, -kInf), -1), x[2]);
                },
                composed, qkv);
  }
  // The fully masked query row (batch 0, query 0) attends to nothing: output 0, gradient 0.
  const Evaluation fused = evaluate(
      [&](const Inputs& x) {
        return matmul(softmax(masked_fill(matmul(x[0], transpose(x[1], 1, 2)) * scale, hidden, -kInf), -1), x[2]);
      },
      qkv);
  for (std::size_t k = 0; k < d; ++k) {
    EXPECT_EQ(fused.value(0, 0, k), 0.0);
    EXPECT_EQ(fused.grads[0](0, 0, k), 0.0);
  }
}

}  // namespace
}  // namespace tapegrad
