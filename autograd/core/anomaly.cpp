#include "autograd/core/anomaly.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tapegrad::detail {

constinit thread_local bool anomaly_mode = false;
constinit thread_local const BackwardSite* BackwardSite::current = nullptr;

namespace {

template <class T>
std::string describe_value(T v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

// "-inf in <container> of shape [2,3] at index [0,1] (1 of 6 elements not finite)"
template <class T>
std::string describe_bad_element(const xt::xarray<T>& values, std::size_t flat, const std::string& container) {
  const auto& shape = values.shape();
  Shape index(shape.size());
  for (std::size_t d = shape.size(), rest = flat; d-- > 0; rest /= shape[d]) index[d] = rest % shape[d];
  const auto bad = std::count_if(values.begin(), values.end(), [](T v) { return !std::isfinite(v); });
  return describe_value(values.data()[flat]) + " in " + container + " of shape " + format_shape(shape) + " at index " +
         format_shape(index) + " (" + std::to_string(bad) + " of " + std::to_string(values.size()) +
         " elements not finite)";
}

// The first element that satisfies pred, or values.size().
template <class T, class Pred>
std::size_t first_index(const xt::xarray<T>& values, Pred pred) {
  const T* v = values.data();
  return static_cast<std::size_t>(std::find_if(v, v + values.size(), pred) - v);
}

}  // namespace

template <class T>
bool holds_inf(const xt::xarray<T>& values) {
  return first_index(values, [](T v) { return std::isinf(v); }) < values.size();
}

template <class T>
void check_forward(const char* op, const std::source_location& where, const xt::xarray<T>& value, bool inputs_hold_inf) {
  std::size_t bad = first_index(value, [](T v) { return std::isnan(v); });
  if (bad == value.size() && !inputs_hold_inf) bad = first_index(value, [](T v) { return std::isinf(v); });
  if (bad == value.size()) return;
  throw AnomalyError("anomaly mode: " + describe_call(op, where) + " produced " +
                     describe_bad_element(value, bad, "its output"));
}

template <class T>
void check_gradient(const Node<T>& input, const xt::xarray<T>& grad, const char* context) {
  const std::size_t bad = first_index(grad, [](T v) { return !std::isfinite(v); });
  if (bad == grad.size()) return;
  const BackwardSite* site = BackwardSite::current;
  const std::string producer = site != nullptr ? "the backward of " + describe_call(site->op, site->where)
                               : context != nullptr ? std::string(context)
                                                    : std::string("a gradient added outside backward");
  const std::string named = input.name.empty() ? "" : " '" + input.name + "'";
  const std::string target = input.is_leaf ? "the gradient of the leaf" + named
                                           : "the gradient of" + named + " the output of " + input.op;
  throw AnomalyError("anomaly mode: " + producer + " produced " + describe_bad_element(grad, bad, target));
}

#define TAPEGRAD_INSTANTIATE_ANOMALY(T)                                                                      \
  template bool holds_inf(const xt::xarray<T>&);                                                             \
  template void check_forward(const char*, const std::source_location&, const xt::xarray<T>&, bool);         \
  template void check_gradient(const Node<T>&, const xt::xarray<T>&, const char*);
TAPEGRAD_INSTANTIATE_ANOMALY(float)
TAPEGRAD_INSTANTIATE_ANOMALY(double)

}  // namespace tapegrad::detail
