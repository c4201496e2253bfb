#pragma once
// The one table from a PyTorch OpInfo name (generate_samples.py's OPS) to tapegrad calls.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "call.h"

namespace tapegrad::pytorch_samples {

// An op's outputs in PyTorch's order (one tensor, or the pieces of split and chunk).
using Outputs = std::vector<Tensor<double>>;
// Calls tapegrad with a sample's arguments; throws Unsupported when it needs what tapegrad lacks.
using Row = std::function<Outputs(Call&)>;

const std::map<std::string, Row>& dispatch_table();

}  // namespace tapegrad::pytorch_samples
