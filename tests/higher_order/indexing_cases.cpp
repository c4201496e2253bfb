#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

namespace {

// Entries (k * 7) % size laid out in `shape`: repeats and every row of a small axis. The cases
// take shape and size from their inputs, which at_scale makes larger.
IndexArray spread(const Shape& shape, std::size_t size) {
  IndexArray a = IndexArray::from_shape(shape);
  for (std::size_t k = 0; k < a.size(); ++k) a.data()[k] = Index((k * 7) % size);
  return a;
}

}  // namespace

// gather, scatter_add and index_fill are linear in their tensors: each case multiplies by an
// input so that gradgradcheck has a non-zero second derivative to check.
std::vector<OpCase> indexing_cases() {
  return {
      OpCase("gather_repeats", [](const auto& x) { return mul(gather(x[0], 1, spread(x[1].shape(), x[0].shape()[1])), x[1]); },
             [] { return V{leaf({2, 3}, 401), leaf({2, 4}, 402)}; })
          .at_scale([] { return V{leaf({300, 40}, 403), leaf({300, 50}, 404)}; }),
      {"gather_dim0_smaller_index", [](const auto& x) { return mul(gather(x[0], 0, spread({2, 2, 1}, 3)), x[1]); },
       [] { return V{leaf({3, 2, 2}, 405), leaf({2, 2, 1}, 406)}; }},
      OpCase("scatter_add_self_and_src",
             [](const auto& x) { return mul(scatter_add(x[0], 0, spread(x[1].shape(), x[0].shape()[0]), x[1]), x[0]); },
             [] { return V{leaf({3, 3}, 407), leaf({4, 3}, 408)}; })
          .at_scale([] { return V{leaf({40, 300}, 409), leaf({50, 300}, 410)}; }),
      {"scatter_add_src_larger_than_index",
       [](const auto& x) { return mul(scatter_add(x[0], -1, spread({2, 2}, 3), x[1]), x[0]); },
       [] { return V{leaf({2, 3}, 411), leaf({3, 3}, 412)}; }},
      OpCase("index_fill_negative_and_repeats",
             [](const auto& x) { return mul(index_fill(x[0], 1, IndexArray{-1, 0, -1}, 0.5), x[0]); },
             [] { return V{leaf({2, 4, 3}, 413)}; })
          .at_scale([] { return V{leaf({100, 10, 100}, 414)}; }),
  };
}

}  // namespace tapegrad::testing
