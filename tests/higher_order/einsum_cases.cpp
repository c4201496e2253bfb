#include "higher_order/op_case.h"

#include <type_traits>

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

// einsum in torch's grammar: ellipses (broadcast from the right), implicit outputs and size-1
// indices broadcasting. The op rewrites them as letters and reshapes, so their second derivatives
// run through the recorded reshape and einsum backward. einsum is linear in each operand: a case
// with one differentiated operand squares it, so its second derivative is not zero. The functions
// are generic lambdas, so that the same cases can run in float.
std::vector<OpCase> einsum_cases() {
  return {
      {"einsum_ellipsis_batch_matmul", [](const auto& x) { return einsum("...ij,...jk->...ik", x[0], x[1]); },
       [] { return V{leaf({2, 2, 3}, 401), leaf({3, 2}, 402)}; }},
      {"einsum_ellipsis_broadcast_batch", [](const auto& x) { return einsum("...ij,...jk->...ik", x[0], x[1]); },
       [] { return V{leaf({2, 1, 2, 2}, 403), leaf({3, 2, 2}, 404)}; }},
      {"einsum_ellipsis_sum_leading", [](const auto& x) { return einsum("i...->...", mul(x[0], x[0])); },
       [] { return V{leaf({3, 2, 2}, 405)}; }},
      {"einsum_ellipsis_sum_trailing", [](const auto& x) { return einsum("...i->...", mul(x[0], x[0])); },
       [] { return V{leaf({2, 3}, 406)}; }},
      {"einsum_ellipsis_implicit_hadamard", [](const auto& x) { return einsum("...,...", x[0], x[1]); },
       [] { return V{leaf({3, 1}, 407), leaf({2}, 408)}; }},
      {"einsum_ellipsis_between_letters", [](const auto& x) { return einsum("i...j,j...k->i...k", x[0], x[1]); },
       [] { return V{leaf({2, 1, 2}, 409), leaf({2, 2, 3}, 410)}; }},
      {"einsum_ellipsis_diagonal", [](const auto& x) { return einsum("...ii->...i", mul(x[0], x[0])); },
       [] { return V{leaf({2, 2, 2}, 411)}; }},
      {"einsum_ellipsis_three_operands",
       [](const auto& x) {
         using Operands = std::decay_t<decltype(x)>;
         return einsum("...,...,...", Operands{x[0], x[1], x[2]});
       },
       [] { return V{leaf({2, 1}, 412), leaf({3}, 413), leaf({1, 1, 1}, 414)}; }},
      {"einsum_implicit_transpose", [](const auto& x) { return mul(einsum("ba", x[0]), x[1]); },
       [] { return V{leaf({2, 3}, 415), leaf({3, 2}, 416)}; }},
      {"einsum_implicit_trace", [](const auto& x) { return einsum("ii", mul(x[0], x[0])); },
       [] { return V{leaf({3, 3}, 417)}; }},
      {"einsum_size_one_index", [](const auto& x) { return einsum("ij,jk", x[0], x[1]); },
       [] { return V{leaf({2, 1}, 418), leaf({3, 2}, 419)}; }},
      {"einsum_size_one_hadamard", [](const auto& x) { return einsum("ij,ij->ij", x[0], x[1]); },
       [] { return V{leaf({2, 1}, 420), leaf({1, 3}, 421)}; }},
      {"einsum_size_one_diagonal", [](const auto& x) { return einsum("ii,i", mul(x[0], x[0]), x[1]); },
       [] { return V{leaf({1, 1}, 422), leaf({3}, 423)}; }},
  };
}

}  // namespace tapegrad::testing
