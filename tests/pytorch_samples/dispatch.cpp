#include "dispatch.h"

#include <stdexcept>

#include "tests/ops/op_spec.h"

namespace tapegrad::pytorch_samples {

const std::map<std::string, Row>& dispatch_table() {
  static const std::map<std::string, Row> all = [] {
    std::map<std::string, Row> rows;
    for (const auto& spec : testing::op_specs())
      for (const auto& name : spec.pytorch)
        if (!rows.emplace(name.opinfo, name.call).second)
          throw std::logic_error("PyTorch name " + name.opinfo + " of spec " + spec.name + " is mapped twice");
    return rows;
  }();
  return all;
}

}  // namespace tapegrad::pytorch_samples
