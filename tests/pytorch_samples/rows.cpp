#include "rows.h"

namespace tapegrad::pytorch_samples {

void lacks(const std::string& what) { throw Unsupported("needs " + what + ", which tapegrad lacks"); }

Index dim_arg(Call& c, std::size_t position, Index fallback) {
  if (c.has_arg(position)) return c.integer(c.arg(position));
  const Value* dim = c.kwarg("dim");
  return dim ? c.integer(*dim) : fallback;
}

void require_float64(Call& c) {
  if (const Value* dtype = c.kwarg("dtype"); dtype && dtype->text != "float64") lacks("dtype=" + dtype->text);
}

}  // namespace tapegrad::pytorch_samples
