// The C++ blocks of README.md and docs/*.md, compiled as written and run, so the documents stay
// true. Each block is copied out of its document at configure time (tests/docs/snippets.py) into
// doc_snippets/<name>.inc and included here where its variables exist; each test then checks what
// the document says of the block. docs/distributed.md's block runs in tests/test_distributed.cpp,
// under mpirun. DocSnippets.EveryCppBlockIsCompiled fails for a block that no test includes.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "tapegrad.h"
#include "autograd/testing/gradcheck_gtest.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

// docs/gradcheck.md: the op of one's own (namespace scope, as a user writes it).
#include "doc_snippets/gradcheck_cube_op.inc"

// docs/gradcheck.md: the GoogleTest macros on it, a test of its own (Cube.Gradients).
#include "doc_snippets/gradcheck_gtest_macros.inc"

TEST(DocSnippets, ReadmeUsingIt) {
#include "doc_snippets/readme_using_it.inc"
  // The comment's formula, by loops: dL/dw[k][j] = sum_i x[i][k] (1 - tanh^2((x w)[i][j])) / 8.
  for (std::size_t k = 0; k < 3; ++k) {
    for (std::size_t j = 0; j < 4; ++j) {
      double expected = 0.0;
      for (std::size_t i = 0; i < 2; ++i) {
        double z = 0.0;
        for (std::size_t m = 0; m < 3; ++m) z += double(x.value()(i, m)) * double(w.value()(m, j));
        expected += double(x.value()(i, k)) * (1.0 - std::tanh(z) * std::tanh(z)) / 8.0;
      }
      EXPECT_NEAR(w.grad()(k, j), expected, 1e-6) << k << ", " << j;
    }
  }
}

TEST(DocSnippets, TapeForwardBeforeTheTape) {
  Tensor<double> w(xt::xarray<double>{0.5, -2.0}, true);
#include "doc_snippets/tape_forward_before_the_tape.inc"
  EXPECT_FALSE(h.requires_grad());
  EXPECT_EQ(w.grad(), (xt::xarray<double>{0.25, 4.0}));  // w^2, not 3 w^2 = {0.75, 12}
}

// The op with a wrong first derivative (3x instead of 3x^2), with one that forgot the factor 3
// (docs/gradcheck.md's sample report), and with a right first derivative whose formula hides one
// x from the second (detach): each check must catch its own.
Tensor<double> wrong_first(const Tensor<double>& x) {
  return custom_op("wrong_first", xt::xarray<double>(x.value() * x.value() * x.value()),
                   [x](const Tensor<double>& grad, const Tensor<double>&) { add_gradient(x, mul(mul(grad, x), 3.0)); }, x);
}
Tensor<double> wrong_factor(const Tensor<double>& x) {
  return custom_op("wrong_factor", xt::xarray<double>(x.value() * x.value() * x.value()),
                   [x](const Tensor<double>& grad, const Tensor<double>&) { add_gradient(x, mul(grad, mul(x, x))); }, x);
}
Tensor<double> wrong_second(const Tensor<double>& x) {
  return custom_op("wrong_second", xt::xarray<double>(x.value() * x.value() * x.value()),
                   [x](const Tensor<double>& grad, const Tensor<double>&) {
                     add_gradient(x, mul(mul(grad, mul(x, x.detach())), 3.0));
                   }, x);
}

TEST(DocSnippets, GradcheckCubeCheck) {
  Generator gen(0);
#include "doc_snippets/gradcheck_cube_check.inc"
  EXPECT_TRUE(fast.ok) << fast.message;
  const auto first = gradcheck(f, in);
  EXPECT_TRUE(first.ok) << first.message;
  const auto second = gradgradcheck(f, in);
  EXPECT_TRUE(second.ok) << second.message;
  EXPECT_FALSE(gradcheck([](const std::vector<Tensor<double>>& x) { return wrong_first(x[0]); }, in).ok);
  auto bad_second = [](const std::vector<Tensor<double>>& x) { return wrong_second(x[0]); };
  EXPECT_TRUE(gradcheck(bad_second, in).ok);
  EXPECT_FALSE(gradgradcheck(bad_second, in).ok);
}

// docs/gradcheck.md's sample report: a backward that forgot the factor 3.
TEST(DocSnippets, GradcheckReportSample) {
  Generator gen(0);
  std::vector<Tensor<double>> in{Tensor<double>::randn({2, 3}, gen).set_requires_grad(true)};
  const auto r = gradcheck([](const std::vector<Tensor<double>>& x) { return wrong_factor(x[0]); }, in);
  ASSERT_TRUE(r.worst);
  for (const char* fragment : {"gradcheck: Jacobian mismatch for input 0 of shape [2,3], element [", "output element [",
                               "estimated numeric error", "The worst of 6 mismatched elements",
                               "Ops that read this input directly: wrong_factor (called at"}) {
    EXPECT_NE(r.message.find(fragment), std::string::npos) << r.message << " lacks " << fragment;
  }
  EXPECT_NEAR(r.worst->numeric, 3.0 * r.worst->analytic, 1e-6 * std::abs(r.worst->numeric));
}

TEST(DocSnippets, HigherOrderGradientOfGradient) {
  // loss = sum(x^3): g = 3x^2, and the gradient of sum(g * g) = 9 sum(x^4) is 36 x^3.
  Tensor<double> x(xt::xarray<double>{0.5, -2.0}, true);
  const auto model_loss = [](const Tensor<double>& input) { return sum(cube(input)); };
#include "doc_snippets/higher_order_gradient_of_gradient.inc"
  EXPECT_EQ(gg.value(), (xt::xarray<double>{4.5, -288.0}));
}

TEST(DocSnippets, HigherOrderFunctional) {
  // f = sum(x^3): grad 3x^2, J^T w = 3x^2 w, J u = <3x^2, u>, H v = 6 x v.
  Tensor<double> x(xt::xarray<double>{0.5, -2.0}, true);
  const TensorFunction<double> f = [](const std::vector<Tensor<double>>& p) { return sum(cube(p[0])); };
  const Tensor<double> w(xt::xarray<double>(2.0));
  const Tensor<double> u(xt::xarray<double>{1.0, 2.0}), v(xt::xarray<double>{1.0, 2.0});
#include "doc_snippets/higher_order_functional.inc"
  EXPECT_EQ(grads[0].value(), (xt::xarray<double>{0.75, 12.0}));
  EXPECT_DOUBLE_EQ(y.item(), -7.875);
  EXPECT_EQ(jt_w[0].value(), (xt::xarray<double>{1.5, 24.0}));
  EXPECT_DOUBLE_EQ(y2.item(), -7.875);
  EXPECT_DOUBLE_EQ(j_u[0].item(), 24.75);
  EXPECT_EQ(hv[0].value(), (xt::xarray<double>{3.0, -24.0}));
  // jvp of a function with a result of many elements: J u = 3 x^2 u, element by element.
  const auto [cubed, cube_j_u] = jvp<double>([](const std::vector<Tensor<double>>& p) { return cube(p[0]); }, {x}, {v});
  EXPECT_EQ(cube_j_u[0].value(), (xt::xarray<double>{0.75, 24.0}));
}

TEST(DocSnippets, HigherOrderAnomalyMode) {
  // sqrt's derivative at 0 is infinite: the forward is finite, its backward is not.
  Tensor<double> batch(xt::xarray<double>{0.0, 4.0}, true);
  const auto model_loss = [](const Tensor<double>& b) { return sum(sqrt(b)); };
  GradientTape tape;
  std::string message;
  try {
#include "doc_snippets/higher_order_anomaly_mode.inc"
  } catch (const AnomalyError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("anomaly mode: the backward of sqrt (called at"), std::string::npos) << message;
  EXPECT_FALSE(is_anomaly_enabled());  // the guard ended with its scope
}

TEST(DocSnippets, HookPointsByPath) {
  Generator gen(0);
  nn::transformer::Transformer<float> model(11, 11, 16, 0, 8, 2, 16, 2, 0.0, 1e-5, gen);
  const auto src = IndexArray({{1, 2, 3, 4}});
  const auto before = model(src, src).value();
  std::ostringstream printed;
  std::streambuf* cout_buffer = std::cout.rdbuf(printed.rdbuf());
#include "doc_snippets/hook_points_by_path.inc"
  std::cout.rdbuf(cout_buffer);
  EXPECT_NE(printed.str().find("decoder.decoder_layers.1.src_tgt_attention.hook_result\n"), std::string::npos);
  EXPECT_EQ(layer.type_name(), "TransformerDecoderLayer");
  // Head 1 of the first encoder layer is cut: the output changes.
  EXPECT_FALSE(xt::allclose(model(src, src).value(), before));
}

TEST(DocSnippets, HooksTensorAndModule) {
  Generator gen(0);
  nn::mha::MultiHeadAttention<float> mha(8, 2, gen);
  mha.eval();
  nn::Linear<float> layer(8, 8, gen);
  const auto x = Tensor<float>::randn({1, 5, 8}, gen);
  GradientTape tape(/*persistent=*/true);
#include "doc_snippets/hooks_tensor_and_module.inc"
  tape.backward(sum(out.output));
  // dL/dA cut by the tensor hook: no gradient reaches the query and key projections' weights
  // through the scores; the value and output projections still get theirs.
  for (const auto& [name, p] : mha.named_parameters()) {
    const double largest = p.has_grad() ? double(xt::amax(xt::abs(p.grad()))()) : 0.0;
    if (name == "query.weight" || name == "key.weight") {
      EXPECT_EQ(largest, 0.0) << name;
    } else if (name == "value.weight" || name == "proj.weight") {
      EXPECT_GT(largest, 0.0) << name;
    }
  }
  // The forward hook registered after that call replaces the next call's output by zeros.
  EXPECT_EQ(double(xt::amax(xt::abs(mha(x, x, x).output.value()))()), 0.0);
  // The layer's hooks keep what they see.
  EXPECT_EQ(layer(x).value(), layer.forward(x).value());
}

TEST(DocSnippets, RunWithCachePoints) {
  Generator gen(0);
  nn::transformer::Transformer<float> model(11, 11, 16, 0, 8, 2, 16, 2, 0.0, 1e-5, gen);
  const auto src = IndexArray({{1, 2, 3, 4}});
  const std::function<Tensor<float>()> run_metric = [&] { return sum(model(src, src)); };
#include "doc_snippets/run_with_cache_points.inc"
  EXPECT_EQ(heads.shape(), (std::vector<std::size_t>{1, 2, 4, 4}));
  EXPECT_EQ(dz.shape(), heads.shape());
  EXPECT_GT(double(xt::amax(xt::abs(dz))()), 0.0);
}

// The patching snippets' model and runs: a two-layer Transformer, a clean and a corrupted source,
// and a metric linear in the decoder's output.
struct PatchingSnippetModel {
  Generator gen{0};
  nn::transformer::Transformer<float> model{11, 11, 16, 0, 8, 2, 16, 2, 0.0, 1e-5, gen};
  IndexArray src = IndexArray({{1, 2, 3, 4}, {1, 5, 6, 7}}), corrupted_src = IndexArray({{1, 3, 2, 5}, {1, 7, 5, 6}});
  Tensor<float> weights = Tensor<float>::randn({2, 4, 8}, gen);
  std::function<Tensor<float>()> run_clean = [this] { return sum(model(src, src) * weights); };
  std::function<Tensor<float>()> run_corrupted = [this] { return sum(model(corrupted_src, src) * weights); };
  PatchingSnippetModel() { model.eval(); }
};

TEST(DocSnippets, AttributionPatchingMethods) {
  PatchingSnippetModel m;
  auto& model = m.model;
  const auto& run_clean = m.run_clean;
  const auto& run_corrupted = m.run_corrupted;
#include "doc_snippets/attribution_patching_methods.inc"
  EXPECT_EQ(atp.rows.size(), 4u);  // 2 heads of 2 points
  EXPECT_EQ(how_good.compared, 4u);
  EXPECT_GT(how_good.pearson, 0.5);
  // The decoder's queries depend on its input alone, the same in both runs: nothing to patch there.
  for (const study::AttributedSlice& row : atp.rows) {
    if (row.point.ends_with("hook_q")) EXPECT_EQ(row.grad_drop, 0.0);
    else EXPECT_GT(row.grad_drop, 0.0);
  }
}

TEST(DocSnippets, SubsetDiagnostic) {
  PatchingSnippetModel m;
  auto& model = m.model;
  const auto& run_clean = m.run_clean;
  const auto& run_corrupted = m.run_corrupted;
  const std::vector<std::string> points = {"encoder.encoder_layers.0.multi_head_attention.hook_z",
                                           "encoder.encoder_layers.1.multi_head_attention.hook_z"};
  const auto clean = study::run_with_cache<float>(model, run_clean, points);
#include "doc_snippets/subset_diagnostic.inc"
  EXPECT_EQ(diagnostic.rows, (std::vector<std::size_t>{1, 2}));  // 4 heads, 2 verified
  EXPECT_EQ(diagnostic.bound.size(), 2u);
  EXPECT_GT(diagnostic.subsets_patched, 0u);
  for (const std::size_t r : diagnostic.not_ruled_out) EXPECT_TRUE(r == 1 || r == 2);
}

TEST(DocSnippets, EdgePatching) {
  PatchingSnippetModel m;
  auto& model = m.model;
  const auto& run_clean = m.run_clean;
  const auto& run_corrupted = m.run_corrupted;
#include "doc_snippets/edge_patching.inc"
  // 4 senders and 9 receivers per stack of two layers, heads split in two; connected edges only.
  EXPECT_EQ(senders.size(), 18u);
  EXPECT_EQ(receivers.size(), 19u);
  EXPECT_EQ(eap.rows.size(), 86u);
  EXPECT_EQ(edges_agree.compared, 86u);
  EXPECT_TRUE(std::isfinite(edges_agree.pearson));  // neither side constant
  for (std::size_t i = 0; i < eap.rows.size(); ++i) {
    EXPECT_EQ(exact.rows[i].edge.sender.name(), eap.rows[i].edge.sender.name());
    EXPECT_EQ(exact.rows[i].edge.receiver, eap.rows[i].edge.receiver);
  }
}

TEST(DocSnippets, AttentionCaptureAndAblation) {
  Generator gen(0);
  nn::mha::MultiHeadAttention<float> mha(8, 2, gen);
  mha.eval();
  const auto x = Tensor<float>::randn({1, 5, 8}, gen);
  const std::function<Tensor<float>()> run_loss = [&] { return mean(mha(x, x, x).output); };
#include "doc_snippets/attention_capture_and_ablation.inc"
  EXPECT_TRUE(ok);
  EXPECT_EQ(r.name, "");
  EXPECT_EQ(r.weights.shape()[1], 2u);
  EXPECT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[1].change, dL);
}

// The attribution block with its inputs: two layers of 2 heads over 3 tokens, and grad_at for
// F(A) = sum(A²) over layer 0.
TEST(DocSnippets, AttributionMethods) {
  std::vector<xt::xarray<double>> attention, gradients;
  for (std::uint64_t seed : {1, 2}) {
    xt::xarray<double> a = xt::abs(random_tensor({1, 2, 3, 3}, seed, false).value());
    attention.push_back(xt::xarray<double>(a / xt::eval(xt::sum(a, {3}, xt::keep_dims))));
    gradients.push_back(random_tensor({1, 2, 3, 3}, seed + 10, false).value());
  }
  const study::AttentionGradientAt<double> grad_at = [&](double alpha) {
    return xt::xarray<double>(2.0 * alpha * attention[0]);
  };
#include "doc_snippets/attribution_methods.inc"
  EXPECT_LT(max_abs_diff(xt::xarray<double>(xt::sum(rollout, {2})), xt::ones<double>({1, 3})), 1e-12);
  EXPECT_EQ(flow.shape(), rollout.shape());  // its values: tests/test_attribution.cpp's hand-solved flows
  // The document's table of formulas, by loops. Per layer: S_h = sum of A ⊙ dL/dA over the map,
  // and I + Ā with Ā = mean_heads(max(A ⊙ dL/dA, 0)).
  using Matrix = std::array<std::array<double, 3>, 3>;
  std::array<Matrix, 2> residual{};
  double head_sum[2][2] = {};
  for (std::size_t l = 0; l < 2; ++l) {
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 3; ++j) {
        residual[l][i][j] = i == j ? 1.0 : 0.0;
        for (std::size_t h = 0; h < 2; ++h) {
          const double product = attention[l](0, h, i, j) * gradients[l](0, h, i, j);
          head_sum[l][h] += product;
          residual[l][i][j] += std::max(product, 0.0) / 2.0;
        }
      }
    }
  }
  // Later layers on the left: M_1 · M_0, with or without each row divided by its sum.
  const auto product = [&](bool normalize_rows) {
    std::array<Matrix, 2> m = residual;
    for (Matrix& layer : m) {
      for (auto& row : layer) {
        const double total = normalize_rows ? row[0] + row[1] + row[2] : 1.0;
        for (double& v : row) v /= total;
      }
    }
    xt::xarray<double> r = xt::zeros<double>({1, 3, 3});
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 3; ++j)
        for (std::size_t k = 0; k < 3; ++k) r(0, i, j) += m[1][i][k] * m[0][k][j];
    return r;
  };
  EXPECT_LT(max_abs_diff(weighted, product(true)), 1e-12);
  EXPECT_LT(max_abs_diff(relevance, product(false)), 1e-12);
  // |S_h| per head, each layer divided by its L2 norm over the heads.
  xt::xarray<double> expected_importance = xt::zeros<double>({2, 2});
  for (std::size_t l = 0; l < 2; ++l) {
    const double norm = std::hypot(head_sum[l][0], head_sum[l][1]);
    for (std::size_t h = 0; h < 2; ++h) expected_importance(l, h) = std::abs(head_sum[l][h]) / norm;
  }
  EXPECT_LT(max_abs_diff(importance, expected_importance), 1e-12);
  // F = sum(A²): 20 right-Riemann steps give A² · 21/20.
  EXPECT_LT(max_abs_diff(attribution, attention[0] * attention[0] * 1.05), 1e-12);
}

// bfloat16 rounding to nearest, ties to even, of a finite float.
float round_to_bf16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

TEST(DocSnippets, MixedPrecisionBf16Scope) {
  const auto make_model = [] {
    Generator gen(0);
    return std::make_unique<nn::Linear<float>>(16, 16, gen);
  };
  Generator data(1);
  const auto batch = Tensor<float>::randn({8, 16}, data);
  const auto batch_loss = [](nn::Linear<float>& m, const Tensor<float>& b) { return sum(tanh(m(b))); };
  auto model_ptr = make_model();
  nn::Linear<float>& model = *model_ptr;
  optim::Adam<float> optimizer(model.named_parameters());
  const xt::xarray<float> weight_before = model.weight().value();
  Tensor<float> loss;
  GradientTape tape;
#include "doc_snippets/mixed_precision_bf16_scope.inc"

  // The same products in float32 on copies of the inputs rounded to bf16, and without rounding.
  const auto fp32_loss = [&](bool round_inputs) {
    auto reference = make_model();
    xt::xarray<float> input = batch.value();
    if (round_inputs) {
      Tensor<float> weight = reference->weight();  // a handle to the module's weight
      for (float& v : weight.mutable_value()) v = round_to_bf16(v);
      for (float& v : input) v = round_to_bf16(v);
    }
    return double(batch_loss(*reference, Tensor<float>(input)).item());
  };
  const double rounded = fp32_loss(true), unrounded = fp32_loss(false);
  EXPECT_LT(std::abs(loss.item() - rounded), 1e-5 * std::abs(rounded)) << loss.item() << " vs " << rounded;
  EXPECT_GT(std::abs(loss.item() - unrounded), 10 * std::abs(loss.item() - rounded))
      << loss.item() << ", rounded " << rounded << ", unrounded " << unrounded;

  // The backward after the scope ran the products in bf16: the same bits as a backward inside it.
  auto inside = make_model();
  {
    MatmulPrecisionGuard bf16(MatmulPrecision::kBfloat16);
    GradientTape inside_tape;
    inside_tape.backward(batch_loss(*inside, batch));
  }
  EXPECT_EQ(inside->weight().grad(), model.weight().grad());
  EXPECT_GT(double(xt::amax(xt::abs(model.weight().value() - weight_before))()), 0.0);  // the step ran
}

TEST(DocSnippets, CapturedStepsTrainingLoop) {
  // One model trained eagerly and one captured, on the same batches: the same losses and
  // parameters, bit for bit.
  struct Trainee {
    Generator gen{0};
    nn::Linear<float> model{8, 4, gen};
    optim::Adam<float> optimizer{model.named_parameters()};
    std::vector<float> losses;
    float step(const Tensor<float>& batch) {
      optimizer.zero_grad();
      GradientTape tape;
      const auto loss = mean(tanh(model(batch)));
      tape.backward(loss);
      optimizer.step();
      losses.push_back(loss.item());
      return losses.back();
    }
  };
  Generator data(1);
  std::vector<Tensor<float>> batches;
  for (int i = 0; i < 6; ++i) batches.push_back(Tensor<float>::randn({16, 8}, data));
  Trainee captured, eager;
  const auto train_step = [&](const Tensor<float>& batch) { return captured.step(batch); };
#include "doc_snippets/captured_steps_training_loop.inc"
  for (const auto& batch : batches) eager.step(batch);
  EXPECT_EQ(captured.losses, eager.losses);
  EXPECT_EQ(captured.model.weight().value(), eager.model.weight().value());
  EXPECT_GT(capture.stats().replayed_steps, 0u);
}

// A new temporary folder as the working directory while it lives; then the previous one again,
// and the folder removed.
class InTemporaryFolder {
 public:
  InTemporaryFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "doc_snippets_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    folder_ = pattern;
    std::filesystem::current_path(folder_);
  }
  ~InTemporaryFolder() {
    std::filesystem::current_path(previous_);
    std::filesystem::remove_all(folder_);
  }
  InTemporaryFolder(const InTemporaryFolder&) = delete;
  InTemporaryFolder& operator=(const InTemporaryFolder&) = delete;

 private:
  std::filesystem::path previous_ = std::filesystem::current_path(), folder_;
};

TEST(DocSnippets, CheckpointsSaveAndLoad) {
  const InTemporaryFolder folder;  // the snippet writes model.safetensors where it runs
  Generator gen(0);
  nn::Linear<float> model(3, 2, gen);
  optim::Adam<float> optimizer(model.named_parameters());
  {
    GradientTape tape;
    tape.backward(sum(model(Tensor<float>::randn({4, 3}, gen))));
  }
  optimizer.step();  // Adam has moments to save
  const std::uint64_t step = 7;
  const auto state_before = optimizer.state();
#include "doc_snippets/checkpoints_save_and_load.inc"
  EXPECT_EQ(loaded.step, step);
  EXPECT_EQ(optimizer.state(), state_before);
  // The file holds the model: a fresh one loads the same values.
  Generator other_gen(1);
  nn::Linear<float> fresh(3, 2, other_gen);
  ASSERT_NE(fresh.weight().value(), model.weight().value());
  nn::load_checkpoint("model.safetensors", fresh);
  EXPECT_EQ(fresh.weight().value(), model.weight().value());
  EXPECT_EQ(fresh.bias().value(), model.bias().value());
}

}  // namespace
}  // namespace tapegrad
