#pragma once
// The building blocks of the op specs' PyTorch calls (tests/ops/op_spec.h): what they read from a
// sample's arguments beyond Call's conversions, and the calls that several ops share.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autograd/ops/all.h"
#include "call.h"

namespace tapegrad::pytorch_samples {

using T = Tensor<double>;
// An op's outputs in PyTorch's order (one tensor, or the pieces of split and chunk).
using Outputs = std::vector<Tensor<double>>;
// Calls tapegrad with a sample's arguments; throws Unsupported when it needs what tapegrad lacks.
using Row = std::function<Outputs(Call&)>;

// Throws Unsupported: the sample needs `what`, which tapegrad lacks.
[[noreturn]] void lacks(const std::string& what);

// The dim argument: positional at `position`, else the dim= keyword, else `fallback`.
Index dim_arg(Call& c, std::size_t position, Index fallback);

// Unsupported unless the dtype= keyword, when given, is float64 (the samples' own dtype).
void require_float64(Call& c);

template <class Fn> Row unary(Fn fn) {
  return [fn](Call& c) -> Outputs { return {fn(c.tensor(c.input()))}; };
}

// input op args[0], where either may be a number (torch.add(x, 2.0), torch.sub(2.0, x)): the
// three functions take (tensor, tensor), (tensor, number) and (number, tensor).
template <class OnTensors, class TensorNumber, class NumberTensor>
Row binary(OnTensors on_tensors, TensorNumber tensor_number, NumberTensor number_tensor) {
  return [=](Call& c) -> Outputs {
    const Value& a = c.input();
    const Value& b = c.arg(0);
    if (a.kind != Value::Kind::tensor) return {number_tensor(c.number(a), c.tensor(b))};
    if (b.kind != Value::Kind::tensor) return {tensor_number(c.tensor(a), c.number(b))};
    return {on_tensors(c.tensor(a), c.tensor(b))};
  };
}

// The same when PyTorch never passes a number first (x.__radd__(other): x is the tensor).
template <class OnTensors, class TensorNumber> Row binary(OnTensors on_tensors, TensorNumber tensor_number) {
  return binary(on_tensors, tensor_number, [](double, const T&) -> T { lacks("a number as the first operand"); });
}

// input op args[0] on two tensors only (torch.maximum).
template <class OnTensors> Row binary_tensors(OnTensors on_tensors) {
  return [on_tensors](Call& c) -> Outputs { return {on_tensors(c.tensor(c.input()), c.tensor(c.arg(0)))}; };
}

// sum, mean, amax: dim (an int or a list) and keepdim as keywords; no dim reduces everything.
template <class All, class Along> Row reduction(All all, Along along) {
  return [all, along](Call& c) -> Outputs {
    const T x = c.tensor(c.input());
    const Value* dim = c.kwarg("dim");
    const Value* keepdim = c.kwarg("keepdim");
    if (!dim) return {all(x)};
    return {along(x, c.integers(*dim), keepdim && c.boolean(*keepdim))};
  };
}

inline Reduction reduction_mode(Call& c, Reduction fallback = Reduction::Mean) {
  const Value* v = c.kwarg("reduction");
  if (!v) return fallback;
  const std::string& mode = c.text(*v);
  if (mode == "none") return Reduction::None;
  if (mode == "mean") return Reduction::Mean;
  if (mode == "sum") return Reduction::Sum;
  if (mode == "batchmean") return Reduction::BatchMean;
  lacks("reduction='" + mode + "'");
}

// softmax and log_softmax, whose .with_dtype/.dtype variants pass dtype=float64: already ours.
template <class Fn> Row softmax_like(Fn fn) {
  return [fn](Call& c) -> Outputs {
    require_float64(c);
    return {fn(c.tensor(c.input()), c.integer(c.arg(0)))};
  };
}

// split(x, size or sizes, dim) and split_with_sizes(x, sizes, dim).
inline Outputs split_row(Call& c) {
  const T x = c.tensor(c.input());
  const Value& how = c.arg(0);
  const Index dim = dim_arg(c, 1, 0);
  if (how.kind == Value::Kind::integer) return split(x, std::size_t(how.integer), dim);
  std::vector<std::size_t> sizes;
  for (Index s : c.integers(how)) sizes.push_back(std::size_t(s));
  return split(x, sizes, dim);
}

// x / y, x / s and s / y, with the rounding_mode keyword when the sample has one.
inline Outputs divide(Call& c) {
  RoundingMode mode = RoundingMode::none;
  if (const Value* v = c.kwarg("rounding_mode"); v && v->kind != Value::Kind::none) {
    const std::string& name = c.text(*v);
    if (name == "trunc") mode = RoundingMode::trunc;
    else if (name == "floor") mode = RoundingMode::floor;
    else lacks("rounding_mode='" + name + "'");
  }
  const auto tensor_of = [&c](const Value& v) { return v.kind == Value::Kind::tensor ? c.tensor(v) : T(xt::xarray<double>(c.number(v))); };
  const Value& a = c.input();
  const Value& b = c.arg(0);
  if (mode == RoundingMode::none) {
    if (a.kind != Value::Kind::tensor) return {rdiv(c.tensor(b), c.number(a))};
    if (b.kind != Value::Kind::tensor) return {c.tensor(a) / c.number(b)};
  }
  return {div(tensor_of(a), tensor_of(b), mode)};
}

// max / min along a dim: values, and the indices as numbers.
template <bool largest> Outputs extreme_along_dim(Call& c) {
  const T x = c.tensor(c.input());
  const Index dim = dim_arg(c, 0, 0);
  const Value* keepdim = c.kwarg("keepdim");
  const bool keep = c.has_arg(1) ? c.boolean(c.arg(1)) : keepdim && c.boolean(*keepdim);
  const ValuesIndices<double> r = largest ? max(x, dim, keep) : min(x, dim, keep);
  return {r.values, T(xt::xarray<double>(xt::cast<double>(r.indices)))};
}

// topk(x, k, dim=-1, largest=True, sorted=True), each after k positional or a keyword: the values,
// and the indices as numbers.
inline Outputs topk_row(Call& c) {
  const T x = c.tensor(c.input());
  const auto flag = [&c](std::size_t position, const char* name, bool fallback) {
    if (c.has_arg(position)) return c.boolean(c.arg(position));
    const Value* v = c.kwarg(name);
    return v ? c.boolean(*v) : fallback;
  };
  const Index k = c.integer(c.arg(0));
  const Index dim = dim_arg(c, 1, -1);
  const ValuesIndices<double> r = topk(x, k, dim, flag(2, "largest", true), flag(3, "sorted", true));
  return {r.values, T(xt::xarray<double>(xt::cast<double>(r.indices)))};
}

// The weight= keyword of the losses: a tensor, or absent / None for no weight (undefined).
inline T weight_arg(Call& c) {
  const Value* v = c.kwarg("weight");
  return v && v->kind != Value::Kind::none ? c.tensor(*v) : T();
}

// The same as binary_cross_entropy takes it: nullopt when absent.
inline std::optional<T> optional_weight(Call& c) {
  const T weight = weight_arg(c);
  return weight.defined() ? std::optional<T>(weight) : std::nullopt;
}

// cross_entropy's target as class probabilities (a float tensor) rather than class indices.
inline bool is_probabilities(const Value& target) { return target.kind == Value::Kind::tensor && target.tensor->is_float(); }

}  // namespace tapegrad::pytorch_samples
