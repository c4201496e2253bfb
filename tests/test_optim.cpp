#include <cmath>

#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "tests/support/reference.h"
#include "tests/support/tied_model.h"

namespace tapegrad {
namespace {

// The problem every trajectory test runs: f(p) = sum(c * p^2) / 2, so grad = c * p.
const xt::xarray<double> kCurvature = {1.0, 0.5, 2.0, -0.3};
const xt::xarray<double> kStart = {1.0, -2.0, 0.5, 3.0};

void set_quadratic_grad(Tensor<double>& p, const xt::xarray<double>& curvature = kCurvature) {
  p.node()->grad = xt::xarray<double>(curvature * p.value());
}

// The four values of `base` repeated and scaled to n elements: long enough for the optimisers'
// vectorised loops and their scalar tails (37 = whole AVX-512 batches plus a remainder).
xt::xarray<double> stretched(const xt::xarray<double>& base, std::size_t n) {
  xt::xarray<double> out = xt::zeros<double>({n});
  for (std::size_t i = 0; i < n; ++i) out(i) = base(i % 4) * (1.0 + 0.1 * static_cast<double>(i / 4));
  return out;
}

// Scalar re-statement of the published Adam/AdamW algorithm (Kingma & Ba; Loshchilov & Hutter;
// torch.optim docs), element by element, written independently of optim/adam.cpp.
struct ScalarAdam {
  double lr, beta1, beta2, eps, wd;
  bool decoupled, amsgrad;
  std::vector<double> p, m, v, vmax;
  void step(int t, const std::vector<double>& c) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      double g = c[i] * p[i];
      if (!decoupled) g += wd * p[i];
      if (decoupled) p[i] -= lr * wd * p[i];
      m[i] = beta1 * m[i] + (1 - beta1) * g;
      v[i] = beta2 * v[i] + (1 - beta2) * g * g;
      vmax[i] = std::max(vmax[i], v[i]);
      const double m_hat = m[i] / (1 - std::pow(beta1, t));
      const double v_hat = (amsgrad ? vmax[i] : v[i]) / (1 - std::pow(beta2, t));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

std::vector<double> as_vector(const xt::xarray<double>& a) { return {a.begin(), a.end()}; }

TEST(Adam, FirstStepMovesEachWeightByLrTimesSignOfGradient) {
  Tensor<double> w(kStart, true);
  optim::Adam<double> adam({{"w", w}}, {.lr = 0.1});
  set_quadratic_grad(w);
  adam.step();
  // m_hat = g and v_hat = g^2 after one step, so the update is lr * g / (|g| + eps).
  for (std::size_t i = 0; i < 4; ++i) {
    const double g = kCurvature(i) * kStart(i);
    EXPECT_NEAR(w.value()(i), kStart(i) - 0.1 * g / (std::abs(g) + 1e-8), 1e-15);
  }
}

void expect_adam_trajectory(bool decoupled, bool amsgrad, double wd) {
  constexpr std::size_t n = 37;
  const xt::xarray<double> start = stretched(kStart, n), curvature = stretched(kCurvature, n);
  Tensor<double> w(start, true);
  const double lr = 0.05, b1 = 0.8, b2 = 0.95, eps = 1e-6;
  std::unique_ptr<optim::Optimizer<double>> opt;
  if (decoupled) {
    opt = std::make_unique<optim::AdamW<double>>(optim::NamedParameters<double>{{"w", w}},
                                                 optim::AdamWOptions{lr, {b1, b2}, eps, wd, amsgrad});
  } else {
    opt = std::make_unique<optim::Adam<double>>(optim::NamedParameters<double>{{"w", w}},
                                                optim::AdamOptions{lr, {b1, b2}, eps, wd, amsgrad});
  }
  const std::vector<double> zeros(n, 0.0);
  ScalarAdam ref{lr, b1, b2, eps, wd, decoupled, amsgrad, as_vector(start), zeros, zeros, zeros};
  for (int t = 1; t <= 6; ++t) {
    set_quadratic_grad(w, curvature);
    opt->step();
    ref.step(t, as_vector(curvature));
    const auto state = opt->state();
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(w.value()(i), ref.p[i], 1e-12) << "step " << t << ", element " << i;
      EXPECT_NEAR(state.at("w.exp_avg")(i), ref.m[i], 1e-12) << "step " << t << ", element " << i;
      EXPECT_NEAR(state.at("w.exp_avg_sq")(i), ref.v[i], 1e-12) << "step " << t << ", element " << i;
      if (amsgrad) {
        EXPECT_NEAR(state.at("w.max_exp_avg_sq")(i), ref.vmax[i], 1e-12) << "step " << t << ", element " << i;
      }
    }
    EXPECT_EQ(state.at("w.step")(), t);
  }
}

TEST(Adam, TrajectoryMatchesThePublishedRule) { expect_adam_trajectory(false, false, 0.0); }
TEST(Adam, L2WeightDecayTrajectory) { expect_adam_trajectory(false, false, 0.1); }
TEST(Adam, AmsgradTrajectory) { expect_adam_trajectory(false, true, 0.1); }
TEST(AdamW, DecoupledWeightDecayTrajectory) { expect_adam_trajectory(true, false, 0.1); }
TEST(AdamW, AmsgradTrajectory) { expect_adam_trajectory(true, true, 0.01); }

TEST(AdamW, DefaultsArePyTorchs) {
  const optim::AdamWOptions w;
  EXPECT_EQ(w.weight_decay, 1e-2);
  const optim::AdamOptions a;
  EXPECT_EQ(a.lr, 1e-3);
  EXPECT_EQ(a.betas, (std::pair<double, double>{0.9, 0.999}));
  EXPECT_EQ(a.eps, 1e-8);
  EXPECT_EQ(a.weight_decay, 0.0);
}

TEST(Sgd, MomentumNesterovDampeningAndWeightDecayTrajectories) {
  for (const auto& o : std::vector<optim::SGDOptions>{{.lr = 0.1},
                                                      {.lr = 0.1, .momentum = 0.9},
                                                      {.lr = 0.1, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.05},
                                                      {.lr = 0.1, .momentum = 0.8, .weight_decay = 0.05, .nesterov = true}}) {
    Tensor<double> w(kStart, true);
    optim::SGD<double> sgd({{"w", w}}, o);
    std::vector<double> p = as_vector(kStart), buf(4);
    for (int t = 1; t <= 5; ++t) {
      set_quadratic_grad(w);
      sgd.step();
      for (std::size_t i = 0; i < 4; ++i) {
        double g = kCurvature(i) * p[i] + o.weight_decay * p[i];
        if (o.momentum != 0) {
          buf[i] = t == 1 ? g : o.momentum * buf[i] + (1 - o.dampening) * g;
          g = o.nesterov ? g + o.momentum * buf[i] : buf[i];
        }
        p[i] -= o.lr * g;
        EXPECT_NEAR(w.value()(i), p[i], 1e-12) << "momentum " << o.momentum << " step " << t;
      }
    }
  }
}

TEST(Optimizer, ParameterWithoutGradientIsUntouched) {
  Tensor<double> used(kStart, true), unused(kStart, true);
  optim::Adam<double> adam({{"used", used}, {"unused", unused}}, {.lr = 0.1});
  set_quadratic_grad(used);
  adam.step();
  EXPECT_EQ(unused.value(), kStart);
  EXPECT_NE(used.value(), kStart);
  EXPECT_EQ(adam.state().count("unused.exp_avg"), 0u);
}

TEST(Optimizer, GroupsHaveTheirOwnLearningRates) {
  Tensor<double> a(kStart, true), b(kStart, true);
  optim::SGD<double> sgd(std::vector<optim::ParamGroup<double>>{{{{"a", a}}, 0.1, 0.0}, {{{"b", b}}, 0.0, 0.0}});
  set_quadratic_grad(a);
  set_quadratic_grad(b);
  sgd.step();
  EXPECT_EQ(b.value(), kStart);
  EXPECT_NEAR(a.value()(0), 1.0 - 0.1 * 1.0, 1e-15);
}

TEST(Optimizer, ZeroGradDropsGradients) {
  Tensor<double> w(kStart, true);
  optim::Adam<double> adam({{"w", w}});
  set_quadratic_grad(w);
  adam.zero_grad();
  EXPECT_FALSE(w.has_grad());
}

TEST(Optimizer, LoadedStateContinuesTheSameTrajectory) {
  Tensor<double> a(kStart, true), b(kStart, true);
  optim::Adam<double> first({{"w", a}}, {.lr = 0.05});
  for (int t = 0; t < 3; ++t) {
    set_quadratic_grad(a);
    first.step();
  }
  b.mutable_value() = a.value();
  optim::Adam<double> resumed({{"w", b}}, {.lr = 0.05});
  resumed.load_state(first.state());
  set_quadratic_grad(a);
  set_quadratic_grad(b);
  first.step();
  resumed.step();
  EXPECT_EQ(a.value(), b.value());
  EXPECT_TRUE(throws_with<ValueError>([&] { resumed.load_state({{"nope.exp_avg", kStart}}); }, {"load_state", "'nope.exp_avg'"}));
  EXPECT_TRUE(throws_with<ShapeError>([&] { resumed.load_state({{"w.exp_avg", xt::zeros<double>({2})}}); }, {"'w.exp_avg'", "[2]", "[4]"}));
}

// An Adam over "w" (kStart) after three steps on the quadratic, and its state.
struct SteppedAdam {
  Tensor<double> w{kStart, true};
  optim::Adam<double> adam{{{"w", w}}, {.lr = 0.05}};
  explicit SteppedAdam(int steps = 3) {
    for (int t = 0; t < steps; ++t) {
      set_quadratic_grad(w);
      adam.step();
    }
  }
};

optim::StateMap<double> without(optim::StateMap<double> state, const std::string& key) {
  state.erase(key);
  return state;
}

TEST(LoadState, StateWithoutStepCountIsRefused) {
  const SteppedAdam saved;
  Tensor<double> w(kStart, true);
  optim::Adam<double> adam({{"w", w}});
  EXPECT_TRUE(throws_with<ValueError>([&] { adam.load_state(without(saved.adam.state(), "w.step")); },
                                      {"Adam::load_state: parameter 'w'", "[exp_avg, exp_avg_sq]", "no step ('w.step')"}));
}

TEST(LoadState, MisspeltBufferIsRefused) {
  const SteppedAdam saved;
  auto state = without(saved.adam.state(), "w.exp_avg_sq");
  state["w.exp_avg_sqr"] = saved.adam.state().at("w.exp_avg_sq");
  Tensor<double> w(kStart, true);
  optim::Adam<double> adam({{"w", w}});
  EXPECT_TRUE(throws_with<ValueError>([&] { adam.load_state(state); },
                                      {"Adam::load_state: parameter 'w' has buffers [exp_avg, exp_avg_sqr]",
                                       "Adam keeps [exp_avg, exp_avg_sq]", "missing [exp_avg_sq], unknown [exp_avg_sqr]"}));
}

TEST(LoadState, AnotherOptimisersStateIsRefused) {
  Tensor<double> w(kStart, true);
  const SteppedAdam adam_run;
  optim::SGD<double> momentum_sgd({{"w", w}}, {.lr = 0.1, .momentum = 0.9}), plain_sgd({{"w", w}}, {.lr = 0.1});
  set_quadratic_grad(w);
  momentum_sgd.step();
  plain_sgd.step();
  optim::Adam<double> adam({{"w", w}});
  EXPECT_TRUE(throws_with<ValueError>([&] { adam.load_state(momentum_sgd.state()); },
                                      {"Adam::load_state: parameter 'w'", "missing [exp_avg, exp_avg_sq], unknown [momentum_buffer]",
                                       "another optimiser"}));
  // Plain SGD keeps only a step: Adam would restart its moments with a bias correction for step 2.
  EXPECT_TRUE(throws_with<ValueError>([&] { adam.load_state(plain_sgd.state()); },
                                      {"Adam::load_state: parameter 'w' has buffers []", "missing [exp_avg, exp_avg_sq]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { momentum_sgd.load_state(adam_run.adam.state()); },
                                      {"SGD::load_state: parameter 'w'", "SGD keeps [momentum_buffer]",
                                       "missing [momentum_buffer], unknown [exp_avg, exp_avg_sq]"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { plain_sgd.load_state(momentum_sgd.state()); }, {"SGD keeps []", "unknown [momentum_buffer]"}));
  optim::Adam<double> amsgrad({{"w", w}}, {.amsgrad = true});
  EXPECT_TRUE(throws_with<ValueError>([&] { amsgrad.load_state(adam_run.adam.state()); }, {"missing [max_exp_avg_sq]"}));
}

TEST(LoadState, RejectedStateLeavesTheStateAsItWas) {
  SteppedAdam run, resumed;
  const auto before = resumed.adam.state();
  auto unknown_parameter = before, mis_shaped = before;
  unknown_parameter["v.exp_avg"] = kStart;
  mis_shaped["w.exp_avg_sq"] = xt::zeros<double>({3});
  for (const auto& bad : {without(before, "w.step"), without(before, "w.exp_avg"), unknown_parameter}) {
    EXPECT_THROW(resumed.adam.load_state(bad), ValueError);
  }
  EXPECT_THROW(resumed.adam.load_state(mis_shaped), ShapeError);
  EXPECT_EQ(resumed.adam.state(), before);
  set_quadratic_grad(run.w);
  set_quadratic_grad(resumed.w);
  run.adam.step();
  resumed.adam.step();
  EXPECT_EQ(resumed.w.value(), run.w.value());
}

TEST(LoadState, MoreParametersAreRefusedFewerStartAfresh) {
  Tensor<double> a(kStart, true), b(kStart, true);
  optim::Adam<double> both({{"a", a}, {"b", b}});
  set_quadratic_grad(a);
  set_quadratic_grad(b);
  both.step();
  Tensor<double> c(kStart, true);
  optim::Adam<double> one({{"a", c}});
  EXPECT_TRUE(throws_with<ValueError>([&] { one.load_state(both.state()); }, {"Adam::load_state: 'b.", "names no parameter"}));
  optim::Adam<double> three({{"a", a}, {"b", b}, {"c", c}});
  three.load_state(both.state());
  EXPECT_EQ(three.state(), both.state());
}

TEST(LoadState, LoadingTwiceReplacesTheWholeState) {
  SteppedAdam run;
  Tensor<double> w(kStart, true);
  optim::Adam<double> adam({{"w", w}});
  adam.load_state(run.adam.state());
  adam.load_state({});
  EXPECT_TRUE(adam.state().empty());
}

TEST(LoadState, ZeroStepIsRefused) {
  Tensor<double> w(kStart, true);
  optim::SGD<double> sgd({{"w", w}});
  EXPECT_TRUE(throws_with<ValueError>([&] { sgd.load_state({{"w.step", xt::xarray<double>(0.0)}}); },
                                      {"SGD::load_state: 'w.step' must be a whole number >= 1", "got 0"}));
}

TEST(AddParamGroup, AddedGroupIsUpdatedOnceWithItsOwnRate) {
  Tensor<double> a(kStart, true), b(kStart, true);
  optim::SGD<double> sgd({{"a", a}}, {.lr = 0.1});
  sgd.add_param_group({{{"b", b}}, 0.5, 0.0});
  set_quadratic_grad(a);
  set_quadratic_grad(b);
  sgd.step();
  EXPECT_EQ(b.value(), xt::xarray<double>(kStart - 0.5 * kCurvature * kStart));
  EXPECT_EQ(sgd.param_groups().size(), 2u);
}

TEST(AddParamGroup, FollowsTheConstructorsRules) {
  Tensor<double> w(kStart, true);
  optim::Adam<double> adam({{"w", w}});
  const auto refused = [&](optim::ParamGroup<double> group, std::initializer_list<std::string_view> fragments) {
    const auto result = throws_with<ValueError>([&] { adam.add_param_group(group); }, fragments);
    EXPECT_EQ(adam.param_groups().size(), 1u);
    return result;
  };
  // One tensor under a second name would be updated twice per step.
  EXPECT_TRUE(refused({{{"w_again", w}}, 0.1, 0.0}, {"Adam: parameters 'w' (group 0) and 'w_again' (group 1)", "one shared tensor"}));
  // A new tensor under a held name, of another shape, would overrun the name's state buffers.
  EXPECT_TRUE(refused({{{"w", Tensor<double>(xt::zeros<double>({9}), true)}}, 0.1, 0.0}, {"Adam: parameter 'w' appears twice"}));
  EXPECT_TRUE(refused({{{"bias", Tensor<double>()}}, 0.1, 0.0}, {"Adam: parameter 'bias' (group 1) is undefined"}));
  EXPECT_TRUE(refused({{{"v", Tensor<double>(kStart, true)}}, -1.0, 0.0}, {"Adam: group 1 lr must be finite and >= 0, got -1"}));
}

// param_groups() changes rates, not parameters: adding goes through add_param_group's checks.
template <class Groups>
concept ParametersCanBeAddedThrough = requires(Groups groups, optim::ParamGroup<double> group) {
  groups.push_back(group);
} || requires(Groups groups, Tensor<double> t) { groups[0].params.push_back({"t", t}); };
static_assert(!ParametersCanBeAddedThrough<decltype(std::declval<optim::Adam<double>&>().param_groups())>);

TEST(AddParamGroup, AfterLoadStateTheNewParameterStartsAfresh) {
  SteppedAdam run, resumed;
  resumed.adam.load_state(run.adam.state());
  Tensor<double> v(kStart, true);
  resumed.adam.add_param_group({{{"v", v}}, 0.05, 0.0});
  set_quadratic_grad(v);
  resumed.adam.step();
  const SteppedAdam fresh(1);
  EXPECT_EQ(v.value(), fresh.w.value());
  EXPECT_EQ(resumed.adam.state().at("v.step")(), 1.0);
}

TEST(Optimizer, ValueGivenAnotherShapeAfterItsFirstStepIsRefused) {
  SteppedAdam run;
  run.w.mutable_value() = xt::ones<double>({9});
  run.w.node()->grad = xt::ones<double>({9});
  const auto before = run.adam.state();
  EXPECT_TRUE(throws_with<ShapeError>([&] { run.adam.step(); },
                                      {"Adam::step: parameter 'w' has shape [9] but its state buffer 'exp_avg' has [4]"}));
  EXPECT_EQ(run.adam.state(), before);
  run.w.node()->grad = xt::ones<double>({4});
  EXPECT_TRUE(throws_with<ShapeError>([&] { run.adam.step(); }, {"Adam::step: parameter 'w' has shape [9] but its gradient has [4]"}));
}

TEST(Optimizer, ZeroSizeParameterStepsAndRoundTrips) {
  Tensor<double> empty(xt::zeros<double>({3, 0}), true), w(kStart, true);
  optim::AdamW<double> adam({{"empty", empty}, {"w", w}}, {.amsgrad = true});
  empty.node()->grad = xt::zeros<double>({3, 0});
  set_quadratic_grad(w);
  adam.step();
  EXPECT_EQ(adam.state().at("empty.exp_avg").shape(), (std::vector<std::size_t>{3, 0}));
  Tensor<double> empty2(xt::zeros<double>({3, 0}), true), w2(w.value(), true);
  optim::AdamW<double> resumed({{"empty", empty2}, {"w", w2}}, {.amsgrad = true});
  resumed.load_state(adam.state());
  EXPECT_EQ(resumed.state(), adam.state());
}

TEST(Optimizer, TiedWeightTakesOneAdamStepWithTheSummedGradient) {
  Generator gen(3);
  testing::TiedLm<double> lm(5, 3, gen);
  const IndexArray tokens = {0, 3, 4, 3}, targets = {3, 4, 0, 1};
  const xt::xarray<double> start = lm.embed->weight().value();
  const xt::xarray<double> g = testing::untied_gradient_sum(lm, tokens, targets);
  const double lr = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  optim::Adam<double> adam(lm.named_parameters(), {.lr = lr, .betas = {beta1, beta2}, .eps = eps});
  {
    GradientTape tape;
    tape.backward(cross_entropy(lm.forward(tokens), targets));
  }
  adam.step();
  // Adam's first step by hand: m_hat = g, v_hat = g^2 (bias-corrected), once.
  const xt::xarray<double> m_hat = (1 - beta1) * g / (1 - beta1), v_hat = (1 - beta2) * g * g / (1 - beta2);
  const xt::xarray<double> expected = start - lr * m_hat / (xt::sqrt(v_hat) + eps);
  EXPECT_LT(testing::max_abs_diff(lm.embed->weight().value(), expected), 1e-12);
  EXPECT_EQ(adam.state().count("generator.weight.step"), 0u);
}

TEST(Optimizer, OneTensorUnderTwoNamesIsRejectedInAGroupAndAcrossGroups) {
  Tensor<double> w(kStart, true);
  EXPECT_TRUE(throws_with<ValueError>([&] { optim::Adam<double>({{"embed.weight", w}, {"generator.weight", w}}); },
                                      {"Adam", "'embed.weight' (group 0) and 'generator.weight' (group 0)",
                                       "one shared tensor"}));
  using Groups = std::vector<optim::ParamGroup<double>>;
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { optim::SGD<double>(Groups{{{{"a", w}}, 0.1, 0.0}, {{{"b", w}}, 0.2, 0.0}}); },
      {"SGD", "'a' (group 0) and 'b' (group 1)", "one shared tensor"}));
}

TEST(Optimizer, BadOptionsAreRejected) {
  Tensor<double> w(kStart, true);
  EXPECT_TRUE(throws_with<ValueError>([&] { optim::Adam<double>({{"w", w}}, {.betas = {1.0, 0.9}}); }, {"Adam", "betas"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { optim::Adam<double>({{"w", w}, {"w", w}}); }, {"'w'", "twice"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { optim::SGD<double>({{"w", w}}, {.nesterov = true}); }, {"SGD", "nesterov"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { optim::SGD<double>({{"w", w}}, {.lr = -1.0}); }, {"SGD", "lr", "-1"}));
}

TEST(Schedule, NoamValuesAtChosenSteps) {
  const auto rate = optim::noam(512, 1.0, 4000);
  EXPECT_DOUBLE_EQ(rate(0), 1.746928107421711e-07);  // step 0 is taken as 1
  EXPECT_DOUBLE_EQ(rate(1), 1.746928107421711e-07);
  EXPECT_DOUBLE_EQ(rate(4000), 0.0006987712429686843);  // the peak, at the end of warm-up
  EXPECT_DOUBLE_EQ(optim::noam(512, 2.0, 4000)(10000), 0.0008838834764831845);
  EXPECT_LT(rate(3999), rate(4000));
  EXPECT_LT(rate(4001), rate(4000));
}

TEST(Schedule, SchedulerSetsGroupRatesLikeLambdaLR) {
  Tensor<double> w(kStart, true);
  optim::Adam<double> adam({{"w", w}}, {.lr = 2.0});
  optim::LRScheduler<double> scheduler(adam, optim::step_decay(2, 0.5));
  EXPECT_DOUBLE_EQ(scheduler.last_lr(), 2.0);
  EXPECT_EQ(scheduler.last_step(), 0u);
  scheduler.step();
  EXPECT_DOUBLE_EQ(scheduler.last_lr(), 2.0);
  scheduler.step();
  EXPECT_DOUBLE_EQ(scheduler.last_lr(), 1.0);
  EXPECT_EQ(scheduler.last_step(), 2u);
  const auto cos = optim::cosine(10, 0.1);
  EXPECT_DOUBLE_EQ(cos(0), 1.0);
  EXPECT_DOUBLE_EQ(cos(5), 0.55);
  EXPECT_DOUBLE_EQ(cos(10), 0.1);
  EXPECT_DOUBLE_EQ(cos(20), 0.1);
}

TEST(Schedule, GroupAddedLaterIsScheduledFromItsOwnRate) {
  Tensor<double> a(kStart, true), b(kStart, true);
  optim::SGD<double> sgd({{"a", a}}, {.lr = 2.0});
  optim::LRScheduler<double> scheduler(sgd, optim::step_decay(1, 0.5));
  sgd.add_param_group({{{"b", b}}, 0.4, 0.0});
  scheduler.step();
  EXPECT_DOUBLE_EQ(scheduler.last_lr(0), 1.0);
  EXPECT_DOUBLE_EQ(scheduler.last_lr(1), 0.2);
}

TEST(ClipGradNorm, ScalesAllGradientsToTheMaximumNorm) {
  Tensor<double> a(xt::xarray<double>{0.0}, true), b(xt::xarray<double>{0.0, 0.0}, true), none(xt::xarray<double>{1.0}, true);
  a.node()->grad = xt::xarray<double>{3.0};
  b.node()->grad = xt::xarray<double>{0.0, 4.0};
  EXPECT_DOUBLE_EQ(optim::clip_grad_norm<double>({a, b, none}, 1.0), 5.0);
  EXPECT_NEAR(a.grad()(0), 3.0 / (5.0 + 1e-6), 1e-15);
  EXPECT_NEAR(b.grad()(1), 4.0 / (5.0 + 1e-6), 1e-15);
  EXPECT_DOUBLE_EQ(optim::clip_grad_norm<double>({a, b}, 10.0), std::sqrt(a.grad()(0) * a.grad()(0) + b.grad()(1) * b.grad()(1)));
  EXPECT_NEAR(a.grad()(0), 3.0 / (5.0 + 1e-6), 1e-15);  // below the maximum: unchanged
  EXPECT_DOUBLE_EQ(optim::clip_grad_norm<double>({a, b}, 10.0, INFINITY), b.grad()(1));
  EXPECT_TRUE(throws_with<ValueError>([&] { optim::clip_grad_norm<double>({a}, 1.0, 1.0); }, {"clip_grad_norm", "norm_type"}));
}

}  // namespace
}  // namespace tapegrad
