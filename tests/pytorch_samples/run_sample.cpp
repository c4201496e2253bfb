#include "run_sample.h"

#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "compare.h"

namespace tapegrad::pytorch_samples {
namespace {

std::string error_kind(const Error& e) {
  if (dynamic_cast<const ShapeError*>(&e)) return "ShapeError";
  if (dynamic_cast<const ValueError*>(&e)) return "ValueError";
  if (dynamic_cast<const TapeError*>(&e)) return "TapeError";
  return "Error";
}

void collect_float_inputs(const Value& v, std::map<int, const TensorData*>& out) {
  if (v.kind == Value::Kind::tensor && v.tensor->is_float()) out.emplace(v.tensor->leaf, v.tensor.get());
  for (const Value& item : v.list) collect_float_inputs(item, out);
}

// Compares outputs; builds sum(out * G) over the outputs PyTorch seeded.
std::optional<std::string> compare_outputs(const Sample& sample, const Outputs& outputs, Tensor<double>& loss) {
  if (outputs.size() != sample.outputs.size()) {
    return "gives " + std::to_string(outputs.size()) + " outputs, PyTorch " + std::to_string(sample.outputs.size());
  }
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const TensorData& want = *sample.outputs[k].tensor;
    // An integer output (max's indices) comes back as exact float64 numbers, compared exactly.
    if (!want.is_float()) {
      if (outputs[k].value() != xt::xarray<double>(xt::cast<double>(want.integers))) {
        return "output " + std::to_string(k) + " (" + want.dtype + " in PyTorch) differs";
      }
      continue;
    }
    if (auto why = mismatch(outputs[k].value(), want.values)) return "output " + std::to_string(k) + ": " + *why;
    if (want.seed) {
      Tensor<double> term = sum(mul(outputs[k], Tensor<double>(*want.seed)));
      loss = loss.defined() ? add(loss, term) : term;
    }
  }
  return std::nullopt;
}

std::optional<std::string> compare_gradients(const Sample& sample, const Call& call) {
  std::map<int, const TensorData*> inputs;
  collect_float_inputs(sample.input, inputs);
  for (const Value& a : sample.args) collect_float_inputs(a, inputs);
  for (const auto& [name, v] : sample.kwargs) collect_float_inputs(v, inputs);
  for (const auto& [leaf, data] : inputs) {
    const std::string& name = call.leaf_names().at(leaf);
    auto it = call.leaves().find(leaf);
    const bool has = it != call.leaves().end() && it->second.has_grad();
    // No gradient on either side means zeros (PyTorch's None for an unused input; tapegrad's
    // none for an input the loss does not reach).
    const xt::xarray<double> zeros = xt::zeros<double>(data->shape);
    const xt::xarray<double>& got = has ? it->second.grad() : zeros;
    const xt::xarray<double>& want = data->grad ? *data->grad : zeros;
    if (auto why = mismatch(got, want)) return "gradient of " + name + ": " + *why;
  }
  return std::nullopt;
}

}  // namespace

Outcome run_sample(const Sample& sample, const Row& row) {
  Call call(sample);
  GradientTape tape;
  try {
    const Outputs outputs = row(call);
    call.require_all_used();
    Tensor<double> loss;
    if (auto why = compare_outputs(sample, outputs, loss)) return {false, *why};
    if (loss.defined() && loss.requires_grad()) tape.backward(loss);
    if (auto why = compare_gradients(sample, call)) return {false, *why};
  } catch (const Unsupported& e) {
    return {false, e.what()};
  } catch (const Error& e) {
    return {false, "tapegrad throws " + error_kind(e) + ": " + e.what()};
  }
  return {true, ""};
}

}  // namespace tapegrad::pytorch_samples
