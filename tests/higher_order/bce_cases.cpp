#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

// binary_cross_entropy on probabilities drawn from [0.1, 0.9] (finite differences stay inside
// [0, 1]); binary_cross_entropy_with_logits on logits either side of 0, with and without
// pos_weight. Both have a parallel forward kernel, so one case of each runs at scale.
std::vector<OpCase> bce_cases() {
  return {
      OpCase("binary_cross_entropy_mean", [](const auto& x) { return binary_cross_entropy(x[0], x[1]); },
             [] { return V{leaf({2, 3}, 501, 0.1, 0.9), leaf({2, 3}, 502, 0.0, 1.0)}; })
          .at_scale([] { return V{leaf({300, 200}, 503, 0.1, 0.9), leaf({300, 200}, 504, 0.0, 1.0)}; }),
      {"binary_cross_entropy_none_0d", [](const auto& x) { return binary_cross_entropy(x[0], x[1], Reduction::None); },
       [] { return V{leaf({}, 505, 0.1, 0.9), leaf({}, 506, 0.0, 1.0)}; }},
      OpCase("binary_cross_entropy_with_logits_sum",
             [](const auto& x) { return binary_cross_entropy_with_logits(x[0], x[1], Reduction::Sum); },
             [] { return V{leaf({2, 3}, 507, -3.0, 3.0), leaf({2, 3}, 508, 0.0, 1.0)}; })
          .at_scale([] { return V{leaf({300, 200}, 509, -3.0, 3.0), leaf({300, 200}, 510, 0.0, 1.0)}; }),
      {"binary_cross_entropy_with_logits_pos_weight_none",
       [](const auto& x) { return binary_cross_entropy_with_logits(x[0], x[1], Reduction::None, x[2]); },
       [] { return V{leaf({2, 3}, 511, -3.0, 3.0), leaf({2, 3}, 512, 0.0, 1.0), leaf({3}, 513, 0.5, 2.0)}; }},
  };
}

}  // namespace tapegrad::testing
