#pragma once
// The one table from a PyTorch OpInfo name to a tapegrad call: the op specs' PyTorch names.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "rows.h"

namespace tapegrad::pytorch_samples {

const std::map<std::string, Row>& dispatch_table();

}  // namespace tapegrad::pytorch_samples
