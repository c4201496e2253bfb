#include "autograd/testing/detail/gradcheck_common.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "autograd/base/checks.h"
#include "autograd/kernels/layout/indices.h"
#include "autograd/core/tape.h"

namespace tapegrad::detail {

namespace {

std::string format_index(std::size_t flat, const Shape& shape) {
  return format_shape(kernels::unravel_index(flat, shape));
}

// The fixed seed of the integrity check's backward seed.
constexpr std::uint64_t kIntegritySeed = 20261124;

// The value and version of every input before gradcheck runs anything, to see what changed them.
template <class T>
class InputSnapshot {
 public:
  explicit InputSnapshot(const std::vector<Tensor<T>>& inputs) : inputs_(inputs) {
    for (const auto& x : inputs) before_.push_back({x.value(), x.version()});
  }

  // What `stage` (the forward, the backward) did to an input, or nothing. Bitwise, so that a
  // NaN that stays a NaN is no change and a -0 written over a 0 is one.
  std::optional<std::string> changes_by(const char* stage) const {
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      const Tensor<T>& x = inputs_[i];
      const auto& [value, version] = before_[i];
      const std::string what = std::string("gradcheck: the ") + stage + " of the checked function ";
      if (x.version() != version) {
        return what + "wrote " + input_label(i, x) + " in place (its version went from " + std::to_string(version) +
               " to " + std::to_string(x.version()) + "); an op must not modify its inputs";
      }
      const auto& now = x.value();
      if (now.shape() != value.shape()) {
        return what + "changed the shape of " + input_label(i, x) + " from " + format_shape(value.shape()) + " to " +
               format_shape(now.shape()) + "; an op must not modify its inputs";
      }
      for (std::size_t e = 0; e < now.size(); ++e) {
        if (std::memcmp(now.data() + e, value.data() + e, sizeof(T)) == 0) continue;
        return what + "changed the value of " + input_label(i, x) + " of shape " + format_shape(now.shape()) +
               " without counting an in-place write: element " + format_index(e, x.shape()) + " was " +
               format_number(value.data()[e]) + ", is now " + format_number(now.data()[e]) +
               "; an op must not modify its inputs";
      }
    }
    return std::nullopt;
  }

 private:
  struct Before {
    xt::xarray<T> value;
    std::uint64_t version;
  };
  const std::vector<Tensor<T>>& inputs_;
  std::vector<Before> before_;
};

// Where the second walk's gradient of input i is not twice the first's, or nothing. The second
// walk repeats the first bit for bit (ops are deterministic), so a gradient that accumulates is
// 2 g exactly; the tolerance only allows for a reduction whose order varies.
template <class T>
std::optional<std::string> not_doubled(std::size_t i, const Tensor<T>& x, const xt::xarray<T>& once) {
  const auto& twice = x.grad();
  double scale = 0.0;
  for (std::size_t e = 0; e < once.size(); ++e) scale = std::max(scale, std::abs(static_cast<double>(once.data()[e])));
  if (!(scale > 0.0)) return std::nullopt;  // a zero (or NaN) gradient cannot show it; the Jacobian check will
  const double allowed = 8.0 * std::numeric_limits<T>::epsilon() * 2.0 * scale;
  for (std::size_t e = 0; e < once.size(); ++e) {
    const double a = once.data()[e], b = twice.data()[e];
    if (std::abs(b - 2.0 * a) <= allowed) continue;
    return "gradcheck: a second backward did not double the gradient of " + input_label(i, x) + " of shape " +
           format_shape(x.shape()) + ": element " + format_index(e, x.shape()) + " is " + format_number(a) +
           " after one backward and " + format_number(b) + " after two (expected " + format_number(2.0 * a) +
           "); a backward must add into its inputs' gradients (add_gradient), not overwrite them";
  }
  return std::nullopt;
}

// "cube (called at op.cpp:12), mul (called at op.cpp:14)": the distinct ops on `tape` that read
// `input` directly, oldest first, at most three.
std::string ops_reading(const GradientTape& tape, const NodeBase* input) {
  std::vector<std::string> sites;
  std::size_t more = 0;
  for (const auto& entry : tape.entries()) {
    const bool reads = std::any_of(entry->inputs.begin(), entry->inputs.end(),
                                   [input](const GradientTape::Saved& s) { return s.node.get() == input; });
    if (!reads) continue;
    std::string site = describe_call(entry->op, entry->where);
    if (std::find(sites.begin(), sites.end(), site) != sites.end()) continue;
    if (sites.size() == 3) {
      ++more;
      continue;
    }
    sites.push_back(std::move(site));
  }
  std::string joined;
  for (const auto& s : sites) joined += (joined.empty() ? "" : ", ") + s;
  if (more > 0) joined += " and " + std::to_string(more) + " more";
  return joined;
}

}  // namespace

template <class T>
std::string input_label(std::size_t i, const Tensor<T>& t) {
  return "input " + std::to_string(i) + (t.name().empty() ? "" : " ('" + t.name() + "')");
}

template <class T>
void validate_inputs(const std::vector<Tensor<T>>& inputs, const char* who) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw ValueError(std::string(who) + ": input " + std::to_string(i) + " is an undefined tensor");
    }
    if (!inputs[i].is_leaf()) {
      throw ValueError(std::string(who) + ": " + input_label(i, inputs[i]) +
                       " is the output of an op; pass leaf tensors");
    }
  }
  if (std::none_of(inputs.begin(), inputs.end(), [](const auto& x) { return x.requires_grad(); })) {
    throw ValueError(std::string(who) + ": no input requires a gradient (of " + std::to_string(inputs.size()) +
                     " inputs); mark the ones to check with set_requires_grad(true)");
  }
}

template <class T>
Shape deterministic_output_shape(const CheckedFunction<T>& fn, const std::vector<Tensor<T>>& inputs) {
  const Tensor<T> first = fn(inputs);
  require_defined(first, "gradcheck", "the function's result");
  const Tensor<T> second = fn(inputs);
  require_defined(second, "gradcheck", "the function's result");
  require_output_shape(first.shape(), second.shape(), "a second call at the same inputs");
  const auto& a = first.value();
  const auto& b = second.value();
  for (std::size_t e = 0; e < a.size(); ++e) {
    if (std::memcmp(a.data() + e, b.data() + e, sizeof(T)) == 0) continue;
    throw ValueError("gradcheck: the function is not deterministic: two calls at the same inputs returned " +
                     format_number(a.data()[e]) + " and " + format_number(b.data()[e]) + " at output element " +
                     format_index(e, first.shape()) + " of shape " + format_shape(first.shape()) +
                     "; finite differences would read that noise as derivative, so gradcheck cannot judge it. "
                     "Reseed any Generator inside the function, or keep it out");
  }
  return first.shape();
}

void require_output_shape(const Shape& expected, const Shape& actual, const std::string& moved) {
  if (actual == expected) return;
  throw ShapeError("gradcheck: the function's result has shape " + format_shape(actual) + " with " + moved +
                   " but " + format_shape(expected) + " at the inputs as given; a Jacobian needs a result whose "
                   "shape does not depend on the input values");
}

template <class T>
void require_jacobian_fits(const Shape& output_shape, const std::vector<Tensor<T>>& inputs) {
  // One Jacobian row per output element and one column per input element that is checked, twice
  // (numeric and analytic): refuse up front, naming the sizes, rather than fail part-way (a
  // 90000-element input and output need 8.1e9 entries, 60 GiB).
  std::size_t columns = 0;
  for (const auto& x : inputs)
    if (x.requires_grad()) columns += x.numel();  // no overflow: these elements exist in memory
  allocatable(Shape{checked_numel(output_shape, "gradcheck", "the function's result"), columns}, sizeof(double), "gradcheck",
              "the Jacobian [output elements, input elements]");
}

template <class T>
std::optional<std::string> check_accumulation_and_integrity(const CheckedFunction<T>& fn,
                                                            const std::vector<Tensor<T>>& inputs) {
  const InputSnapshot<T> snapshot(inputs);
  for (const auto& x : inputs) x.node()->clear_grad();
  const auto cleared = [&inputs](std::optional<std::string> failure) {
    for (const auto& x : inputs) x.node()->clear_grad();
    return failure;
  };
  GradientTape tape(/*persistent=*/true);
  const Tensor<T> output = fn(inputs);
  require_defined(output, "gradcheck", "the function's result");
  if (auto failure = snapshot.changes_by("forward")) return failure;
  if (!output.requires_grad()) return std::nullopt;

  Generator gen(kIntegritySeed);
  const xt::xarray<T> seed = Tensor<T>::uniform(output.shape(), gen, T(0.5), T(1.5)).value();
  tape.backward(output, seed);
  if (auto failure = snapshot.changes_by("backward")) return cleared(failure);
  std::vector<std::optional<xt::xarray<T>>> once;
  for (const auto& x : inputs) {
    once.push_back(x.requires_grad() && x.has_grad() ? std::optional(x.grad()) : std::nullopt);
  }
  tape.backward(output, seed);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!once[i]) continue;
    if (auto failure = not_doubled(i, inputs[i], *once[i])) return cleared(failure);
  }
  return cleared(std::nullopt);
}

template <class T>
AnalyticJacobian analytic_jacobian(const CheckedFunction<T>& fn, const std::vector<Tensor<T>>& inputs,
                                   const Shape& output_shape) {
  GradientTape tape(/*persistent=*/true);
  const Tensor<T> output = fn(inputs);
  require_defined(output, "gradcheck", "the function's result");
  require_output_shape(output_shape, output.shape(), "a tape recording it");
  const std::size_t out_numel = output.numel();
  AnalyticJacobian jacobian{output.shape(), std::vector<xt::xarray<double>>(inputs.size()),
                            std::vector<std::string>(inputs.size())};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    jacobian.blocks[i] = xt::zeros<double>({out_numel, inputs[i].numel()});
    jacobian.read_by[i] = ops_reading(tape, inputs[i].node().get());
  }
  if (!output.requires_grad()) return jacobian;
  for (std::size_t o = 0; o < out_numel; ++o) {
    for (const auto& x : inputs) x.node()->clear_grad();
    xt::xarray<T> seed = xt::zeros<T>(output.value().shape());
    seed.data()[o] = T(1);
    tape.backward(output, seed);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].requires_grad() || !inputs[i].has_grad()) continue;  // no path: a zero row
      const auto& g = inputs[i].grad();
      std::copy(g.data(), g.data() + g.size(), jacobian.blocks[i].data() + o * g.size());  // row o
    }
  }
  for (const auto& x : inputs) x.node()->clear_grad();
  return jacobian;
}

std::optional<WorstElement> worst_element(const AnalyticJacobian& analytic, const NumericJacobian& numeric,
                                          const Tolerance& tolerance) {
  std::optional<WorstElement> worst;
  double worst_excess = 0.0;
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < numeric.size(); ++i) {
    for (std::size_t e = 0; e < numeric[i].size(); ++e) {
      for (std::size_t o = 0; o < numeric[i][e].size(); ++o) {
        const double a = analytic.blocks[i](o, e);
        const double n = numeric[i][e].data()[o];
        const double excess = std::isfinite(a) && std::isfinite(n)
                                  ? std::abs(a - n) - tolerance(i, e, o, a, n)
                                  : std::numeric_limits<double>::infinity();
        if (!(excess > 0.0)) continue;
        ++mismatches;
        if (worst && !(excess > worst_excess)) continue;  // ties (infinities) keep the first
        worst_excess = excess;
        worst = WorstElement{i, e, o, a, n, 0};
      }
    }
  }
  if (worst) worst->mismatches = mismatches;
  return worst;
}

template <class T>
GradcheckResult report(const WorstElement& worst, const AnalyticJacobian& analytic, const std::vector<Tensor<T>>& inputs,
                       double numeric_error, const std::string& how) {
  const Tensor<T>& x = inputs[worst.input];
  GradcheckMismatch mismatch{worst.input,
                             kernels::unravel_index(worst.element, x.shape()),
                             kernels::unravel_index(worst.output, analytic.output_shape),
                             worst.analytic,
                             worst.numeric,
                             numeric_error,
                             analytic.read_by[worst.input]};
  std::string message = "gradcheck: Jacobian mismatch for " + input_label(worst.input, x) + " of shape " +
                        format_shape(x.shape()) + ", element " + format_shape(mismatch.input_index) +
                        ", output element " + format_shape(mismatch.output_index) + " of output shape " +
                        format_shape(analytic.output_shape) + ": analytic " + format_number(worst.analytic) +
                        ", numeric " + format_number(worst.numeric) + " (estimated numeric error " +
                        format_number(numeric_error) + "; " + how + "). The worst of " +
                        std::to_string(worst.mismatches) + " mismatched element" + (worst.mismatches == 1 ? "" : "s") +
                        ".";
  message += mismatch.read_by.empty() ? " No recorded op reads this input directly."
                                      : " Ops that read this input directly: " + mismatch.read_by + ".";
  return {false, std::move(message), std::move(mismatch)};
}

#define TAPEGRAD_GRADCHECK_INSTANTIATE(T)                                                                        \
  template std::string input_label<T>(std::size_t, const Tensor<T>&);                                         \
  template void validate_inputs<T>(const std::vector<Tensor<T>>&, const char*);                                \
  template Shape deterministic_output_shape<T>(const CheckedFunction<T>&, const std::vector<Tensor<T>>&);        \
  template void require_jacobian_fits<T>(const Shape&, const std::vector<Tensor<T>>&);                         \
  template std::optional<std::string> check_accumulation_and_integrity<T>(const CheckedFunction<T>&,            \
                                                                          const std::vector<Tensor<T>>&);       \
  template AnalyticJacobian analytic_jacobian<T>(const CheckedFunction<T>&, const std::vector<Tensor<T>>&,      \
                                                 const Shape&);                                                 \
  template GradcheckResult report<T>(const WorstElement&, const AnalyticJacobian&, const std::vector<Tensor<T>>&, \
                                     double, const std::string&);
TAPEGRAD_GRADCHECK_INSTANTIATE(float)
TAPEGRAD_GRADCHECK_INSTANTIATE(double)
#undef TAPEGRAD_GRADCHECK_INSTANTIATE

}  // namespace tapegrad::detail
