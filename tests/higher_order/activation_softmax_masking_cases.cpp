#include <cstdint>
#include <limits>

#include <xtensor/xoperation.hpp>

#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Row 1 fully masked (its softmax is all zeros, its log_softmax all -inf), the others in part.
const Mask kRowMask{{false, true, false, false}, {true, true, true, true}, {false, false, false, true}};
// Broadcast over [2, 2, 3, 4] scores: batch 0 masks keys 1 and 3, batch 1 every key (each of its
// lanes over the last axis is fully masked).
const Mask kKeyMask{{{{false, true, false, true}}}, {{{true, true, true, true}}}};
// A uint8 fill mask (nonzero = fill), broadcast over rows. masked_fill takes no uint8 mask (its
// overload is deleted): the polarity is spelled out, as masking.h says to.
const Mask kByteMask(xt::not_equal(xt::xarray<std::uint8_t>{0, 3, 0, 1}, std::uint8_t{0}));

// softmax / log_softmax of x with the masked entries at -inf; log_softmax's -inf outputs are
// zeroed after it (as a masked loss would), where finite differences are undefined.
auto masked_softmax(const Mask& mask, Index axis) {
  return [mask, axis](const auto& x) { return softmax(masked_fill(x[0], mask, -kInf), axis); };
}
auto masked_log_softmax(const Mask& mask, Index axis) {
  return [mask, axis](const auto& x) { return masked_fill(log_softmax(masked_fill(x[0], mask, -kInf), axis), mask, 0.0); };
}

}  // namespace

// relu, masked_fill and dropout are linear where differentiable: composed with a product so the
// second derivative is not zero. Every backward here is an op of its own, so each case also
// checks the gradient of J^T v with respect to v (gradgradcheck's extra input).
std::vector<OpCase> activation_softmax_masking_cases() {
  return {
      {"relu", [](const auto& x) { return relu(x[0]); }, [] { return V{leaf({2, 3}, 345)}; }},
      OpCase("relu_times_input", [](const auto& x) { return mul(relu(x[0]), x[0]); }, [] { return V{leaf({3, 4}, 302)}; }).at_scale([] { return V{leaf({5, 97, 131}, 902)}; }),
      {"relu_of_broadcast_product", [](const auto& x) { return relu(mul(x[0], x[1])); },
       [] { return V{leaf({2, 1, 3}, 303), leaf({4, 1}, 304)}; }},
      OpCase("sigmoid", [](const auto& x) { return sigmoid(x[0]); }, [] { return V{leaf({2, 3}, 305, -4.0, 4.0)}; }).at_scale([] { return V{leaf({5, 97, 131}, 903, -4.0, 4.0)}; }),
      {"sigmoid_0d", [](const auto& x) { return sigmoid(x[0]); }, [] { return V{leaf({}, 306, -2.0, 2.0)}; }},
      {"sigmoid_of_broadcast_product", [](const auto& x) { return sigmoid(mul(x[0], x[1])); },
       [] { return V{leaf({3, 1}, 307, -2.0, 2.0), leaf({4}, 308, -2.0, 2.0)}; }},
      {"tanh", [](const auto& x) { return tanh(x[0]); }, [] { return V{leaf({5}, 309, -2.0, 2.0)}; }},
      OpCase("tanh_times_input", [](const auto& x) { return mul(tanh(x[0]), x[1]); },
       [] { return V{leaf({2, 3}, 310, -2.0, 2.0), leaf({2, 3}, 311)}; }).at_scale([] { return V{leaf({97, 677}, 904, -2.0, 2.0), leaf({97, 677}, 905)}; }),
      OpCase("gelu", [](const auto& x) { return gelu(x[0]); }, [] { return V{leaf({2, 4}, 312, -3.0, 3.0)}; }).at_scale([] { return V{leaf({5, 97, 131}, 906, -3.0, 3.0)}; }),
      {"gelu_of_product", [](const auto& x) { return gelu(mul(x[0], x[1])); },
       [] { return V{leaf({3, 2}, 313, -2.0, 2.0), leaf({2}, 314, -2.0, 2.0)}; }},
      OpCase("gelu_tanh", [](const auto& x) { return gelu(x[0], GeluApproximation::Tanh); },
       [] { return V{leaf({2, 4}, 315, -3.0, 3.0)}; }).at_scale([] { return V{leaf({5, 97, 131}, 907, -3.0, 3.0)}; }),
      {"gelu_tanh_of_product", [](const auto& x) { return gelu(mul(x[0], x[1]), GeluApproximation::Tanh); },
       [] { return V{leaf({3, 2}, 316, -2.0, 2.0), leaf({3, 2}, 317, -2.0, 2.0)}; }},

      // Softmax: the last axis (one contiguous row per lane) and the others (lanes across rows).
      OpCase("softmax_last_axis", [](const auto& x) { return softmax(x[0], -1); }, [] { return V{leaf({3, 4}, 318, -2.0, 2.0)}; }).at_scale([] { return V{leaf({64, 517}, 908, -2.0, 2.0)}; }),
      OpCase("softmax_axis_0", [](const auto& x) { return softmax(x[0], 0); }, [] { return V{leaf({3, 4}, 319, -2.0, 2.0)}; }).at_scale([] { return V{leaf({307, 71}, 909, -2.0, 2.0)}; }),
      OpCase("softmax_middle_axis", [](const auto& x) { return softmax(x[0], 1); },
       [] { return V{leaf({2, 3, 4}, 320, -2.0, 2.0)}; }).at_scale([] { return V{leaf({3, 301, 47}, 910, -2.0, 2.0)}; }),
      {"softmax_1d", [](const auto& x) { return softmax(x[0], 0); }, [] { return V{leaf({5}, 321, -2.0, 2.0)}; }},
      {"softmax_of_product", [](const auto& x) { return softmax(mul(x[0], x[1]), -1); },
       [] { return V{leaf({2, 5}, 322, -2.0, 2.0), leaf({5}, 323, -2.0, 2.0)}; }},
      {"softmax_masked_rows", masked_softmax(kRowMask, -1), [] { return V{leaf({3, 4}, 324, -2.0, 2.0)}; }},
      {"softmax_masked_columns", masked_softmax(kRowMask, 0), [] { return V{leaf({3, 4}, 325, -2.0, 2.0)}; }},
      {"softmax_broadcast_mask", masked_softmax(kKeyMask, -1), [] { return V{leaf({2, 2, 3, 4}, 326, -2.0, 2.0)}; }},
      OpCase("log_softmax_last_axis", [](const auto& x) { return log_softmax(x[0], -1); },
       [] { return V{leaf({3, 4}, 327, -2.0, 2.0)}; }).at_scale([] { return V{leaf({64, 517}, 911, -2.0, 2.0)}; }),
      {"log_softmax_axis_0", [](const auto& x) { return log_softmax(x[0], 0); }, [] { return V{leaf({3, 4}, 328, -2.0, 2.0)}; }},
      OpCase("log_softmax_middle_axis", [](const auto& x) { return log_softmax(x[0], 1); },
       [] { return V{leaf({2, 3, 4}, 329, -2.0, 2.0)}; }).at_scale([] { return V{leaf({3, 301, 47}, 912, -2.0, 2.0)}; }),
      {"log_softmax_of_product", [](const auto& x) { return log_softmax(mul(x[0], x[1]), 0); },
       [] { return V{leaf({4, 3}, 330, -2.0, 2.0), leaf({4, 1}, 331, -2.0, 2.0)}; }},
      {"log_softmax_masked_rows", masked_log_softmax(kRowMask, -1), [] { return V{leaf({3, 4}, 332, -2.0, 2.0)}; }},
      {"log_softmax_masked_columns", masked_log_softmax(kRowMask, 0), [] { return V{leaf({3, 4}, 333, -2.0, 2.0)}; }},
      {"log_softmax_broadcast_mask", masked_log_softmax(kKeyMask, -1),
       [] { return V{leaf({2, 2, 3, 4}, 334, -2.0, 2.0)}; }},

      // masked_fill: full-size and broadcast masks, one made from bytes, a finite fill value.
      {"masked_fill_times_input", [](const auto& x) { return mul(masked_fill(x[0], kRowMask, 0.5), x[0]); },
       [] { return V{leaf({3, 4}, 335)}; }},
      OpCase("masked_fill_broadcast_of_square",
       [](const auto& x) { return masked_fill(mul(x[0], x[0]), Mask{{true, false, true}}, -2.0); },
       [] { return V{leaf({2, 4, 3}, 336)}; }).at_scale([] { return V{leaf({200, 101, 3}, 913)}; }),
      {"masked_fill_bytes_as_fill_mask_times_other",
       [](const auto& x) { return mul(masked_fill(x[0], kByteMask, 1.0), x[1]); },
       [] { return V{leaf({2, 4}, 337), leaf({2, 4}, 338)}; }},
      // masked_fill with a 0-d tensor value: its gradient, and an input broadcast up to the mask.
      OpCase("masked_fill_tensor_value_times_input",
       [](const auto& x) { return mul(masked_fill(x[0], Mask{{true, false, true}}, x[1]), x[0]); },
       [] { return V{leaf({2, 4, 3}, 341), leaf({}, 342)}; }).at_scale([] { return V{leaf({200, 101, 3}, 915), leaf({}, 916)}; }),
      {"masked_fill_tensor_value_broadcast_input_of_product",
       [](const auto& x) { return masked_fill(x[0], Mask{{true, false, true}, {false, true, true}}, mul(x[1], x[1])); },
       [] { return V{leaf({3}, 343), leaf({}, 344)}; }},

      // dropout: the generator is reseeded on every call, so every call drops the same elements.
      OpCase("dropout_training_of_square",
       [](const auto& x) {
         Generator gen(339);  // drops 7 of the 20
         return dropout(mul(x[0], x[0]), 0.4, true, gen);
       },
       [] { return V{leaf({4, 5}, 340)}; }).at_scale([] { return V{leaf({211, 300}, 914)}; }),
      {"dropout_training_times_input",
       [](const auto& x) {
         Generator gen(348);  // drops 2 of the 9
         return mul(dropout(x[0], 0.25, true, gen), x[0]);
       },
       [] { return V{leaf({3, 3}, 342)}; }},
      {"dropout_eval_times_input",
       [](const auto& x) {
         Generator gen(343);
         return mul(dropout(x[0], 0.5, false, gen), x[0]);
       },
       [] { return V{leaf({2, 3}, 344)}; }},

      // softplus: the soft region, the linear one (beta x > threshold) and a negative beta.
      OpCase("softplus", [](const auto& x) { return softplus(x[0]); }, [] { return V{leaf({3, 4}, 1101, -3.0, 3.0)}; })
          .at_scale([] { return V{leaf({5, 97, 131}, 1102, -3.0, 3.0)}; }),
      {"softplus_beta_threshold_both_regions", [](const auto& x) { return softplus(x[0], 2.0, 1.0); },
       [] { return V{leaf({2, 5}, 1103, -2.0, 2.0)}; }},
      {"softplus_negative_beta_of_product", [](const auto& x) { return softplus(mul(x[0], x[1]), -1.5); },
       [] { return V{leaf({3, 2}, 1104), leaf({2}, 1105)}; }},
  };
}

}  // namespace tapegrad::testing
