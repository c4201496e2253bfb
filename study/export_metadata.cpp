#include "study/export_metadata.h"

#include <nlohmann/json.hpp>

#include "autograd/base/errors.h"

namespace tapegrad::study {

nn::Metadata export_metadata(const IndexArray& tokens, std::uint64_t step, const nn::Metadata& model) {
  if (tokens.dimension() != 2) {
    throw ShapeError("export_metadata: tokens must be [batch, seq], got " + format_shape(tokens.shape()));
  }
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t b = 0; b < tokens.shape()[0]; ++b) {
    nlohmann::json row = nlohmann::json::array();
    for (std::size_t s = 0; s < tokens.shape()[1]; ++s) row.push_back(tokens(b, s));
    rows.push_back(std::move(row));
  }
  nn::Metadata out{{"tokens", rows.dump()}, {"seq_len", std::to_string(tokens.shape()[1])},
                   {"step", std::to_string(step)}};
  for (const auto& [name, value] : model) out.emplace("model." + name, value);
  return out;
}

}  // namespace tapegrad::study
