#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

// A reduction of a linear op has a zero second derivative; squaring first gives each case a
// non-zero one, so gradgradcheck has something to check.
std::vector<OpCase> reduce_and_shape_cases() {
  return {
      {"sum_all", [](const auto& x) { return sum(mul(x[0], x[0])); }, [] { return V{leaf({2, 3}, 101)}; }},
      OpCase("sum_axes", [](const auto& x) { return sum(mul(x[0], x[0]), {0, 2}); }, [] { return V{leaf({2, 3, 2}, 102)}; }).at_scale([] { return V{leaf({40, 301, 17}, 924)}; }),
      {"sum_keepdims", [](const auto& x) { return mul(sum(x[0], {1}, true), x[0]); }, [] { return V{leaf({3, 4}, 103)}; }},
      OpCase("mean_all", [](const auto& x) { return mean(mul(x[0], x[0])); }, [] { return V{leaf({2, 3}, 104)}; }).at_scale([] { return V{leaf({301, 200}, 925)}; }),
      {"mean_axes_keepdims", [](const auto& x) { return mul(mean(x[0], {-1}, true), x[0]); },
       [] { return V{leaf({2, 5}, 105)}; }},
      {"max_all", [](const auto& x) { return mul(max(x[0]), x[0]); }, [] { return V{leaf({2, 3}, 106)}; }},
      OpCase("min_all", [](const auto& x) { return mul(min(x[0]), x[0]); }, [] { return V{leaf({2, 3}, 1401)}; })
          .at_scale([] { return V{leaf({301, 401}, 1402)}; }),
      OpCase("max_axes", [](const auto& x) { return mul(max(x[0], {1}, true), x[0]); }, [] { return V{leaf({3, 4}, 107)}; }).at_scale([] { return V{leaf({301, 401}, 926)}; }),
      {"sum_to", [](const auto& x) { return mul(sum_to(x[0], {1, 3}), x[1]); },
       [] { return V{leaf({2, 3}, 108), leaf({1, 3}, 109)}; }},
      {"expand", [](const auto& x) { return mul(expand(x[0], {2, 3, 4}), x[1]); },
       [] { return V{leaf({3, 1}, 110), leaf({2, 3, 4}, 111)}; }},
      {"reshape", [](const auto& x) { return mul(reshape(x[0], {3, -1}), x[1]); },
       [] { return V{leaf({2, 3}, 112), leaf({3, 2}, 113)}; }},
      {"view_flatten", [](const auto& x) { return mul(view(x[0], {-1}), x[1]); },
       [] { return V{leaf({2, 3}, 131), leaf({6}, 132)}; }},
      OpCase("permute", [](const auto& x) { return mul(permute(x[0], {2, 0, 1}), x[1]); },
       [] { return V{leaf({2, 3, 4}, 114), leaf({4, 2, 3}, 115)}; }).at_scale([] { return V{leaf({20, 31, 47}, 927), leaf({47, 20, 31}, 928)}; }),
      {"transpose", [](const auto& x) { return mul(transpose(x[0], 0, 1), x[0].template to<ElementOf<decltype(x)>>()); },
       [] { return V{leaf({3, 3}, 116)}; }},
      {"slice_step", [](const auto& x) { return mul(slice(x[0], 1, 1, 5, 2), slice(x[0], 1, 0, 2)); },
       [] { return V{leaf({2, 5}, 118)}; }},
      {"narrow", [](const auto& x) { return mul(narrow(x[0], 0, 1, 2), x[1]); }, [] { return V{leaf({4, 2}, 119), leaf({2, 2}, 120)}; }},
      {"split_pieces", [](const auto& x) { const auto p = split(x[0], 2, 1); return mul(p[0], p[1]); },
       [] { return V{leaf({3, 4}, 121)}; }},
      {"chunk_pieces", [](const auto& x) { const auto p = chunk(x[0], 2, 0); return mul(p[0], p[1]); },
       [] { return V{leaf({4, 3}, 122)}; }},
      {"concat_with_constant", [](const auto& x) { return mul(concat({x[0], x[1], x[2]}, 1), concat({x[1], x[0], x[2]}, 1)); },
       [] { return V{leaf({2, 3}, 123), leaf({2, 3}, 124), constant({2, 1}, 125)}; }},
      {"index_select_repeats", [](const auto& x) { return mul(index_select(x[0], 1, IndexArray{2, 0, 2}), x[1]); },
       [] { return V{leaf({2, 3, 2}, 126), leaf({2, 3, 2}, 127)}; }},
      {"unsqueeze_squeeze", [](const auto& x) { return mul(squeeze(unsqueeze(x[0], 1)), x[0]); },
       [] { return V{leaf({4}, 117)}; }},
  };
}

}  // namespace tapegrad::testing
