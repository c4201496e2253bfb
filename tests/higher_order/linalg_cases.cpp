#include "higher_order/op_case.h"

namespace tapegrad::testing {

using V = std::vector<Tensor<double>>;

// matmul, linear and einsum are linear in each operand: a case with one differentiated operand
// squares it first (or multiplies the result by an input), so its second derivative is not zero.
// Between them the gradgradchecks reach every transpose-flag combination of matmul's backward
// product (each operand's gradient differentiated with respect to g and to the other operand),
// broadcast batch axes summed back, and the einsum backward's broadcast and diagonal forms.
std::vector<OpCase> linalg_cases() {
  return {
      // ---- matmul ----
      {"matmul_2d", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 3}, 301), leaf({3, 4}, 302)}; }},
      {"matmul_squared_operands", [](const auto& x) { return matmul(mul(x[0], x[0]), mul(x[1], x[1])); },
       [] { return V{leaf({3, 2}, 303), leaf({2, 3}, 304)}; }},
      {"matmul_self_transposed", [](const auto& x) { return matmul(x[0], transpose(x[0], 0, 1)); },
       [] { return V{leaf({3, 4}, 305)}; }},
      {"matmul_constant_b", [](const auto& x) { return matmul(mul(x[0], x[0]), x[1]); },
       [] { return V{leaf({2, 3}, 306), constant({3, 2}, 307)}; }},
      {"matmul_constant_a", [](const auto& x) { return mul(matmul(x[0], x[1]), x[1]); },
       [] { return V{constant({3, 3}, 308), leaf({3, 2}, 309)}; }},
      {"matmul_dot", [](const auto& x) { return matmul(x[0], mul(x[1], x[0])); },
       [] { return V{leaf({4}, 310), leaf({4}, 311)}; }},
      {"matmul_matrix_vector", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 3}, 312), leaf({3}, 313)}; }},
      {"matmul_vector_matrix", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({3}, 314), leaf({3, 2}, 315)}; }},
      {"matmul_batched_vector", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 2, 3}, 316), leaf({3}, 317)}; }},
      {"matmul_vector_batched", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({3}, 318), leaf({2, 3, 2}, 319)}; }},
      // b shared by the batch: its gradient is the batch folded into one product.
      OpCase("matmul_batch_times_matrix", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 2, 3}, 320), leaf({3, 2}, 321)}; }).at_scale([] { return V{leaf({4, 67, 131}, 933), leaf({131, 71}, 934)}; }),
      {"matmul_matrix_times_batch", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 3}, 322), leaf({3, 3, 2}, 323)}; }},
      OpCase("matmul_batched_same", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 2, 3}, 324), leaf({2, 3, 2}, 325)}; }).at_scale([] { return V{leaf({4, 67, 131}, 931), leaf({4, 131, 71}, 932)}; }),
      {"matmul_batch_broadcast_both", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({2, 1, 2, 3}, 326), leaf({3, 3, 2}, 327)}; }},
      {"matmul_batch_size_one_axes", [](const auto& x) { return matmul(x[0], x[1]); },
       [] { return V{leaf({1, 3, 2, 2}, 328), leaf({2, 1, 2, 3}, 329)}; }},
      {"matmul_chain", [](const auto& x) { return matmul(matmul(x[0], x[1]), x[2]); },
       [] { return V{leaf({2, 3}, 330), leaf({3, 2}, 331), leaf({2, 2}, 332)}; }},
      // ---- linear ----
      {"linear_vector_bias", [](const auto& x) { return linear(x[0], x[1], x[2]); },
       [] { return V{leaf({4}, 340), leaf({3, 4}, 341), leaf({3}, 342)}; }},
      {"linear_2d_bias_squared", [](const auto& x) { return mul(linear(x[0], x[1], x[2]), linear(x[0], x[1], x[2])); },
       [] { return V{leaf({2, 4}, 343), leaf({3, 4}, 344), leaf({3}, 345)}; }},
      OpCase("linear_3d_bias", [](const auto& x) { return linear(x[0], x[1], x[2]); },
       [] { return V{leaf({2, 3, 4}, 346), leaf({5, 4}, 347), leaf({5}, 348)}; }).at_scale([] { return V{leaf({4, 67, 131}, 937), leaf({71, 131}, 938), leaf({71}, 939)}; }),
      {"linear_3d_no_bias", [](const auto& x) { return linear(x[0], x[1]); },
       [] { return V{leaf({2, 3, 2}, 349), leaf({3, 2}, 350)}; }},
      {"linear_no_bias_squared_x", [](const auto& x) { return linear(mul(x[0], x[0]), x[1]); },
       [] { return V{leaf({3, 2}, 351), constant({2, 2}, 352)}; }},
      {"linear_weight_only", [](const auto& x) { return mul(linear(x[0], x[1]), linear(x[0], x[1])); },
       [] { return V{constant({3, 4}, 353), leaf({2, 4}, 354)}; }},
      {"linear_bias_only", [](const auto& x) { return mul(linear(x[0], x[1], x[2]), x[2]); },
       [] { return V{constant({2, 3, 2}, 355), constant({3, 2}, 356), leaf({3}, 357)}; }},
      {"linear_size_one_features", [](const auto& x) { return linear(x[0], x[1], x[2]); },
       [] { return V{leaf({5, 1}, 358), leaf({2, 1}, 359), leaf({2}, 360)}; }},
      // ---- einsum ----
      {"einsum_matrix_product", [](const auto& x) { return einsum("ij,jk->ik", x[0], x[1]); },
       [] { return V{leaf({2, 3}, 370), leaf({3, 4}, 371)}; }},
      {"einsum_batched", [](const auto& x) { return einsum("bij,bjk->bik", x[0], x[1]); },
       [] { return V{leaf({2, 2, 3}, 372), leaf({2, 3, 2}, 373)}; }},
      OpCase("einsum_attention_scores", [](const auto& x) { return einsum("ibhd,jbhd->ijbh", x[0], x[1]); },
       [] { return V{leaf({3, 2, 2, 2}, 374), leaf({2, 2, 2, 2}, 375)}; }).at_scale([] { return V{leaf({31, 4, 3, 16}, 935), leaf({29, 4, 3, 16}, 936)}; }),
      {"einsum_outer", [](const auto& x) { return einsum("i,j->ij", x[0], x[1]); },
       [] { return V{leaf({3}, 376), leaf({2}, 377)}; }},
      {"einsum_implicit_output", [](const auto& x) { return einsum("ij,jk", x[0], x[1]); },
       [] { return V{leaf({2, 3}, 378), leaf({3, 2}, 379)}; }},
      {"einsum_self_dot", [](const auto& x) { return einsum("i,i->", x[0], x[0]); }, [] { return V{leaf({4}, 380)}; }},
      // a letter in one operand only, summed away: its gradient broadcasts along it
      {"einsum_letter_in_one_operand", [](const auto& x) { return einsum("ijk,k->j", x[0], x[1]); },
       [] { return V{leaf({2, 3, 2}, 381), leaf({2}, 382)}; }},
      {"einsum_constant_operand", [](const auto& x) { return einsum("ij,jk->ik", mul(x[0], x[0]), x[1]); },
       [] { return V{leaf({2, 3}, 383), constant({3, 2}, 384)}; }},
      // one operand: transpose, sums, a diagonal (its gradient written on the diagonal)
      {"einsum_transpose", [](const auto& x) { return mul(einsum("ij->ji", x[0]), x[1]); },
       [] { return V{leaf({2, 3}, 385), leaf({3, 2}, 386)}; }},
      {"einsum_sum_all", [](const auto& x) { return einsum("ij->", mul(x[0], x[0])); },
       [] { return V{leaf({2, 3}, 387)}; }},
      {"einsum_sum_axis", [](const auto& x) { return mul(einsum("ij->i", x[0]), einsum("ij->i", x[0])); },
       [] { return V{leaf({3, 2}, 388)}; }},
      {"einsum_diagonal", [](const auto& x) { return mul(einsum("ii->i", x[0]), einsum("ij->i", x[0])); },
       [] { return V{leaf({3, 3}, 389)}; }},
      {"einsum_trace", [](const auto& x) { return einsum("ii->", mul(x[0], x[0])); }, [] { return V{leaf({3, 3}, 390)}; }},
      {"einsum_diagonal_times_vector", [](const auto& x) { return einsum("iij,j->i", x[0], x[1]); },
       [] { return V{leaf({2, 2, 3}, 391), leaf({3}, 392)}; }},
      // three and four operands, contracted pairwise
      {"einsum_three_operands", [](const auto& x) { return einsum("ij,jk,kl->il", std::vector{x[0], x[1], x[2]}); },
       [] { return V{leaf({2, 3}, 393), leaf({3, 2}, 394), leaf({2, 2}, 395)}; }},
      {"einsum_four_operands", [](const auto& x) { return einsum("i,ij,j,jk->k", std::vector{x[0], x[1], x[2], x[3]}); },
       [] { return V{leaf({2}, 396), leaf({2, 3}, 397), leaf({3}, 398), leaf({3, 2}, 399)}; }},
      {"einsum_three_operands_repeated", [](const auto& x) { return einsum("i,i,i->i", std::vector{x[0], x[0], x[1]}); },
       [] { return V{leaf({4}, 400), leaf({4}, 401)}; }},
  };
}

}  // namespace tapegrad::testing
