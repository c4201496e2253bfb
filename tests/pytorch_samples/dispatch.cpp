#include "dispatch.h"

#include "autograd/ops/all.h"
#include "rows.h"
#include "tests/ops/op_spec.h"

namespace tapegrad::pytorch_samples {
namespace {

using T = Tensor<double>;

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

Reduction reduction_mode(Call& c, Reduction fallback = Reduction::Mean) {
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
Outputs split_row(Call& c) {
  const T x = c.tensor(c.input());
  const Value& how = c.arg(0);
  const Index dim = dim_arg(c, 1, 0);
  if (how.kind == Value::Kind::integer) return split(x, std::size_t(how.integer), dim);
  std::vector<std::size_t> sizes;
  for (Index s : c.integers(how)) sizes.push_back(std::size_t(s));
  return split(x, sizes, dim);
}

// x / y, x / s and s / y, with the rounding_mode keyword when the sample has one.
Outputs divide(Call& c) {
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

// ---- topk -------------------------------------------------------------------------------------

// topk(x, k, dim=-1, largest=True, sorted=True), each after k positional or a keyword: the values,
// and the indices as numbers.
Outputs topk_row(Call& c) {
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

// ---- loss weights, probability targets, log targets ------------------------------------------

// The weight= keyword of the losses: a tensor, or absent / None for no weight (undefined).
T weight_arg(Call& c) {
  const Value* v = c.kwarg("weight");
  return v && v->kind != Value::Kind::none ? c.tensor(*v) : T();
}

// The same as binary_cross_entropy takes it: nullopt when absent.
std::optional<T> optional_weight(Call& c) {
  const T weight = weight_arg(c);
  return weight.defined() ? std::optional<T>(weight) : std::nullopt;
}

// cross_entropy's target as class probabilities (a float tensor) rather than class indices.
bool is_probabilities(const Value& target) { return target.kind == Value::Kind::tensor && target.tensor->is_float(); }

// The ops whose specs do not yet hold their PyTorch names.
const std::map<std::string, Row> table = {
    // pointwise
    {"neg", unary([](const T& x) { return neg(x); })},
    {"exp", unary([](const T& x) { return exp(x); })},
    {"expm1", unary([](const T& x) { return expm1(x); })},
    {"log", unary([](const T& x) { return log(x); })},
    {"log1p", unary([](const T& x) { return log1p(x); })},
    {"sqrt", unary([](const T& x) { return sqrt(x); })},
    {"rsqrt", unary([](const T& x) { return rsqrt(x); })},
    {"reciprocal", unary([](const T& x) { return reciprocal(x); })},
    {"sin", unary([](const T& x) { return sin(x); })},
    {"cos", unary([](const T& x) { return cos(x); })},
    {"abs", unary([](const T& x) { return abs(x); })},
    {"sgn", unary([](const T& x) { return sign(x); })},
    {"sign", unary([](const T& x) { return sign(x); })},
    {"add", binary([](const T& a, const T& b) { return add(a, b); }, [](const T& a, double s) { return add(a, s); },
                   [](double s, const T& b) { return add(b, s); })},
    {"sub", binary([](const T& a, const T& b) { return sub(a, b); }, [](const T& a, double s) { return a - s; },
                   [](double s, const T& b) { return rsub(b, s); })},
    {"mul", binary([](const T& a, const T& b) { return mul(a, b); }, [](const T& a, double s) { return mul(a, s); },
                   [](double s, const T& b) { return mul(b, s); })},
    {"div.no_rounding_mode", divide},
    {"div.trunc_rounding", divide},
    {"div.floor_rounding", divide},
    {"true_divide", divide},
    {"pow", binary([](const T& a, const T& b) { return pow(a, b); }, [](const T& a, double s) { return pow(a, s); },
                   [](double s, const T& b) { return pow(s, b); })},
    // rsub(x, other) and x.__rop__(other) compute other op x.
    {"rsub", binary([](const T& a, const T& b) { return sub(b, a); }, [](const T& a, double s) { return rsub(a, s); },
                    [](double s, const T& b) { return b - s; })},
    {"__rsub__", binary([](const T& a, const T& b) { return sub(b, a); }, [](const T& a, double s) { return rsub(a, s); })},
    {"__radd__", binary([](const T& a, const T& b) { return add(b, a); }, [](const T& a, double s) { return add(a, s); })},
    {"__rmul__", binary([](const T& a, const T& b) { return mul(b, a); }, [](const T& a, double s) { return mul(a, s); })},
    {"__rdiv__", binary([](const T& a, const T& b) { return div(b, a); }, [](const T& a, double s) { return rdiv(a, s); })},
    // Tensor.__rpow__ copies a tensor other (torch.tensor(other) ** self): no gradient for it.
    {"__rpow__", binary([](const T& a, const T& b) { return pow(b.detach(), a); },
                        [](const T& a, double s) { return pow(s, a); })},
    {"maximum", binary_tensors([](const T& a, const T& b) { return maximum(a, b); })},
    {"minimum", binary_tensors([](const T& a, const T& b) { return minimum(a, b); })},
    {"max.binary", binary_tensors([](const T& a, const T& b) { return maximum(a, b); })},
    {"min.binary", binary_tensors([](const T& a, const T& b) { return minimum(a, b); })},
    // activations
    {"nn.functional.relu", unary([](const T& x) { return relu(x); })},
    {"sigmoid", unary([](const T& x) { return sigmoid(x); })},
    {"tanh", unary([](const T& x) { return tanh(x); })},
    {"nn.functional.gelu",
     [](Call& c) -> Outputs {
       const Value* approximate = c.kwarg("approximate");
       const std::string mode = approximate ? c.text(*approximate) : "none";
       if (mode != "none" && mode != "tanh") lacks("approximate='" + mode + "'");
       return {gelu(c.tensor(c.input()), mode == "tanh" ? GeluApproximation::Tanh : GeluApproximation::None)};
     }},
    // clamp(x, min, max) with tensor bounds, either None.
    {"clamp",
     [](Call& c) -> Outputs {
       const auto bound = [&c](std::size_t i) {
         return !c.has_arg(i) || c.arg(i).kind == Value::Kind::none ? T() : c.tensor(c.arg(i));
       };
       const T x = c.tensor(c.input());
       return {clamp(x, bound(0), bound(1))};
     }},
    // OpInfo's where is (a, condition, b).
    {"where",
     [](Call& c) -> Outputs {
       const T a = c.tensor(c.input());
       return {tapegrad::where(c.mask(c.arg(0)), a, c.tensor(c.arg(1)))};
     }},
    {"nn.functional.softplus",
     [](Call& c) -> Outputs {
       const Value* beta = c.kwarg("beta");
       const Value* threshold = c.kwarg("threshold");
       return {softplus(c.tensor(c.input()), beta ? c.number(*beta) : 1.0, threshold ? c.number(*threshold) : 20.0)};
     }},
    // reductions
    {"sum", reduction([](const T& x) { return sum(x); }, [](const T& x, const Axes& d, bool k) { return sum(x, d, k); })},
    {"mean", reduction([](const T& x) { return mean(x); }, [](const T& x, const Axes& d, bool k) { return mean(x, d, k); })},
    {"amax", reduction([](const T& x) { return max(x); }, [](const T& x, const Axes& d, bool k) { return max(x, d, k); })},
    {"max.reduction_no_dim", unary([](const T& x) { return max(x); })},
    {"max.reduction_with_dim", extreme_along_dim<true>},
    {"min.reduction_no_dim", unary([](const T& x) { return min(x); })},
    {"min.reduction_with_dim", extreme_along_dim<false>},
    // shape ops
    {"reshape", [](Call& c) -> Outputs { return {reshape(c.tensor(c.input()), c.integers(c.arg(0)))}; }},
    {"view", [](Call& c) -> Outputs { return {view(c.tensor(c.input()), c.integers(c.arg(0)))}; }},
    {"permute", [](Call& c) -> Outputs { return {permute(c.tensor(c.input()), c.integers(c.arg(0)))}; }},
    {"transpose",
     [](Call& c) -> Outputs { return {transpose(c.tensor(c.input()), c.integer(c.arg(0)), c.integer(c.arg(1)))}; }},
    {"unsqueeze", [](Call& c) -> Outputs { return {unsqueeze(c.tensor(c.input()), c.integer(c.arg(0)))}; }},
    {"squeeze",
     [](Call& c) -> Outputs {
       const T x = c.tensor(c.input());
       return {c.has_arg(0) ? squeeze(x, c.integer(c.arg(0))) : squeeze(x)};
     }},
    {"expand", [](Call& c) -> Outputs { return {expand(c.tensor(c.input()), c.integers(c.arg(0)))}; }},
    {"narrow",
     [](Call& c) -> Outputs {
       return {narrow(c.tensor(c.input()), c.integer(c.arg(0)), c.integer(c.arg(1)), c.integer(c.arg(2)))};
     }},
    {"cat", [](Call& c) -> Outputs { return {cat(c.tensors(c.input()), dim_arg(c, 0, 0))}; }},
    {"chunk",
     [](Call& c) -> Outputs {
       const T x = c.tensor(c.input());
       return chunk(x, std::size_t(c.integer(c.arg(0))), dim_arg(c, 1, 0));
     }},
    {"split", split_row},
    {"split.list_args", split_row},
    {"split_with_sizes", split_row},
    {"index_select",
     [](Call& c) -> Outputs {
       return {index_select(c.tensor(c.input()), c.integer(c.arg(0)), c.indices(c.arg(1)))};
     }},
    // linear algebra
    {"matmul", [](Call& c) -> Outputs { return {matmul(c.tensor(c.input()), c.tensor(c.arg(0)))}; }},
    {"nn.functional.linear",
     [](Call& c) -> Outputs {
       const T x = c.tensor(c.input());
       const T weight = c.tensor(c.arg(0));
       return {linear(x, weight, c.has_arg(1) ? c.tensor(c.arg(1)) : T())};
     }},
    {"einsum", [](Call& c) -> Outputs { return {einsum(c.text(c.arg(0)), c.tensors(c.input()))}; }},
    // softmax, normalisation, masking, embedding, losses
    {"softmax", softmax_like([](const T& x, Index d) { return softmax(x, d); })},
    {"softmax.with_dtype", softmax_like([](const T& x, Index d) { return softmax(x, d); })},
    {"log_softmax", softmax_like([](const T& x, Index d) { return log_softmax(x, d); })},
    {"log_softmax.dtype", softmax_like([](const T& x, Index d) { return log_softmax(x, d); })},
    {"nn.functional.layer_norm",
     [](Call& c) -> Outputs {
       const T x = c.tensor(c.input());
       Shape normalized;
       for (Index s : c.integers(c.arg(0))) normalized.push_back(std::size_t(s));
       const T weight = c.has_arg(1) ? c.tensor(c.arg(1)) : T();
       const T bias = c.has_arg(2) ? c.tensor(c.arg(2)) : T();
       const Value* eps = c.kwarg("eps");
       return {layer_norm(x, normalized, weight, bias, eps ? c.number(*eps) : 1e-5)};
     }},
    {"masked_fill",
     [](Call& c) -> Outputs {
       const T x = c.tensor(c.input());
       const Value& value = c.arg(1);
       if (value.kind == Value::Kind::tensor) return {masked_fill(x, c.mask(c.arg(0)), c.tensor(value))};
       return {masked_fill(x, c.mask(c.arg(0)), c.number(value))};
     }},
    {"nn.functional.dropout",
     [](Call& c) -> Outputs {
       const Value* p = c.kwarg("p");
       const Value* training = c.kwarg("training");
       Generator gen(0);
       return {dropout(c.tensor(c.input()), p ? c.number(*p) : 0.5, training ? c.boolean(*training) : true, gen)};
     }},
    {"nn.functional.embedding",
     [](Call& c) -> Outputs {
       const Value* padding_idx = c.kwarg("padding_idx");
       // OpInfo calls it as (weight, indices).
       return {embedding(c.tensor(c.input()), c.indices(c.arg(0)),
                         padding_idx ? std::optional<Index>(c.integer(*padding_idx)) : std::nullopt)};
     }},
    {"nn.functional.cross_entropy",
     [](Call& c) -> Outputs {
       CrossEntropyOptions<double> options;
       options.weight = weight_arg(c);
       options.reduction = reduction_mode(c);
       if (const Value* v = c.kwarg("ignore_index")) options.ignore_index = c.integer(*v);
       if (const Value* v = c.kwarg("label_smoothing")) options.label_smoothing = c.number(*v);
       const T logits = c.tensor(c.input());
       const Value& target = c.arg(0);
       if (is_probabilities(target)) return {cross_entropy(logits, c.tensor(target), options)};
       return {cross_entropy(logits, c.indices(target), options)};
     }},
    {"nn.functional.nll_loss",
     [](Call& c) -> Outputs {
       NllLossOptions<double> options;
       options.weight = weight_arg(c);
       options.reduction = reduction_mode(c);
       if (const Value* v = c.kwarg("ignore_index")) options.ignore_index = c.integer(*v);
       const T log_probs = c.tensor(c.input());
       return {nll_loss(log_probs, c.indices(c.arg(0)), options)};
     }},
    {"nn.functional.kl_div",
     [](Call& c) -> Outputs {
       const Value* log_target = c.kwarg("log_target");
       const T log_input = c.tensor(c.input());
       return {kl_div(log_input, c.tensor(c.arg(0)), reduction_mode(c), log_target && c.boolean(*log_target))};
     }},
    {"nn.functional.mse_loss",
     [](Call& c) -> Outputs {
       const T input = c.tensor(c.input());
       return {mse_loss(input, c.tensor(c.arg(0)), reduction_mode(c))};
     }},
    // indexing, binary cross-entropy
    {"gather",
     [](Call& c) -> Outputs { return {gather(c.tensor(c.input()), c.integer(c.arg(0)), c.indices(c.arg(1)))}; }},
    {"scatter_add",
     [](Call& c) -> Outputs {
       return {scatter_add(c.tensor(c.input()), c.integer(c.arg(0)), c.indices(c.arg(1)), c.tensor(c.arg(2)))};
     }},
    {"index_fill",
     [](Call& c) -> Outputs {
       const Value& value = c.arg(2);
       if (value.kind == Value::Kind::tensor) lacks("a fill value given as a tensor (with its gradient)");
       return {index_fill(c.tensor(c.input()), c.integer(c.arg(0)), c.indices(c.arg(1)), c.number(value))};
     }},
    {"nn.functional.binary_cross_entropy",
     [](Call& c) -> Outputs {
       const T probs = c.tensor(c.input());
       return {binary_cross_entropy(probs, c.tensor(c.arg(0)), reduction_mode(c), optional_weight(c))};
     }},
    {"nn.functional.binary_cross_entropy_with_logits",
     [](Call& c) -> Outputs {
       const T logits = c.tensor(c.input());
       const T target = c.tensor(c.arg(0));
       std::optional<T> pos_weight;
       if (const Value* v = c.kwarg("pos_weight"); v && v->kind != Value::Kind::none) pos_weight = c.tensor(*v);
       return {binary_cross_entropy_with_logits(logits, target, reduction_mode(c), pos_weight, optional_weight(c))};
     }},
    // topk
    {"topk", topk_row},
};

}  // namespace

const std::map<std::string, Row>& dispatch_table() {
  static const std::map<std::string, Row> all = [] {
    std::map<std::string, Row> rows = table;
    for (const auto& spec : testing::op_specs())
      for (const auto& name : spec.pytorch)
        if (!rows.emplace(name.opinfo, name.call).second)
          throw std::logic_error("PyTorch name " + name.opinfo + " of spec " + spec.name + " is mapped twice");
    return rows;
  }();
  return all;
}

}  // namespace tapegrad::pytorch_samples
