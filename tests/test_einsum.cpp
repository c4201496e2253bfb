#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include <xtensor/xbroadcast.hpp>
#include <xtensor/xview.hpp>

#include "autograd/kernels/einsum/einsum_plan.h"
#include "autograd/kernels/parallel.h"
#include "autograd/base/matmul_precision.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "tests/ops/op_spec.h"
#include "tests/pytorch_samples/rows.h"
#include "tests/bad_inputs/inputs.h"
#include "autograd/ops/all.h"
#include "tests/support/reference.h"
#include "tests/support/thread_count.h"

namespace tapegrad {
namespace {

// ---- naive reference: every assignment of every letter, written independently of the kernel ----

struct Subscripts {
  std::vector<std::string> operands;
  std::string output;
};

// "ij,jk->ik", or implicit "ij,jk": the output is the letters seen exactly once, sorted.
Subscripts split_subscripts(const std::string& s) {
  Subscripts out;
  const std::size_t arrow = s.find("->");
  const std::string lhs = s.substr(0, arrow);
  std::size_t start = 0;
  for (std::size_t comma; (comma = lhs.find(',', start)) != std::string::npos; start = comma + 1)
    out.operands.push_back(lhs.substr(start, comma - start));
  out.operands.push_back(lhs.substr(start));
  if (arrow != std::string::npos) {
    out.output = s.substr(arrow + 2);
  } else {
    for (char c : lhs)
      if (c != ',' && std::count(lhs.begin(), lhs.end(), c) == 1) out.output.push_back(c);
    std::sort(out.output.begin(), out.output.end());
  }
  return out;
}

// out[output letters] += prod_k x_k[its letters] over every assignment of all letters. An output
// letter found in no operand takes its size from `extra`.
xt::xarray<double> naive_einsum(const std::string& subscripts, const std::vector<xt::xarray<double>>& xs,
                                const std::map<char, std::size_t>& extra = {}) {
  const Subscripts sub = split_subscripts(subscripts);
  std::map<char, std::size_t> size;
  for (std::size_t k = 0; k < xs.size(); ++k)
    for (std::size_t d = 0; d < sub.operands[k].size(); ++d) size[sub.operands[k][d]] = xs[k].shape()[d];
  for (char c : sub.output)
    if (!size.count(c)) size[c] = extra.at(c);
  std::string letters;
  for (const auto& [c, n] : size) letters.push_back(c);
  Shape out_shape;
  for (char c : sub.output) out_shape.push_back(size.at(c));
  xt::xarray<double> out = xt::zeros<double>(out_shape);
  std::map<char, std::size_t> value;
  for (char c : letters) value[c] = 0;
  const auto flat = [&](const std::string& idx, const auto& shape) {
    std::size_t f = 0;
    for (std::size_t d = 0; d < idx.size(); ++d) f = f * shape[d] + value[idx[d]];
    return f;
  };
  std::size_t total = 1;
  for (char c : letters) total *= size[c];
  for (std::size_t step = 0; step < total; ++step) {
    std::size_t rest = step;
    for (char c : letters) {
      value[c] = rest % size[c];
      rest /= size[c];
    }
    double p = 1.0;
    for (std::size_t k = 0; k < xs.size(); ++k) p *= xs[k].data()[flat(sub.operands[k], xs[k].shape())];
    out.data()[flat(sub.output, out_shape)] += p;
  }
  return out;
}

std::vector<xt::xarray<double>> values_of(const Inputs& xs) {
  std::vector<xt::xarray<double>> v;
  for (const auto& x : xs) v.push_back(x.value());
  return v;
}

Inputs random_inputs(const std::vector<Shape>& shapes, std::uint64_t seed) {
  Inputs xs;
  for (const Shape& s : shapes) xs.push_back(random_tensor(s, seed++));
  return xs;
}

struct EinsumCase {
  std::string subscripts;
  std::vector<Shape> shapes;
};

// The reference designs' strings (attention scores and values, per-head projections) and the listed ones.
const std::vector<EinsumCase> kReferenceCases = {
    {"ibhd,jbhd->ijbh", {{3, 2, 2, 4}, {5, 2, 2, 4}}},
    {"ijbh,jbhd->ibhd", {{3, 5, 2, 2}, {5, 2, 2, 4}}},
    {"hijk,hkl->hijl", {{2, 3, 2, 4}, {2, 4, 3}}},
    {"ijk,hkl->hijl", {{3, 2, 4}, {2, 4, 3}}},
    {"ij->", {{3, 4}}},
    {"i,j->ij", {{3}, {4}}},
    {"ii->i", {{3, 3}}},
    {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
    {"ij->ji", {{3, 4}}},
    {"ii->", {{4, 4}}},
    {"iij->j", {{3, 3, 2}}},
    {"i,i->", {{5}, {5}}},
    {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
};

// Other shapes of the same machinery: implicit outputs, size-1 axes, a scalar operand, Hadamard
// products, transposed contractions, diagonals next to a GEMM, four operands.
const std::vector<EinsumCase> kMoreCases = {
    {"ij,jk", {{2, 3}, {3, 4}}},
    {"ij,jk,kl", {{2, 3}, {3, 1}, {1, 2}}},
    {"ba", {{2, 3}}},
    {"ibhd,jbhd->ijbh", {{1, 2, 1, 3}, {4, 2, 1, 3}}},
    {",ij->ij", {{}, {2, 3}}},
    {"ij,ij->ij", {{2, 3}, {2, 3}}},
    {"ijk,ikj->i", {{2, 3, 4}, {2, 4, 3}}},
    {"ij,kl->ljki", {{2, 3}, {1, 2}}},
    {"ii,ij->j", {{3, 3}, {3, 2}}},
    {"bhqd,bhkd->bhqk", {{2, 2, 3, 2}, {2, 2, 4, 2}}},
    {"ij,jk->ki", {{2, 3}, {3, 4}}},
    {"aBc,cBd->Bad", {{2, 3, 2}, {2, 3, 2}}},
    {"ij,jk,kl,lm->mi", {{2, 2}, {2, 3}, {3, 2}, {2, 2}}},
    {"i->", {{1}}},
    {"hkl,ijk->hlij", {{2, 4, 3}, {3, 2, 4}}},
    {"gik,hkj->ghij", {{2, 3, 4}, {2, 4, 3}}},
    {"", {{}}},
};

// A random valid einsum: 1 or 2 operands of rank 1-4 (sometimes 0) over a small alphabet (so
// letters repeat within and across operands), sizes 2-3 (sometimes 1), an output that keeps a
// random subset of the letters in a random order (the others are summed away), sometimes in
// implicit form.
EinsumCase random_case(Generator& gen) {
  const std::string alphabet = "abcdE";
  std::map<char, std::size_t> size;
  for (char c : alphabet) size[c] = gen.randint(0, 4) == 0 ? 1 : static_cast<std::size_t>(gen.randint(2, 4));
  EinsumCase c;
  const auto num_operands = gen.randint(0, 3) == 0 ? 1 : 2;
  std::string all;
  std::vector<std::string> operands;
  for (std::int64_t k = 0; k < num_operands; ++k) {
    std::string letters;
    Shape shape;
    for (auto rank = gen.randint(0, 10) == 0 ? 0 : gen.randint(1, 5); rank > 0; --rank) {
      letters.push_back(alphabet[static_cast<std::size_t>(gen.randint(0, 5))]);
      shape.push_back(size[letters.back()]);
    }
    operands.push_back(letters);
    c.shapes.push_back(shape);
    all += letters;
  }
  for (std::size_t k = 0; k < operands.size(); ++k) c.subscripts += (k ? "," : "") + operands[k];
  if (gen.randint(0, 5) == 0) return c;  // implicit output
  std::string output;
  for (char l : alphabet)
    if (all.find(l) != std::string::npos && gen.randint(0, 2) == 1) output.push_back(l);
  for (std::size_t i = output.size(); i > 1; --i)
    std::swap(output[i - 1], output[static_cast<std::size_t>(gen.randint(0, static_cast<std::int64_t>(i)))]);
  c.subscripts += "->" + output;
  return c;
}

std::vector<EinsumCase> random_cases() {
  Generator gen(2024);
  std::vector<EinsumCase> cases;
  for (int i = 0; i < 40; ++i) cases.push_back(random_case(gen));
  return cases;
}

std::string describe(const EinsumCase& c) {
  std::string s = "\"";
  s += c.subscripts;
  s += '"';
  for (const Shape& shape : c.shapes) {
    s += ' ';
    s += format_shape(shape);
  }
  return s;
}

void expect_matches_naive(const std::vector<EinsumCase>& cases) {
  for (const EinsumCase& c : cases) {
    SCOPED_TRACE(describe(c));
    const Inputs xs = random_inputs(c.shapes, 7);
    const auto got = einsum(c.subscripts, xs).value();
    EXPECT_LT(max_abs_diff(got, naive_einsum(c.subscripts, values_of(xs))), 1e-12);
  }
}

void expect_gradcheck(const std::vector<EinsumCase>& cases) {
  for (const EinsumCase& c : cases) {
    SCOPED_TRACE(describe(c));
    const std::string s = c.subscripts;
    EXPECT_TRUE(passes_gradcheck([s](const Inputs& x) { return einsum(s, x); }, random_inputs(c.shapes, 11)));
  }
}

TEST(Einsum, HandComputedMatrixProduct) {
  Tensor<double> a(xt::xarray<double>{{1, 2}, {3, 4}});
  Tensor<double> b(xt::xarray<double>{{5, 6}, {7, 8}});
  EXPECT_EQ(einsum("ij,jk->ik", a, b).value(), (xt::xarray<double>{{19, 22}, {43, 50}}));
  EXPECT_EQ(einsum("ii->", a).value(), xt::xarray<double>(5.0));
  EXPECT_EQ(einsum("ij->j", a).value(), (xt::xarray<double>{4, 6}));
}

TEST(Einsum, NaiveReferenceSelfCheck) {
  // The reference itself, on a case small enough to do by hand: trace and outer product.
  EXPECT_EQ(naive_einsum("ii->", {xt::xarray<double>{{1, 2}, {3, 4}}}), xt::xarray<double>(5.0));
  EXPECT_EQ(naive_einsum("i,j", {xt::xarray<double>{1, 2}, xt::xarray<double>{3, 4, 5}}),
            (xt::xarray<double>{{3, 4, 5}, {6, 8, 10}}));
}

TEST(Einsum, SeedStringsMatchNaiveReference) { expect_matches_naive(kReferenceCases); }
TEST(Einsum, MoreStringsMatchNaiveReference) { expect_matches_naive(kMoreCases); }
// Permutations with two axes of 16 or more, one contiguous in the source and one in the result:
// the strided pass copies these in tiles (a transpose; the labml scores' GEMM result [bh, i, j]
// written as [i, j, bh]; a three-axis rotation; a batch the GEMM writes in place).
TEST(Einsum, TiledPermutationsMatchNaiveReference) {
  expect_matches_naive({{"ij->ji", {{20, 33}}},
                        {"abc->cab", {{17, 3, 19}}},
                        {"ibhd,jbhd->ijbh", {{17, 4, 5, 3}, {18, 4, 5, 3}}},
                        {"ijbh,jbhd->ibhd", {{17, 18, 4, 5}, {18, 4, 5, 3}}}});
}

TEST(Einsum, RandomStringsMatchNaiveReference) { expect_matches_naive(random_cases()); }

// Products whose gathers and final pass copy more than a core's cache holds run in chunks of the
// batch's first letter: an uneven split (13 indices into 2 chunks), a gathered left operand, one
// product per index (chunks of at least two products, so 3 indices stay whole), and a pass whose
// chunks must keep 16-element rows (4 chunks of 8 indices would write rows of 8, so 2 chunks of 4).
TEST(Einsum, ChunkedProductsMatchNaiveReference) {
  const std::vector<std::pair<EinsumCase, std::size_t>> cases = {
      {{"ibhd,jbhd->ijbh", {{40, 13, 16, 2}, {40, 13, 16, 2}}}, 2},
      {{"ijbh,jbhd->ibhd", {{40, 40, 13, 16}, {40, 13, 16, 2}}}, 2},
      {{"bij,bjk->ikb", {{9, 180, 2}, {9, 2, 180}}}, 2},
      {{"bij,bjk->ikb", {{3, 360, 1}, {3, 1, 360}}}, 1},
      {{"ibhd,jbhd->ijbh", {{128, 8, 4, 1}, {128, 8, 4, 1}}}, 2}};
  for (const auto& [c, chunks] : cases) {
    SCOPED_TRACE(describe(c));
    const Subscripts sub = split_subscripts(c.subscripts);
    EXPECT_EQ(kernels::einsum_chunks({sub.operands, sub.output}, c.shapes, sizeof(double)), chunks);
    expect_matches_naive({c});
  }
}

TEST(Einsum, GradcheckSeedStrings) { expect_gradcheck(kReferenceCases); }
TEST(Einsum, GradcheckMoreStrings) { expect_gradcheck(kMoreCases); }
TEST(Einsum, GradcheckRandomStrings) { expect_gradcheck(random_cases()); }

// ---- torch's grammar: ellipsis, implicit output, size-1 broadcasting ----

// A torch.einsum form and the same einsum spelled out: every ellipsis written as letters (aligned
// from the right) and every operand broadcast (xt::broadcast) to the shape the spelled-out form
// needs. The reference runs the spelled-out form through the naive loop, so neither the resolver
// nor the planner checks itself. Every row was checked against torch.einsum 1.13 (same values,
// same result shape).
struct TorchForm {
  std::string subscripts;
  std::vector<Shape> shapes;
  std::string spelled_out;
  std::vector<Shape> broadcast_to;
};

const std::vector<TorchForm> kTorchForms = {
    // batch matmul with ellipsis: without batch dims in b, broadcasting [2,1] with [5], unbroadcast
    {"...ij,...jk", {{2, 3, 4}, {4, 5}}, "aij,jk->aik", {{2, 3, 4}, {4, 5}}},
    {"...ij,...jk->...ik", {{2, 1, 3, 4}, {5, 4, 2}}, "abij,abjk->abik", {{2, 5, 3, 4}, {2, 5, 4, 2}}},
    {"...ij,...jk->...ik", {{2, 3, 2, 4}, {2, 3, 4, 2}}, "abij,abjk->abik", {{2, 3, 2, 4}, {2, 3, 4, 2}}},
    {"...ij->...ji", {{2, 3, 4}}, "aij->aji", {{2, 3, 4}}},
    {"i...->...", {{3, 4, 5}}, "iab->ab", {{3, 4, 5}}},
    {"...i->...", {{3, 4, 5}}, "abi->ab", {{3, 4, 5}}},
    {"...,...", {{3, 1}, {4}}, "ab,ab->ab", {{3, 4}, {3, 4}}},
    {"...i,...i", {{3, 1, 2}, {4, 2}}, "abi,abi->ab", {{3, 4, 2}, {3, 4, 2}}},
    {"a...b,...c->...", {{2, 3, 4, 5}, {4, 6}}, "axyb,yc->xy", {{2, 3, 4, 5}, {4, 6}}},
    {"ij...,jk...->ik...", {{2, 3, 5}, {3, 4, 1}}, "ija,jka->ika", {{2, 3, 5}, {3, 4, 5}}},
    {"i...j,j...k->i...k", {{3, 1, 2, 2}, {2, 2, 3, 1, 4}}, "ibcj,jabck->iabck", {{3, 3, 2, 2}, {2, 2, 3, 2, 4}}},
    {"...ij->ij...", {{2, 3, 4}}, "aij->ija", {{2, 3, 4}}},
    {"...ii->...i", {{2, 3, 3}}, "aii->ai", {{2, 3, 3}}},
    {"i...i", {{3, 2, 3}}, "iai->a", {{3, 2, 3}}},
    {"...->", {{2, 3}}, "ab->", {{2, 3}}},
    {"ij->...", {{2, 3}}, "ij->", {{2, 3}}},  // torch: an output "..." may cover no dim
    {"...", {{2, 3}}, "ab->ab", {{2, 3}}},
    {"ab,...", {{2, 3}, {}}, "ab,->ab", {{2, 3}, {}}},
    {"i,...", {{2}, {3, 4}}, "i,ab->abi", {{2}, {3, 4}}},  // implicit: ellipsis dims first
    {"...,...,...", {{2, 1}, {3}, {1, 1, 1}}, "abc,abc,abc->abc", {{1, 2, 3}, {1, 2, 3}, {1, 2, 3}}},
    {"... ij , ... jk -> ... ik", {{2, 2, 3}, {3, 4}}, "aij,jk->aik", {{2, 2, 3}, {3, 4}}},
    // size-1 broadcasting within a letter
    {"ij,jk", {{3, 1}, {4, 5}}, "ij,jk->ik", {{3, 4}, {4, 5}}},
    {"ij,ij->ij", {{3, 1}, {1, 4}}, "ij,ij->ij", {{3, 4}, {3, 4}}},
    {"ii,i", {{1, 1}, {3}}, "ii,i->", {{3, 3}, {3}}},
    {"i,i,i->i", {{1}, {3}, {1}}, "i,i,i->i", {{3}, {3}, {3}}},
    {"bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}, "bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},
};

TEST(EinsumTorchForms, MatchSpelledOutReference) {
  for (const TorchForm& f : kTorchForms) {
    SCOPED_TRACE(f.subscripts);
    const Inputs xs = random_inputs(f.shapes, 7);
    std::vector<xt::xarray<double>> broadcast;
    for (std::size_t k = 0; k < xs.size(); ++k) broadcast.emplace_back(xt::broadcast(xs[k].value(), f.broadcast_to[k]));
    const xt::xarray<double> got = einsum(f.subscripts, xs).value();
    const xt::xarray<double> want = naive_einsum(f.spelled_out, broadcast);
    ASSERT_EQ(Shape(got.shape().begin(), got.shape().end()), Shape(want.shape().begin(), want.shape().end()));
    EXPECT_LT(max_abs_diff(got, want), 1e-12);
  }
}

TEST(EinsumTorchForms, Gradcheck) {
  std::vector<EinsumCase> cases;
  for (const TorchForm& f : kTorchForms) cases.push_back({f.subscripts, f.shapes});
  expect_gradcheck(cases);
}

TEST(EinsumTorchForms, ImplicitOutputSortsUpperCaseFirst) {
  // torch: without "->" the letters seen once, in ASCII order: "ba" transposes, "aB" too (B < a).
  const Tensor<double> x(xt::xarray<double>{{1, 2, 3}, {4, 5, 6}});
  const xt::xarray<double> transposed = {{1, 4}, {2, 5}, {3, 6}};
  EXPECT_EQ(einsum("ba", x).value(), transposed);
  EXPECT_EQ(einsum("aB", x).value(), transposed);
  EXPECT_EQ(einsum("Ba", x).value(), x.value());
}

TEST(EinsumTorchForms, ImplicitTraceAndOuterProduct) {
  EXPECT_EQ(einsum("ii", Tensor<double>(xt::xarray<double>{{1, 2}, {3, 4}})).value(), xt::xarray<double>(5.0));
  const Tensor<double> u(xt::xarray<double>{1, 2}), v(xt::xarray<double>{3, 4, 5});
  EXPECT_EQ(einsum("i,j", u, v).value(), (xt::xarray<double>{{3, 4, 5}, {6, 8, 10}}));
}

// `values` laid out as `shape` (xtensor's initializer lists are ambiguous with one element per row).
xt::xarray<double> values_shaped(xt::xarray<double> values, const Shape& shape) {
  values.reshape(shape);
  return values;
}

TEST(EinsumTorchForms, SizeOneIndexBroadcastsByHand) {
  // out[i,k] = sum_j a[i,0] b[j,k] = a[i] (9, 12).
  const Tensor<double> a(values_shaped({2, 3}, {2, 1}), true);
  const Tensor<double> b(xt::xarray<double>{{1, 2}, {3, 4}, {5, 6}}, true);
  GradientTape tape;
  const auto out = einsum("ij,jk", a, b);
  EXPECT_EQ(out.value(), (xt::xarray<double>{{18, 24}, {27, 36}}));
  // d sum(out) / d a[i,0] = sum_{j,k} b[j,k] = 21; d / d b[j,k] = sum_i a[i,0] = 5.
  tape.backward(sum(out));
  EXPECT_EQ(a.grad(), values_shaped({21, 21}, {2, 1}));
  EXPECT_EQ(b.grad(), (xt::xarray<double>{{5, 5}, {5, 5}, {5, 5}}));
}

TEST(EinsumTorchForms, BatchMatmulWithEllipsisByHand) {
  // Two batches of 1x2 times one shared 2x1: [[1,2]].[[1],[1]] = 3, [[3,4]].[[1],[1]] = 7.
  const Tensor<double> a(xt::xarray<double>{{{1, 2}}, {{3, 4}}});
  const Tensor<double> b(values_shaped({1, 1}, {2, 1}));
  EXPECT_EQ(einsum("...ij,...jk->...ik", a, b).value(), values_shaped({3, 7}, {2, 1, 1}));
}

TEST(Einsum, SameTensorTwiceAccumulates) {
  // d/dx sum_i x_i x_i = 2x.
  Tensor<double> x(xt::xarray<double>{1.0, -2.0, 3.0}, true);
  GradientTape tape;
  tape.backward(einsum("i,i->", x, x));
  EXPECT_EQ(x.grad(), (xt::xarray<double>{2.0, -4.0, 6.0}));
}

TEST(Einsum, FloatMatchesNaiveReference) {
  Generator gen(5);
  const auto a = Tensor<float>::uniform({3, 4, 2, 5}, gen, -1.0f, 1.0f);
  const auto b = Tensor<float>::uniform({6, 4, 2, 5}, gen, -1.0f, 1.0f);
  const xt::xarray<double> got = xt::cast<double>(einsum("ibhd,jbhd->ijbh", a, b).value());
  const xt::xarray<double> want =
      naive_einsum("ibhd,jbhd->ijbh", {xt::cast<double>(a.value()), xt::cast<double>(b.value())});
  EXPECT_LT(max_abs_diff(got, want), 1e-5);
}

TEST(Einsum, ZeroSizedIndex) {
  // A contracted index of size 0 gives zeros; a free one gives an empty result.
  const auto a = Tensor<double>::ones({2, 0}), b = Tensor<double>::ones({0, 3});
  EXPECT_EQ(einsum("ij,jk->ik", a, b).value(), xt::xarray<double>(xt::zeros<double>({2, 3})));
  EXPECT_EQ(einsum("ji,jk->ik", Tensor<double>::ones({2, 0}), Tensor<double>::ones({2, 3})).shape(), (Shape{0, 3}));
}

// ---- the kernel's extensions that make the backward an einsum ----

TEST(EinsumKernel, OutputOnlyIndexBroadcastsAndRepeatedOutputWritesDiagonal) {
  const xt::xarray<double> x = random_tensor({2, 3}, 3).value();
  const xt::xarray<double> v = random_tensor({3}, 4).value();
  const std::vector<std::pair<kernels::EinsumEquation, std::vector<const xt::xarray<double>*>>> cases = {
      {{{"ij"}, "ijk"}, {&x}},          // broadcast along k
      {{{"j"}, "jj"}, {&v}},            // diagonal matrix
      {{{"ij"}, "kjji"}, {&x}},         // both, and a permutation
      {{{"ij", "j"}, "iikj"}, {&x, &v}},  // after a GEMM
      {{{"ij", "ij"}, "jkj"}, {&x, &x}},
  };
  const std::map<char, std::size_t> sizes = {{'i', 2}, {'k', 4}};
  for (const auto& [eq, operands] : cases) {
    SCOPED_TRACE(eq.str());
    std::vector<xt::xarray<double>> values;
    for (const auto* o : operands) values.push_back(*o);
    EXPECT_LT(max_abs_diff(kernels::einsum(eq, operands, sizes), naive_einsum(eq.str(), values, sizes)), 1e-12);
  }
}

TEST(EinsumKernel, PlansOncePerEquationAndShapes) {
  const auto a = random_tensor({2, 3}, 1), b = random_tensor({3, 4}, 2), c = random_tensor({3, 5}, 3);
  einsum("ij,jk->ik", a, b);
  const std::size_t after_first = kernels::einsum_cached_plans();
  for (int i = 0; i < 3; ++i) einsum("ij,jk->ik", a, b);
  EXPECT_EQ(kernels::einsum_cached_plans(), after_first);
  einsum("ij,jk->ik", a, c);  // new shapes: a new plan
  EXPECT_EQ(kernels::einsum_cached_plans(), after_first + 1);
}

TEST(EinsumKernel, SameBitsAtAnyThreadCount) {
  // Large enough for the parallel strided passes, the batched GEMM and a parallel reduction.
  const testing_support::ThreadCountTest thread_count_test;
  Generator gen(9);
  const auto q = Tensor<float>::uniform({48, 4, 4, 32}, gen, -1.0f, 1.0f);
  const auto k = Tensor<float>::uniform({40, 4, 4, 32}, gen, -1.0f, 1.0f);
  std::vector<xt::xarray<float>> results;
  for (std::size_t threads : {1, 2}) {
    set_num_threads(threads);
    results.push_back(einsum("ibhd,jbhd->ijbh", q, k).value());
    results.push_back(einsum("ibhd->hd", q).value());
  }
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(results[i].shape(), results[i + 2].shape());
    EXPECT_EQ(std::memcmp(results[i].data(), results[i + 2].data(), results[i].size() * sizeof(float)), 0);
  }
}

// A chunked product has the bits of the same products made one batch index at a time (each small
// enough to run whole): chunks change where the products go, not how they are computed. In bf16
// mode too, at 2 threads: chunks that run on a TBB worker keep the calling thread's mode.
TEST(EinsumKernel, ChunkedProductHasTheBitsOfItsSlices) {
  const testing_support::ThreadCountTest thread_count_test;
  Generator gen(12);
  const xt::xarray<float> q = Tensor<float>::uniform({64, 13, 16, 8}, gen, -1.0f, 1.0f).value();
  const xt::xarray<float> k = Tensor<float>::uniform({64, 13, 16, 8}, gen, -1.0f, 1.0f).value();
  const kernels::EinsumEquation scores{{"ibhd", "jbhd"}, "ijbh"};
  ASSERT_GT(kernels::einsum_chunks(scores, {{64, 13, 16, 8}, {64, 13, 16, 8}}, sizeof(float)), 1u);
  ASSERT_EQ(kernels::einsum_chunks(scores, {{64, 1, 16, 8}, {64, 1, 16, 8}}, sizeof(float)), 1u);
  set_num_threads(2);
  for (const MatmulPrecision precision : {MatmulPrecision::kFloat32, MatmulPrecision::kBfloat16}) {
    SCOPED_TRACE(precision == MatmulPrecision::kFloat32 ? "float32" : "bf16");
    const MatmulPrecisionGuard mode(precision);
    const xt::xarray<float> whole = kernels::einsum<float>(scores, {&q, &k});
    for (std::size_t b = 0; b < 13; ++b) {
      const xt::xarray<float> q_b = xt::view(q, xt::all(), xt::range(b, b + 1));
      const xt::xarray<float> k_b = xt::view(k, xt::all(), xt::range(b, b + 1));
      const xt::xarray<float> slice = kernels::einsum<float>(scores, {&q_b, &k_b});
      const xt::xarray<float> part = xt::view(whole, xt::all(), xt::all(), xt::range(b, b + 1));
      ASSERT_EQ(part.shape(), slice.shape());
      EXPECT_EQ(std::memcmp(part.data(), slice.data(), part.size() * sizeof(float)), 0) << "batch index " << b;
    }
  }
}

// ---- bad input ----

TEST(Einsum, RankMismatchQuotesSubscriptsAndOperand) {
  const auto q = random_tensor({4, 3, 2, 2}, 1), k = random_tensor({5, 3, 2}, 2);
  EXPECT_TRUE(throws_with<ShapeError>([&] { einsum("ibhd,jbhd->ijbh", q, k); },
                                      {"einsum(\"ibhd,jbhd->ijbh\"): operand 1 has 3 dims [5,3,2] but its subscripts "
                                       "\"jbhd\" need 4"}));
}

TEST(Einsum, IndexWithTwoSizesNamesBothOperands) {
  const auto a = random_tensor({2, 3}, 1), b = random_tensor({4, 5}, 2);
  EXPECT_TRUE(throws_with<ShapeError>([&] { einsum("ij,jk->ik", a, b); },
                                      {"einsum(\"ij,jk->ik\")", "index 'j'", "size 3 in operand 0 [2,3]",
                                       "size 4 in operand 1 [4,5]", "equal or 1"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { einsum("ii->i", a); }, {"einsum(\"ii->i\")", "index 'i'", "[2,3]"}));
}

TEST(Einsum, WrongNumberOfOperands) {
  const auto a = random_tensor({2, 3}, 1);
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("ij,jk->ik", a); },
                                      {"einsum(\"ij,jk->ik\")", "2 operand(s)", "1 were given"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("ij->i", a, a); }, {"einsum(\"ij->i\")", "1 operand(s)", "2 were"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("ij", Inputs{}); }, {"einsum(\"ij\")", "0 were given"}));
}

TEST(Einsum, InvalidCharacter) {
  const auto a = random_tensor({2, 3}, 1);
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("i2->i", a); },
                                      {"einsum(\"i2->i\")", "invalid character '2' at position 1", "a-z, A-Z"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("ij>i", a); }, {"invalid character '>'"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("ij-i", a); }, {"invalid character '-'"}));
}

TEST(Einsum, MalformedArrow) {
  const auto a = random_tensor({2, 3}, 1);
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("ij->j->i", a); }, {"einsum(\"ij->j->i\")", "more than once"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("ij->i,j", a); }, {"einsum(\"ij->i,j\")", "after \"->\""}));
}

TEST(Einsum, MalformedEllipsis) {
  const auto a = random_tensor({2, 3}, 1);
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("...i...->i", a); },
                                      {"einsum(\"...i...->i\")", "operand 0", "second ellipsis", "position 4"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("...ij->...ji...", a); }, {"the output", "second ellipsis"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("a.b", a); }, {"einsum(\"a.b\")", "'.' at position 1",
                                                                  "not part of an ellipsis"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum(".. .ij", a); }, {"'.' at position 0"}));
}

TEST(Einsum, EllipsisNeedsEnoughDims) {
  const auto a = random_tensor({2, 3}, 1);
  EXPECT_TRUE(throws_with<ShapeError>([&] { einsum("...ijk", a); },
                                      {"einsum(\"...ijk\"): operand 0 has 2 dims [2,3] but its subscripts \"...ijk\" "
                                       "need at least 3"}));
}

TEST(Einsum, EllipsisDimsThatDoNotBroadcastNameBothAxes) {
  const auto a = random_tensor({4, 2}, 1), b = random_tensor({3}, 2);
  EXPECT_TRUE(throws_with<ShapeError>([&] { einsum("...,...->...", a, b); },
                                      {"einsum(\"...,...->...\")", "\"...\"", "dim 1 of operand 0 [4,2] has size 2",
                                       "dim 0 of operand 1 [3] has size 3"}));
}

TEST(Einsum, RepeatedIndexNeedsEqualSizesInItsOperand) {
  // torch broadcasts across operands, never within a diagonal.
  const auto a = random_tensor({3, 1}, 1);
  EXPECT_TRUE(throws_with<ShapeError>([&] { einsum("ii->i", a); },
                                      {"einsum(\"ii->i\")", "index 'i' is repeated in operand 0 [3,1]",
                                       "sizes 3 and 1"}));
}

TEST(Einsum, MoreThan52IndicesWithEllipsis) {
  const std::string all = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  const auto a = Tensor<double>::ones(Shape(53, 1));
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("..." + all, a); },
                                      {"the ellipsis covers 1 dims", "0 letters", "at most 52"}));
}

TEST(Einsum, OutputIndexInNoOperand) {
  const auto a = random_tensor({2, 3}, 1);
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("ij->ik", a); },
                                      {"einsum(\"ij->ik\")", "output index 'k'", "no operand"}));
}

TEST(Einsum, RepeatedOutputIndex) {
  const auto a = random_tensor({2, 2}, 1);
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("ij->ii", a); },
                                      {"einsum(\"ij->ii\")", "output index 'i'", "more than once"}));
}

TEST(Einsum, UndefinedOperand) {
  const auto a = random_tensor({2, 2}, 1);
  EXPECT_TRUE(throws_with<ValueError>([&] { einsum("ij,jk->ik", a, Tensor<double>()); },
                                      {"einsum(\"ij,jk->ik\")", "operand 1", "undefined"}));
}

TEST(EinsumKernel, UnsizedOutputIndexAndOperandCount) {
  const xt::xarray<double> x = random_tensor({2, 3}, 1).value();
  // The plans cached for sizes 0 and 4 of 'k' are not found for a call that gives none.
  EXPECT_EQ(kernels::einsum<double>({{"ij"}, "ijk"}, {&x}, {{'k', 0}}).shape(2), 0u);
  EXPECT_EQ(kernels::einsum<double>({{"ij"}, "ijk"}, {&x}, {{'k', 4}}).shape(2), 4u);
  EXPECT_TRUE(throws_with<ValueError>([&] { kernels::einsum<double>({{"ij"}, "ijk"}, {&x}); },
                                      {"einsum(\"ij->ijk\")", "output index 'k'", "size is unknown"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { kernels::einsum<double>({{"ij", "jk", "k"}, "i"}, {&x, &x, &x}); },
                                      {"einsum(\"ij,jk,k->i\")", "1 or 2 operands"}));
}

}  // namespace

// ---- specs ------------------------------------------------------------------------------------

namespace testing {
namespace {

using namespace pytorch_samples;  // the PyTorch calls' building blocks (rows.h)
using T = Tensor<double>;
using V = std::vector<Tensor<double>>;

// einsum is linear in each operand: a sample with one differentiated operand squares it, so its
// second derivative is not zero. They reach the backward's broadcast and diagonal forms, and
// torch's grammar: ellipses (broadcast from the right), implicit outputs and size-1 indices
// broadcasting, which the op rewrites as letters and reshapes, so their second derivatives run
// through the recorded reshape and einsum backward.
TAPEGRAD_OP_SPEC(einsum) {
  OpSpec s("einsum", "linalg");
  s.remark = "torch.einsum's grammar: ellipsis, implicit output, size-1 broadcasting";
  s.samples = {
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
  s.errors = {
      error_input<ValueError>("einsum_operand_count", "`einsum`", "\"ij,jk->ik\" with one operand",
                  [] { return einsum("ij,jk->ik", bad_inputs::zeros({2, 2})); },
                  {"einsum", "\"ij,jk->ik\"", "describe 2 operand(s)", "1 were given"}),
      error_input<ValueError>("einsum_invalid_character", "`einsum`", "\"i1->i\"",
                  [] { return einsum("i1->i", bad_inputs::zeros({2, 2})); },
                  {"einsum", "\"i1->i\"", "'1'"}),
      error_input<ValueError>("einsum_two_ellipses", "`einsum`", "\"...i...->i\"",
                  [] { return einsum("...i...->i", bad_inputs::zeros({2, 2})); },
                  {"einsum", "\"...i...->i\"", "operand 0", "second ellipsis"}),
      error_input<ValueError>("einsum_dot_outside_ellipsis", "`einsum`", "\"i.->i\"",
                  [] { return einsum("i.->i", bad_inputs::zeros({2})); },
                  {"einsum", "\"i.->i\"", "'.' at position 1"}),
      error_input<ShapeError>("einsum_ellipsis_needs_more_dims", "`einsum`", "\"...ijk\" with a [2,2] operand",
                  [] { return einsum("...ijk", bad_inputs::zeros({2, 2})); },
                  {"einsum", "operand 0", "[2,2]", "\"...ijk\"", "at least 3"}),
      error_input<ShapeError>("einsum_ellipsis_dims_do_not_broadcast", "`einsum`", "\"...,...\" of [2] and [3]",
                  [] { return einsum("...,...", bad_inputs::zeros({2}), bad_inputs::zeros({3})); },
                  {"einsum", "\"...\"", "operand 0 [2]", "operand 1 [3]"}),
      error_input<ShapeError>("einsum_diagonal_sizes_differ", "`einsum`", "\"ii->i\" of [3,1] (torch broadcasts across operands, never within a diagonal)",
                  [] { return einsum("ii->i", bad_inputs::zeros({3, 1})); },
                  {"einsum", "'i'", "operand 0 [3,1]", "sizes 3 and 1"}),
      error_input<ValueError>("einsum_more_than_52_indices", "`einsum`", "all 52 letters and an ellipsis over one more dim",
                  [] { return einsum("...ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", bad_inputs::zeros(Shape(53, 1))); },
                  {"einsum", "covers 1 dims", "at most 52"}),
      error_input<ValueError>("einsum_repeated_output_index", "`einsum`", "\"ij->ii\"",
                  [] { return einsum("ij->ii", bad_inputs::zeros({2, 2})); },
                  {"einsum", "\"ij->ii\"", "'i'"}),
      error_input<ValueError>("einsum_output_index_in_no_operand", "`einsum`", "\"ij->k\"",
                  [] { return einsum("ij->k", bad_inputs::zeros({2, 2})); },
                  {"einsum", "\"ij->k\"", "'k'"}),
      error_input<ShapeError>("einsum_rank_mismatch", "`einsum`", "\"ibhd,jbhd->ijbh\" with a 3-D second operand",
                  [] { return einsum("ibhd,jbhd->ijbh", bad_inputs::zeros({5, 3, 2, 4}), bad_inputs::zeros({5, 3, 2})); },
                  {"einsum", "operand 1", "[5,3,2]", "\"jbhd\""}),
      error_input<ShapeError>("einsum_index_with_two_sizes", "`einsum`", "\"ij,jk->ik\" with j = 3 and 4",
                  [] { return einsum("ij,jk->ik", bad_inputs::zeros({2, 3}), bad_inputs::zeros({4, 2})); },
                  {"einsum", "'j'", "3", "4"}),
      error_input<ValueError>("einsum_undefined_operand", "`einsum`", "undefined operand",
                  [] { return einsum("i,i->", bad_inputs::zeros({2}), bad_inputs::undefined()); },
                  {"einsum", "operand 1", "undefined"}),
      error_input<ValueError>("einsum_two_arrows", "`einsum`", "\"i->i->i\"",
                  [] { return einsum("i->i->i", bad_inputs::zeros({2})); },
                  {"einsum", "\"i->i->i\""}),
  };
  s.pytorch = {
      {"einsum", [](Call& c) -> Outputs { return {einsum(c.text(c.arg(0)), c.tensors(c.input()))}; }},
  };
  return s;
}

}  // namespace
}  // namespace testing
}  // namespace tapegrad
