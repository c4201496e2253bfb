#include <cmath>
#include <limits>

#include <xtensor/xoperation.hpp>
#include <xtensor/xview.hpp>

#include "autograd/kernels/parallel.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/masking.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/softmax.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"
#include "tests/support/thread_count.h"
#include "tests/ops/values.h"

namespace tapegrad {
namespace {


using SoftmaxOp = Tensor<double> (*)(const Tensor<double>&, Index);
const std::vector<std::pair<const char*, SoftmaxOp>> kOps = {
    {"softmax", [](const Tensor<double>& x, Index axis) { return softmax(x, axis); }},
    {"log_softmax", [](const Tensor<double>& x, Index axis) { return log_softmax(x, axis); }}};

// Shapes every axis of which is checked: vectors, size-1 axes, lanes wider than one lane block
// (the kernel handles 64 neighbouring lanes at a time) and one big enough to run in parallel.
const std::vector<Shape> kForwardShapes = {{5}, {3, 4}, {2, 3, 4}, {2, 1, 3}, {1, 4}, {3, 2, 130}, {40, 50, 30}};
const std::vector<Shape> kGradcheckShapes = {{4}, {2, 3}, {3, 1, 4}, {2, 3, 2}, {1, 4}};

// Axis in [0, ndim) of a possibly negative one.
std::size_t positive(Index axis, std::size_t ndim) {
  return static_cast<std::size_t>(axis < 0 ? axis + Index(ndim) : axis);
}

// Calls fn(first, stride) for every 1-D lane along `axis` of a row-major array of `shape`:
// element k of the lane is at first + k * stride.
template <class Fn>
void for_each_lane(const Shape& shape, std::size_t axis, Fn fn) {
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= shape[d];
  for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < inner; ++i) fn(o * shape[axis] * inner + i, inner);
}

// The reference: exp(x - max) / sum(exp(x - max)) (or its log) with plain loops, lane by lane.
xt::xarray<double> naive_softmax(const xt::xarray<double>& x, std::size_t axis, bool log) {
  xt::xarray<double> y = x;
  const std::size_t n = x.shape()[axis];
  for_each_lane(Shape(x.shape().begin(), x.shape().end()), axis, [&](std::size_t first, std::size_t stride) {
    double m = -kInf, s = 0.0;
    for (std::size_t k = 0; k < n; ++k) m = std::max(m, x.data()[first + k * stride]);
    for (std::size_t k = 0; k < n; ++k) s += std::exp(x.data()[first + k * stride] - m);
    for (std::size_t k = 0; k < n; ++k) {
      const double v = x.data()[first + k * stride] - m;
      y.data()[first + k * stride] = log ? v - std::log(s) : std::exp(v) / s;
    }
  });
  return y;
}

// The reference vector-Jacobian product from the explicit Jacobian of each lane:
// softmax dy_j/dx_i = y_j (delta_ij - y_i); log_softmax dy_j/dx_i = delta_ij - softmax_i.
xt::xarray<double> naive_vjp(const xt::xarray<double>& x, const xt::xarray<double>& g, std::size_t axis, bool log) {
  const xt::xarray<double> p = naive_softmax(x, axis, false);
  xt::xarray<double> dx = xt::zeros_like(x);
  const std::size_t n = x.shape()[axis];
  for_each_lane(Shape(x.shape().begin(), x.shape().end()), axis, [&](std::size_t first, std::size_t stride) {
    for (std::size_t i = 0; i < n; ++i) {
      const double pi = p.data()[first + i * stride];
      for (std::size_t j = 0; j < n; ++j) {
        const double pj = p.data()[first + j * stride];
        const double jacobian = log ? (i == j) - pi : pj * ((i == j) - pi);
        dx.data()[first + i * stride] += g.data()[first + j * stride] * jacobian;
      }
    }
  });
  return dx;
}

TEST(Softmax, ForwardMatchesHandComputed) {
  const Tensor<double> x(xt::xarray<double>{{1.0, 2.0, 3.0}, {0.0, 0.0, 0.0}});
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const xt::xarray<double> expected{{std::exp(1.0) / s, std::exp(2.0) / s, std::exp(3.0) / s},
                                    {1.0 / 3, 1.0 / 3, 1.0 / 3}};
  EXPECT_LT(max_abs_diff(softmax(x, 1).value(), expected), 1e-15);
  EXPECT_LT(max_abs_diff(log_softmax(x, -1).value(), xt::xarray<double>(xt::log(expected))), 1e-15);
  // Over axis 0 every column is softmax([a, 0]).
  const xt::xarray<double> col{{1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(-2.0)), 1 / (1 + std::exp(-3.0))},
                               {1 / (1 + std::exp(1.0)), 1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(3.0))}};
  EXPECT_LT(max_abs_diff(softmax(x, 0).value(), col), 1e-15);
}

TEST(Softmax, StableForLargeInputs) {
  const Tensor<double> x(xt::xarray<double>{1000.0, 1001.0, 1002.0});
  const double s = std::exp(-2.0) + std::exp(-1.0) + 1.0;
  EXPECT_LT(max_abs_diff(softmax(x, 0).value(), xt::xarray<double>{std::exp(-2.0) / s, std::exp(-1.0) / s, 1.0 / s}),
            1e-15);
  EXPECT_LT(
      max_abs_diff(log_softmax(x, 0).value(), xt::xarray<double>{-2.0 - std::log(s), -1.0 - std::log(s), -std::log(s)}),
      1e-13);
  const Tensor<float> big(xt::xarray<float>{-1e4f, 0.0f, 1e4f});
  EXPECT_EQ(softmax(big, 0).value(), (xt::xarray<float>{0.0f, 0.0f, 1.0f}));
}

TEST(Softmax, ForwardMatchesNaiveLoopsOverEveryAxis) {
  for (const auto& [name, op] : kOps) {
    const bool log = std::string(name) == "log_softmax";
    for (const Shape& shape : kForwardShapes) {
      const auto x = random_tensor(shape, 11, false, -5.0, 5.0);
      for (Index axis = -Index(shape.size()); axis < Index(shape.size()); ++axis) {
        SCOPED_TRACE(std::string(name) + " " + format_shape(shape) + " axis " + std::to_string(axis));
        EXPECT_LT(max_abs_diff(op(x, axis).value(), naive_softmax(x.value(), positive(axis, shape.size()), log)),
                  1e-14);
      }
    }
  }
}

TEST(Softmax, RowsSumToOne) {
  for (const Shape& shape : kForwardShapes) {
    const auto x = random_tensor(shape, 12, false, -30.0, 30.0);
    for (std::size_t axis = 0; axis < shape.size(); ++axis) {
      SCOPED_TRACE(format_shape(shape) + " axis " + std::to_string(axis));
      const xt::xarray<double> y = softmax(x, Index(axis)).value();
      for_each_lane(shape, axis, [&](std::size_t first, std::size_t stride) {
        double s = 0.0;
        for (std::size_t k = 0; k < shape[axis]; ++k) s += y.data()[first + k * stride];
        EXPECT_NEAR(s, 1.0, 1e-14);
      });
    }
  }
}

TEST(Softmax, BackwardMatchesNaiveJacobianProduct) {
  for (const auto& [name, op] : kOps) {
    const bool log = std::string(name) == "log_softmax";
    for (const Shape& shape : kForwardShapes) {
      const auto x = random_tensor(shape, 13, true, -3.0, 3.0);
      const auto g = random_tensor(shape, 14, false).value();
      for (std::size_t axis = 0; axis < shape.size(); ++axis) {
        SCOPED_TRACE(std::string(name) + " " + format_shape(shape) + " axis " + std::to_string(axis));
        x.node()->clear_grad();
        GradientTape tape;
        tape.backward(op(x, Index(axis)), g);
        EXPECT_LT(max_abs_diff(x.grad(), naive_vjp(x.value(), g, axis, log)), 1e-13);
      }
    }
  }
}

// tinygrad's composition from primitive ops, the oracle for the fused kernels:
// softmax = exp(x - max) / sum(exp(x - max)), log_softmax = (x - max) - log(sum(exp(x - max))).
Tensor<double> composed_softmax(const Tensor<double>& x, Index axis, bool log) {
  const auto shifted = x - max(x, {axis}, true);
  const auto e = exp(shifted);
  const auto s = sum(e, {axis}, true);
  return log ? shifted - tapegrad::log(s) : e / s;
}

// A random mask that leaves the first entry of every lane along `axis` unmasked (the composition
// is NaN on a fully masked lane).
Mask partial_mask(const Shape& shape, std::size_t axis, std::uint64_t seed) {
  Mask mask = xt::greater(random_tensor(shape, seed, false, 0.0, 1.0).value(), 0.6);
  for_each_lane(shape, axis, [&](std::size_t first, std::size_t) { mask.data()[first] = false; });
  return mask;
}

TEST(Softmax, FusedMatchesComposedFromPrimitives) {
  for (const auto& [name, op] : kOps) {
    const bool log = std::string(name) == "log_softmax";
    for (const Shape& shape : kForwardShapes) {
      for (std::size_t axis = 0; axis < shape.size(); ++axis) {
        for (const bool masked : {false, true}) {
          SCOPED_TRACE(std::string(name) + " " + format_shape(shape) + " axis " + std::to_string(axis) +
                       (masked ? " masked" : ""));
          const Mask mask = masked ? partial_mask(shape, axis, 16) : Mask(xt::zeros<bool>(shape));
          const auto x = random_tensor(shape, 17, true, -3.0, 3.0);
          const xt::xarray<double> g = random_tensor(shape, 18, false).value();
          const auto run = [&](const auto& f) {
            x.node()->clear_grad();
            GradientTape tape;
            const auto y = f(masked_fill(x, mask, -kInf));
            // -inf outputs of log_softmax carry no gradient either way; the seed there is 0.
            tape.backward(y, xt::xarray<double>(xt::where(mask, 0.0, g)));
            return std::pair{y.value(), x.grad()};
          };
          const auto [fused, fused_grad] = run([&, op = op](const Tensor<double>& in) { return op(in, Index(axis)); });
          const auto [oracle, oracle_grad] =
              run([&](const Tensor<double>& in) { return composed_softmax(in, Index(axis), log); });
          EXPECT_TRUE(xt::all(xt::equal(xt::isinf(fused), xt::isinf(oracle))));
          EXPECT_LT(max_abs_diff(xt::xarray<double>(xt::where(mask, 0.0, fused)),
                                 xt::xarray<double>(xt::where(mask, 0.0, oracle))),
                    1e-14);
          EXPECT_LT(max_abs_diff(fused_grad, oracle_grad), 1e-13);
        }
      }
    }
  }
}

TEST(Softmax, GradcheckEveryAxis) {
  for (const auto& [name, op] : kOps) {
    for (const Shape& shape : kGradcheckShapes) {
      for (Index axis = -Index(shape.size()); axis < Index(shape.size()); ++axis) {
        SCOPED_TRACE(std::string(name) + " " + format_shape(shape) + " axis " + std::to_string(axis));
        EXPECT_TRUE(passes_gradcheck([op = op, axis](const Inputs& x) { return op(x[0], axis); },
                                     {random_tensor(shape, 15, true, -2.0, 2.0)}));
      }
    }
  }
}

// Masked cases: (input shape, mask shape, axis, mask). The mask is true where a score is removed.
struct MaskedCase {
  Shape shape;
  Index axis;
  Mask mask;
};

std::vector<MaskedCase> masked_cases() {
  const auto random_mask = [](const Shape& shape, std::uint64_t seed) {
    return Mask(xt::greater(random_tensor(shape, seed, false, 0.0, 1.0).value(), 0.6));
  };
  // Lanes long enough for the vectorised passes (a batch is up to 16 floats or 8 doubles), one of
  // them fully masked.
  Mask long_rows = random_mask({3, 40}, 29);
  xt::view(long_rows, 1, xt::all()) = true;
  return {
      {{3, 4}, 1, random_mask({3, 4}, 21)},
      {{3, 4}, 0, random_mask({3, 4}, 22)},
      {{2, 3, 4}, -1, random_mask({1, 3, 4}, 23)},  // broadcast over the batch
      {{2, 3, 4}, 1, random_mask({2, 1, 4}, 24)},
      {{2, 3, 4}, 0, random_mask({4}, 25)},
      {{3, 4}, 1, Mask{{false, true, false, false}, {true, true, true, true}, {false, false, false, true}}},    // row 1
      {{4, 3}, 0, Mask{{false, true, false}, {true, true, false}, {false, true, true}, {false, true, false}}},  // col 1
      {{3, 40}, 1, long_rows},
      {{5, 24}, 0, random_mask({5, 24}, 30)},
  };
}

TEST(Softmax, GradcheckThroughMaskedFill) {
  for (const MaskedCase& c : masked_cases()) {
    SCOPED_TRACE(format_shape(c.shape) + " axis " + std::to_string(c.axis) + " mask " + format_shape(c.mask.shape()));
    const Mask mask = c.mask;
    const Index axis = c.axis;
    EXPECT_TRUE(passes_gradcheck([&](const Inputs& x) { return softmax(masked_fill(x[0], mask, -kInf), axis); },
                                 {random_tensor(c.shape, 26, true, -2.0, 2.0)}));
    // log_softmax is -inf at masked entries, where finite differences are undefined: those outputs
    // are zeroed after it (as a masked loss would), which keeps every other path in the check.
    EXPECT_TRUE(passes_gradcheck(
        [&](const Inputs& x) { return masked_fill(log_softmax(masked_fill(x[0], mask, -kInf), axis), mask, 0.0); },
        {random_tensor(c.shape, 27, true, -2.0, 2.0)}));
  }
}

TEST(Softmax, MaskedEntriesGetExactlyZeroProbability) {
  for (const MaskedCase& c : masked_cases()) {
    SCOPED_TRACE(format_shape(c.shape) + " axis " + std::to_string(c.axis));
    const auto x = masked_fill(random_tensor(c.shape, 28, false, -2.0, 2.0), c.mask, -kInf);
    const xt::xarray<double> y = softmax(x, c.axis).value();
    const xt::xarray<double> logy = log_softmax(x, c.axis).value();
    const xt::xarray<double> full_mask = xt::broadcast(c.mask, c.shape);
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (full_mask.data()[i]) {
        EXPECT_EQ(y.data()[i], 0.0);
        EXPECT_EQ(logy.data()[i], -kInf);
      } else {
        EXPECT_GT(y.data()[i], 0.0);
        EXPECT_TRUE(std::isfinite(logy.data()[i]));
      }
    }
  }
}

// A lane whose entries are all -inf: softmax zeros, log_softmax -inf, zero gradient, no NaN, and
// every other lane bit for bit what it is without the masked one. Over axis 1 the lane is row 1
// of a [3,4] input; over axis 0 it is the same data transposed (column 1 of a [4,3] input).
TEST(Softmax, FullyMaskedLaneIsZeroWithZeroGradient) {
  xt::xarray<double> full = random_tensor({3, 4}, 31, false).value();
  xt::view(full, 1, xt::all()) = -kInf;
  const xt::xarray<double> rest = xt::view(full, xt::keep(0, 2), xt::all());
  const xt::xarray<double> seed_full = random_tensor({3, 4}, 32, false).value();
  const xt::xarray<double> seed_rest = xt::view(seed_full, xt::keep(0, 2), xt::all());
  for (const auto& [name, op] : kOps) {
    const bool log = std::string(name) == "log_softmax";
    for (const Index axis : {Index(1), Index(0)}) {
      SCOPED_TRACE(std::string(name) + " axis " + std::to_string(axis));
      // Rows as lanes for axis 1, columns for axis 0; its own inverse.
      const auto orient = [axis](const xt::xarray<double>& m) {
        return axis == 1 ? m : xt::xarray<double>(xt::transpose(m));
      };
      const Tensor<double> a(orient(full), true), b(orient(rest), true);
      GradientTape tape(/*persistent=*/true);
      const auto ya = op(a, axis), yb = op(b, axis);
      tape.backward(ya, orient(seed_full));
      tape.backward(yb, orient(seed_rest));
      const xt::xarray<double> y_full = orient(ya.value()), dx_full = orient(a.grad());
      EXPECT_TRUE(xt::view(y_full, 1, xt::all()) == xt::xarray<double>(xt::ones<double>({4}) * (log ? -kInf : 0.0)));
      EXPECT_TRUE(xt::view(dx_full, 1, xt::all()) == xt::xarray<double>(xt::zeros<double>({4})));
      EXPECT_TRUE(xt::view(y_full, xt::keep(0, 2), xt::all()) == orient(yb.value()));
      EXPECT_TRUE(xt::view(dx_full, xt::keep(0, 2), xt::all()) == orient(b.grad()));
    }
  }
}

TEST(Softmax, FullyMaskedRowThroughMaskedFillGivesNoNaN) {
  // The attention case: every key of query 0 masked. The gradient reaching x is finite everywhere.
  const auto x = random_tensor({2, 3, 4}, 33);
  const Mask mask{{{true, true, true, true}, {false, true, false, false}, {false, false, false, false}}};
  GradientTape tape;
  const auto p = softmax(masked_fill(x, mask, -kInf), -1);
  tape.backward(p, random_tensor({2, 3, 4}, 34, false).value());
  for (std::size_t i = 0; i < x.numel(); ++i) {
    EXPECT_TRUE(std::isfinite(p.value().data()[i]));
    EXPECT_TRUE(std::isfinite(x.grad().data()[i]));
  }
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(p.value()(b, 0, k), 0.0);
}

TEST(Softmax, NaNInputMakesItsLaneNaN) {
  // As PyTorch: a NaN poisons its own lane (so anomaly mode can see it) and no other.
  for (const auto& [name, op] : kOps) {
    SCOPED_TRACE(name);
    const Tensor<double> x(xt::xarray<double>{{0.5, std::nan(""), -1.0}, {0.5, 2.0, -1.0}});
    const auto y = op(x, 1).value();
    for (std::size_t c = 0; c < 3; ++c) {
      EXPECT_TRUE(std::isnan(y(0, c)));
      EXPECT_TRUE(std::isfinite(y(1, c)));
    }
  }
}

TEST(Softmax, BitIdenticalAtAnyThreadCount) {
  const testing_support::ThreadCountTest thread_count_test;
  Generator gen(35);
  const auto x = Tensor<float>::randn({512, 300}, gen, 0.0f, 3.0f, true);
  const auto g = Tensor<float>::randn({512, 300}, gen).value();
  const auto run = [&](std::size_t threads, Index axis) {
    set_num_threads(threads);
    x.node()->clear_grad();
    GradientTape tape;
    const auto y = softmax(x, axis);
    tape.backward(y, g);
    return std::pair{y.value(), x.grad()};
  };
  for (const Index axis : {Index(1), Index(0)}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    const auto [y1, dx1] = run(1, axis);
    const auto [y2, dx2] = run(2, axis);
    EXPECT_TRUE(y1 == y2);
    EXPECT_TRUE(dx1 == dx2);
  }
}

TEST(Softmax, ZeroDimTensorIsOneLaneOfOneElement) {
  // torch.tensor(3.).softmax(0) is 1 and log_softmax(-1) is 0, both with gradient 0.
  for (const Index axis : {0, -1}) {
    const Tensor<double> x(xt::xarray<double>(3.0), true);
    GradientTape tape;
    const Tensor<double> p = softmax(x, axis), lp = log_softmax(x, axis);
    EXPECT_EQ(p.shape(), Shape{});
    EXPECT_EQ(p.item(), 1.0);
    EXPECT_EQ(lp.item(), 0.0);
    tape.backward(add(p, lp));
    EXPECT_EQ(x.grad()(), 0.0);
  }
  EXPECT_TRUE(passes_gradcheck([](const Inputs& x) { return log_softmax(softmax(x[0], 0), -1); },
                               {random_tensor({}, 37)}));
}

TEST(Softmax, BadAxisThrowsNamingOpAxisAndShape) {
  const auto x = random_tensor({2, 3}, 36);
  for (const auto& [name, op] : kOps) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(throws_with<ValueError>([&, op = op] { op(x, 2); }, {name, "axis 2", "[2,3]"}));
    EXPECT_TRUE(throws_with<ValueError>([&, op = op] { op(x, -3); }, {name, "axis -3", "[2,3]"}));
    EXPECT_TRUE(throws_with<ValueError>([&, op = op] { op(Tensor<double>(xt::xarray<double>(1.0)), 1); },
                                        {name, "axis 1", "[-1, 0]", "[]"}));
    EXPECT_TRUE(throws_with<ValueError>([&, op = op] { op(Tensor<double>(), 0); }, {name, "undefined"}));
  }
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;


// Row 1 fully masked (its softmax is all zeros, its log_softmax all -inf), the others in part.
const Mask kRowMask{{false, true, false, false}, {true, true, true, true}, {false, false, false, true}};
// Broadcast over [2, 2, 3, 4] scores: batch 0 masks keys 1 and 3, batch 1 every key (each of its
// lanes over the last axis is fully masked).
const Mask kKeyMask{{{{false, true, false, true}}}, {{{true, true, true, true}}}};

// softmax / log_softmax of x with the masked entries at -inf; log_softmax's -inf outputs are
// zeroed after it (as a masked loss would), where finite differences are undefined.
auto masked_softmax(const Mask& mask, Index axis) {
  return [mask, axis](const auto& x) { return softmax(masked_fill(x[0], mask, -kInf), axis); };
}
auto masked_log_softmax(const Mask& mask, Index axis) {
  return [mask, axis](const auto& x) { return masked_fill(log_softmax(masked_fill(x[0], mask, -kInf), axis), mask, 0.0); };
}

// The last axis (one contiguous row per lane) and the others (lanes across rows), 0-d tensors,
// fully and partly masked rows.
TAPEGRAD_OP_SPEC(softmax) {
  OpSpec s("softmax", "softmax");
  s.samples = {
      // Softmax: the last axis (one contiguous row per lane) and the others (lanes across rows).
      OpCase("softmax_last_axis", [](const auto& x) { return softmax(x[0], -1); }, [] { return V{leaf({3, 4}, 318, -2.0, 2.0)}; }).at_scale([] { return V{leaf({64, 517}, 908, -2.0, 2.0)}; }),
      OpCase("softmax_axis_0", [](const auto& x) { return softmax(x[0], 0); }, [] { return V{leaf({3, 4}, 319, -2.0, 2.0)}; }).at_scale([] { return V{leaf({307, 71}, 909, -2.0, 2.0)}; }),
      OpCase("softmax_middle_axis", [](const auto& x) { return softmax(x[0], 1); },
       [] { return V{leaf({2, 3, 4}, 320, -2.0, 2.0)}; }).at_scale([] { return V{leaf({3, 301, 47}, 910, -2.0, 2.0)}; }),
      {"softmax_1d", [](const auto& x) { return softmax(x[0], 0); }, [] { return V{leaf({5}, 321, -2.0, 2.0)}; }},
      {"softmax_of_product", [](const auto& x) { return softmax(mul(x[0], x[1]), -1); },
       [] { return V{leaf({2, 5}, 322, -2.0, 2.0), leaf({5}, 323, -2.0, 2.0)}; }},
      {"softmax_masked_rows", masked_softmax(kRowMask, -1), [] { return V{leaf({3, 4}, 324, -2.0, 2.0)}; }},
      {"softmax_masked_columns", masked_softmax(kRowMask, 0), [] { return V{leaf({3, 4}, 325, -2.0, 2.0)}; }},
      {"softmax_broadcast_mask", masked_softmax(kKeyMask, -1), [] { return V{leaf({2, 2, 3, 4}, 326, -2.0, 2.0)}; }},
      {"softmax_0d", [](const auto& x) { return mul(softmax(x[0], 0), x[0]); }, [] { return V{leaf({}, 707)}; }},
  };
  s.errors = {
      error_input<ValueError>("softmax_axis_out_of_range", "`softmax`", "axis 2 of [2,3]",
                  [] { return softmax(bad_inputs::zeros({2, 3}), 2); },
                  {"softmax", "axis 2", "[2,3]"}),
      error_input<ValueError>("softmax_axis_1_of_0d", "`softmax`", "axis 1 of a 0-d tensor (0 and -1 are allowed)",
                  [] { return softmax(bad_inputs::zeros({}), 1); },
                  {"softmax", "axis 1", "[-1, 0]", "[]"}),
      error_input<ValueError>("softmax_undefined", "`softmax`", "undefined a",
                  [] { return softmax(bad_inputs::undefined(), -1); },
                  {"softmax", "'a'", "undefined"}),
  };
  s.pytorch = {
      {"softmax", softmax_like([](const T& x, Index d) { return softmax(x, d); })},
      {"softmax.with_dtype", softmax_like([](const T& x, Index d) { return softmax(x, d); })},
  };
  return s;
}

TAPEGRAD_OP_SPEC(log_softmax) {
  OpSpec s("log_softmax", "softmax");
  s.samples = {
      OpCase("log_softmax_last_axis", [](const auto& x) { return log_softmax(x[0], -1); },
       [] { return V{leaf({3, 4}, 327, -2.0, 2.0)}; }).at_scale([] { return V{leaf({64, 517}, 911, -2.0, 2.0)}; }),
      {"log_softmax_axis_0", [](const auto& x) { return log_softmax(x[0], 0); }, [] { return V{leaf({3, 4}, 328, -2.0, 2.0)}; }},
      OpCase("log_softmax_middle_axis", [](const auto& x) { return log_softmax(x[0], 1); },
       [] { return V{leaf({2, 3, 4}, 329, -2.0, 2.0)}; }).at_scale([] { return V{leaf({3, 301, 47}, 912, -2.0, 2.0)}; }),
      {"log_softmax_of_product", [](const auto& x) { return log_softmax(mul(x[0], x[1]), 0); },
       [] { return V{leaf({4, 3}, 330, -2.0, 2.0), leaf({4, 1}, 331, -2.0, 2.0)}; }},
      {"log_softmax_masked_rows", masked_log_softmax(kRowMask, -1), [] { return V{leaf({3, 4}, 332, -2.0, 2.0)}; }},
      {"log_softmax_masked_columns", masked_log_softmax(kRowMask, 0), [] { return V{leaf({3, 4}, 333, -2.0, 2.0)}; }},
      {"log_softmax_broadcast_mask", masked_log_softmax(kKeyMask, -1),
       [] { return V{leaf({2, 2, 3, 4}, 334, -2.0, 2.0)}; }},
      {"log_softmax_0d", [](const auto& x) { return add(log_softmax(x[0], -1), mul(x[0], x[0])); },
       [] { return V{leaf({}, 708)}; }},
  };
  s.errors = {
      error_input<ValueError>("log_softmax_axis_out_of_range", "`log_softmax`", "axis -3 of [2,3]",
                  [] { return log_softmax(bad_inputs::zeros({2, 3}), -3); },
                  {"log_softmax", "axis -3", "[2,3]"}),
  };
  s.pytorch = {
      {"log_softmax", softmax_like([](const T& x, Index d) { return log_softmax(x, d); })},
      {"log_softmax.dtype", softmax_like([](const T& x, Index d) { return log_softmax(x, d); })},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
