// Module hooks (nn/module.h) on the modules with several inputs: the three multi-head attention
// families and both scaled-dot-product attention modules, the Transformer's layers and stacks and
// the Transformer itself. What a forward hook sees and what its replacement reaches, what an
// output-gradient hook sees and what its replacement changes, order and removal, hooks of children
// running inside their parents, bad input, and the cost of a call with no hooks.
// tests/test_hooks.cpp covers the one-input modules.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "nn/containers.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/linear.h"
#include "nn/mha/multi_head_attention.h"
#include "nn/transformer/transformer.h"
#include "tests/support/allocation_counter.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

namespace tf = nn::transformer;
using Hook = nn::Module<double>::ForwardHook;
using Grads = std::vector<xt::xarray<double>>;

// One attention module called the same way as the others: out(q, k, v) is its output tensor. The
// three multi-head attention families, and the two scaled-dot-product attention modules.
struct AttentionCase {
  std::string family;
  std::shared_ptr<nn::Module<double>> module;
  std::function<Tensor<double>(const Tensor<double>&, const Tensor<double>&, const Tensor<double>&)> out;
  Shape query_shape, key_value_shape;  // cross-attention: the keys are longer than the queries
};

std::vector<AttentionCase> attention_cases(Generator& gen) {
  auto batch_first = std::make_shared<nn::mha::MultiHeadAttention<double>>(8, 2, gen, /*dropout=*/0.0);
  auto labml = std::make_shared<nn::labml::MultiHeadAttention<double>>(2, 8, gen, /*dropout_prob=*/0.0);
  auto transformer_mha = std::make_shared<tf::MultiHeadAttention<double>>(8, 2, gen);
  auto batch_first_sdpa = std::make_shared<nn::mha::ScaledDotProductAttention<double>>(gen, /*dropout=*/0.0);
  auto transformer_sdpa = std::make_shared<tf::ScaledDotProductAttention<double>>(8);
  return {
      {"nn::mha", batch_first, [batch_first](auto& q, auto& k, auto& v) { return (*batch_first)(q, k, v).output; },
       {2, 3, 8}, {2, 5, 8}},
      {"nn::labml", labml, [labml](auto& q, auto& k, auto& v) { return (*labml)(q, k, v); }, {3, 2, 8}, {5, 2, 8}},
      {"nn::transformer", transformer_mha, [transformer_mha](auto& q, auto& k, auto& v) { return (*transformer_mha)(q, k, v); }, {2, 3, 8},
       {2, 5, 8}},
      {"nn::mha sdpa", batch_first_sdpa,
       [batch_first_sdpa](auto& q, auto& k, auto& v) { return (*batch_first_sdpa)(q, k, v).output; }, {2, 3, 8},
       {2, 5, 8}},
      {"nn::transformer sdpa", transformer_sdpa, [transformer_sdpa](auto& q, auto& k, auto& v) { return (*transformer_sdpa)(q, k, v); },
       {2, 3, 8}, {2, 5, 8}},
  };
}

struct Qkv {
  Tensor<double> q, k, v;
};
Qkv qkv(const AttentionCase& c, Generator& gen) {
  const auto leaf = [&](const Shape& shape) { return Tensor<double>::randn(shape, gen, 0.0, 1.0, true); };
  return {leaf(c.query_shape), leaf(c.key_value_shape), leaf(c.key_value_shape)};
}

TEST(AttentionHook, ForwardHookSeesQueryKeyValueAndOutputAndItsReplacementIsWhatTheCallerAndTheNextModuleGet) {
  Generator gen(1);
  for (const auto& c : attention_cases(gen)) {
    SCOPED_TRACE(c.family);
    const Qkv leaves = qkv(c, gen);
    const Tensor<double> &q = leaves.q, &k = leaves.k, &v = leaves.v;
    std::vector<Shape> seen;
    std::vector<bool> same_tensors;
    const auto id = c.module->register_forward_hook([&](std::span<const Tensor<double>> inputs, const Tensor<double>& out) {
      for (const auto& in : inputs) seen.push_back(in.shape());
      seen.push_back(out.shape());
      same_tensors = {inputs[0].same_node(q), inputs[1].same_node(k), inputs[2].same_node(v)};
      return std::optional<Tensor<double>>(Tensor<double>::ones(out.shape()));
    });
    nn::Linear<double> next(8, 3, gen);
    Tensor<double> next_saw;
    next.register_forward_hook([&](const Tensor<double>& in, const Tensor<double>&) -> std::optional<Tensor<double>> {
      next_saw = in;
      return std::nullopt;
    });
    const Tensor<double> out = c.out(q, k, v);
    const Tensor<double> y = next(out);
    EXPECT_EQ(seen, (std::vector<Shape>{c.query_shape, c.key_value_shape, c.key_value_shape, c.query_shape}));
    EXPECT_EQ(same_tensors, (std::vector<bool>{true, true, true}));
    EXPECT_EQ(out.value(), xt::xarray<double>(xt::ones<double>(c.query_shape)));
    EXPECT_TRUE(next_saw.same_node(out));
    EXPECT_EQ(y.value(), next.forward(Tensor<double>::ones(c.query_shape)).value());
    c.module->remove_hook(id);
    EXPECT_GT(max_abs_diff(c.out(q, k, v).value(), out.value()), 0.1);  // removed: the real output again
  }
}

// nn::mha's AttentionOutput: the hook replaces output; attention_weights stay what forward computed.
TEST(AttentionHook, AReplacedMhaOutputKeepsForwardsAttentionWeights) {
  Generator gen(2);
  nn::mha::MultiHeadAttention<double> mha(8, 2, gen, /*dropout=*/0.0);
  const auto x = Tensor<double>::randn({2, 4, 8}, gen);
  const auto plain = mha(x, x, x);
  mha.register_forward_hook([](std::span<const Tensor<double>>, const Tensor<double>& out) {
    return std::optional<Tensor<double>>(out * 0.0);
  });
  const auto hooked = mha(x, x, x);
  EXPECT_EQ(hooked.output.value(), xt::xarray<double>(xt::zeros<double>({2, 4, 8})));
  EXPECT_EQ(hooked.attention_weights.value(), plain.attention_weights.value());
}

TEST(AttentionHook, OutputGradHookSeesTheGradientOfTheLossWithRespectToTheOutput) {
  Generator gen(3);
  for (const auto& c : attention_cases(gen)) {
    SCOPED_TRACE(c.family);
    const Qkv leaves = qkv(c, gen);
    const Tensor<double> &q = leaves.q, &k = leaves.k, &v = leaves.v;
    const auto loss_of = [](const Tensor<double>& out) { return sum(out * out * out); };  // dL/dout = 3 out^2
    xt::xarray<double> expected;
    {
      GradientTape tape;
      const auto out = c.out(q, k, v);
      expected = tape.gradient(loss_of(out), {out})[0].value();
    }
    Grads seen;
    const auto id = c.module->register_output_grad_hook([&](const xt::xarray<double>& g) {
      seen.push_back(g);
      return std::optional<xt::xarray<double>>();
    });
    {
      GradientTape tape;
      tape.backward(loss_of(c.out(q, k, v)));
    }
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_LT(max_abs_diff(seen[0], expected), 1e-12);
    EXPECT_GT(xt::amax(xt::abs(expected))(), 0.1);
    c.module->remove_hook(id);
  }
}

// dL/d(output) scaled by s through a hook scales every gradient upstream of the output (the
// module's parameters and q, k, v) by s: backward is linear in the gradient it is handed.
TEST(AttentionHook, AReplacedOutputGradientScalesTheParameterAndInputGradients) {
  Generator gen(4);
  for (const auto& c : attention_cases(gen)) {
    SCOPED_TRACE(c.family);
    const Qkv leaves = qkv(c, gen);
    const Tensor<double> &q = leaves.q, &k = leaves.k, &v = leaves.v;
    const auto gradients = [&](std::optional<double> scale) {
      c.module->zero_grad();
      for (auto t : {q, k, v}) t.zero_grad();
      std::uint64_t id = 0;
      if (scale) {
        id = c.module->register_output_grad_hook(
            [s = *scale](const xt::xarray<double>& g) { return std::optional<xt::xarray<double>>(g * s); });
      }
      {
        GradientTape tape;
        const auto out = c.out(q, k, v);
        tape.backward(sum(out * out));
      }
      if (scale) c.module->remove_hook(id);
      Grads grads;
      for (const auto& p : c.module->parameters()) grads.push_back(p.grad());
      for (const auto& t : {q, k, v}) grads.push_back(t.grad());
      return grads;
    };
    const Grads plain = gradients(std::nullopt), doubled = gradients(2.0), zeroed = gradients(0.0);
    ASSERT_EQ(doubled.size(), plain.size());
    for (std::size_t i = 0; i < plain.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_LT(max_abs_diff(doubled[i], 2.0 * plain[i]), 1e-12);
      EXPECT_EQ(max_abs_diff(zeroed[i], xt::zeros_like(plain[i])), 0.0);
    }
    EXPECT_GT(xt::amax(xt::abs(plain.back()))(), 0.1);  // there was a gradient to scale
  }
}

// ---- the Transformer's layers, stacks and the whole model -------------------------------------

constexpr std::size_t d_model = 8, seq_s = 4, seq_t = 3, batch = 2, vocab = 7;

IndexArray tokens(std::size_t seq) {
  IndexArray t = IndexArray::from_shape({batch, seq});
  for (std::size_t e = 0; e < t.size(); ++e) t.data()[e] = static_cast<Index>(1 + e % (vocab - 1));
  return t;
}

// Two forward hooks and an output-gradient hook on m, then three calls (each with a backward):
// all hooks, then without the first forward hook, then with none. Each hook runs once per call,
// in registration order, and sees input_shapes and the output's shape.
void expect_hooks_run_once_per_call_in_order_and_removable(nn::Module<double>& m,
                                                           const std::function<Tensor<double>()>& call,
                                                           const std::vector<Shape>& input_shapes,
                                                           const Shape& output_shape) {
  std::vector<int> order;
  const auto forward_hook = [&](int tag) {
    return [&order, &input_shapes, &output_shape, tag](std::span<const Tensor<double>> inputs, const Tensor<double>& out) {
      order.push_back(tag);
      std::vector<Shape> shapes;
      for (const auto& in : inputs) shapes.push_back(in.shape());
      EXPECT_EQ(shapes, input_shapes);
      EXPECT_EQ(out.shape(), output_shape);
      return std::optional<Tensor<double>>();
    };
  };
  const auto first = m.register_forward_hook(forward_hook(1));
  const auto second = m.register_forward_hook(forward_hook(2));
  const auto grad = m.register_output_grad_hook([&](const xt::xarray<double>&) {
    order.push_back(3);
    return std::optional<xt::xarray<double>>();
  });
  const auto run = [&] {
    GradientTape tape;
    tape.backward(sum(call()));
  };
  run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  m.remove_hook(first);
  run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 2, 3}));
  m.remove_hook(second);
  m.remove_hook(grad);
  run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 2, 3}));
  EXPECT_TRUE(throws_with<ValueError>([&] { m.remove_hook(first); }, {m.type_name(), "remove_hook", "no hook with id"}));
}

TEST(TransformerHook, LayerHooksRunOncePerCallInRegistrationOrderAndCanBeRemoved) {
  Generator gen(5);
  const auto src = Tensor<double>::randn({batch, seq_s, d_model}, gen);
  const auto tgt = Tensor<double>::randn({batch, seq_t, d_model}, gen);
  tf::TransformerEncoderLayer<double> encoder_layer(d_model, 16, 2, 0.1, 1e-5, gen);
  expect_hooks_run_once_per_call_in_order_and_removable(encoder_layer, [&] { return encoder_layer(src); },
                                                        {{batch, seq_s, d_model}}, {batch, seq_s, d_model});
  tf::TransformerDecoderLayer<double> decoder_layer(d_model, 16, 2, 0.1, 1e-5, gen);
  expect_hooks_run_once_per_call_in_order_and_removable(decoder_layer, [&] { return decoder_layer(tgt, src); },
                                                        {{batch, seq_t, d_model}, {batch, seq_s, d_model}},
                                                        {batch, seq_t, d_model});
}

TEST(TransformerHook, StackAndTransformerHooksRunOncePerCallInRegistrationOrderAndCanBeRemoved) {
  Generator gen(6);
  tf::Transformer<double> model(vocab, vocab, 10, 0, d_model, 2, 16, 2, 0.1, 1e-5, gen);
  const auto src = tokens(seq_s), tgt = tokens(seq_t);
  const auto memory = Tensor<double>::randn({batch, seq_s, d_model}, gen);
  // Token ids are not tensors: the encoder and the Transformer see no inputs, the decoder its src.
  expect_hooks_run_once_per_call_in_order_and_removable(model, [&] { return model(src, tgt); }, {},
                                                        {batch, seq_t, d_model});
  tf::TransformerEncoder<double> encoder(vocab, 10, 0, d_model, 2, 16, 2, 0.1, 1e-5, gen);
  expect_hooks_run_once_per_call_in_order_and_removable(encoder, [&] { return encoder(src); }, {},
                                                        {batch, seq_s, d_model});
  tf::TransformerDecoder<double> decoder(vocab, 10, 0, d_model, 2, 16, 2, 0.1, 1e-5, gen);
  expect_hooks_run_once_per_call_in_order_and_removable(decoder, [&] { return decoder(tgt, memory); },
                                                        {{batch, seq_s, d_model}}, {batch, seq_t, d_model});
}

// Every module in the tree, by dotted name ("" for the root).
void each_module(nn::Module<double>& m, const std::string& name,
                 const std::function<void(const std::string&, nn::Module<double>&)>& visit) {
  visit(name, m);
  for (const auto& [child_name, child] : m.named_children()) {
    each_module(*child, name.empty() ? child_name : name + "." + child_name, visit);
  }
}

// Parents call their children through operator(), so a hook on any module the Transformer uses
// runs when the Transformer runs, forward hooks and output-gradient hooks alike, once per use.
TEST(TransformerHook, HooksOfEveryModuleNestedInTheTransformerRunWhenItRuns) {
  Generator gen(7);
  tf::Transformer<double> model(vocab, vocab, 10, 0, d_model, 2, 16, 2, 0.1, 1e-5, gen, /*norm_first=*/true);
  std::map<std::string, int> forward_calls, grad_calls;
  std::vector<std::string> expected;  // every module but the ModuleLists and the generator
  each_module(model, "", [&](const std::string& name, nn::Module<double>& m) {
    if (m.type_name() != "ModuleList" && name.rfind("generator", 0) != 0) expected.push_back(name);
    m.register_forward_hook([&forward_calls, name](std::span<const Tensor<double>>, const Tensor<double>&) {
      ++forward_calls[name];
      return std::optional<Tensor<double>>();
    });
    m.register_output_grad_hook([&grad_calls, name](const xt::xarray<double>&) {
      ++grad_calls[name];
      return std::optional<xt::xarray<double>>();
    });
  });
  EXPECT_GT(expected.size(), 40u);  // embeddings, attention, sdpa, FFN, norms, dropouts of 2+2 layers
  {
    GradientTape tape;
    tape.backward(sum(model(tokens(seq_s), tokens(seq_t))));
  }
  std::map<std::string, int> once;
  for (const auto& name : expected) once[name] = 1;
  EXPECT_EQ(forward_calls, once);
  EXPECT_EQ(grad_calls, once);
  // forward() runs the children's hooks, not the Transformer's own.
  model.forward(tokens(seq_s), tokens(seq_t));
  EXPECT_EQ(forward_calls[""], 1);
  EXPECT_EQ(forward_calls["decoder.decoder_layers.1.src_tgt_attention"], 2);
}

// ---- a module of one's own, and the identity case ---------------------------------------------

// Returns its first input: the output-gradient hook must get a node of this module's own, not a's.
class First : public nn::Module<double> {
 public:
  std::string type_name() const override { return "First"; }
  Tensor<double> forward(const Tensor<double>& a, const Tensor<double>&) { return a; }
  Tensor<double> operator()(const Tensor<double>& a, const Tensor<double>& b) { return run_hooks(forward(a, b), a, b); }
};

TEST(ModuleHook, AnOutputThatIsOneOfTheInputsGetsARecordedCopyToHook) {
  First first;
  auto a = Tensor<double>::ones({2}, true), b = Tensor<double>::ones({2}, true);
  int calls = 0;
  first.register_output_grad_hook([&](const xt::xarray<double>& g) {
    ++calls;
    return std::optional<xt::xarray<double>>(g * 2.0);
  });
  GradientTape tape;
  const auto out = first(a, b);
  EXPECT_FALSE(out.same_node(a));
  tape.backward(sum(out) + sum(a));  // a's own use gets no hook: 2 from out, 1 from itself
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(a.grad(), xt::xarray<double>({3.0, 3.0}));
}

// A forward hook may return a tensor the module did not make, here the user's own leaf. The
// output-gradient hook then sits on a copy made for the call (PyTorch's full backward hooks do
// the same): it runs once per backward, doubling dL/dout once, and the leaf itself gains no hook,
// not from recorded calls and not from a call with no tape.
TEST(ModuleHook, AForwardHookReturningTheUsersLeafLeavesItUnhookedAndTheGradHookRunsOncePerBackward) {
  Generator gen(10);
  nn::Linear<double> linear(3, 2, gen);
  const auto x = Tensor<double>::randn({4, 3}, gen);
  auto leaf = Tensor<double>::ones({4, 2}, true);
  linear.register_forward_hook(
      [&](const Tensor<double>&, const Tensor<double>&) { return std::optional<Tensor<double>>(leaf); });
  int calls = 0;
  linear.register_output_grad_hook([&](const xt::xarray<double>& g) {
    ++calls;
    return std::optional<xt::xarray<double>>(g * 2.0);
  });
  const xt::xarray<double> ones = xt::ones<double>({4, 2});
  for (int step = 1; step <= 4; ++step) {
    SCOPED_TRACE(step);
    leaf.zero_grad();
    GradientTape tape;
    const auto out = linear(x);
    EXPECT_FALSE(out.same_node(leaf));
    EXPECT_EQ(out.value(), leaf.value());
    tape.backward(sum(out));
    EXPECT_EQ(calls, step);
    EXPECT_EQ(leaf.grad(), xt::xarray<double>(2.0 * ones));
  }
  EXPECT_TRUE(linear(x).same_node(leaf));  // nothing recorded: the leaf itself, unhooked
  calls = 0;
  leaf.zero_grad();
  GradientTape tape;
  tape.backward(sum(leaf));
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(leaf.grad(), ones);
}

// The gradient reaches a parent's output before its last child's: the parent's hook runs first.
TEST(ModuleHook, AParentReturningItsChildsOutputRunsItsOutputGradHookBeforeTheChilds) {
  Generator gen(11);
  auto child = std::make_shared<nn::Linear<double>>(3, 2, gen);
  nn::Sequential<double> parent({child});
  std::vector<std::string> order;
  const auto hook_of = [&order](std::string name) {
    return [&order, name](const xt::xarray<double>&) {
      order.push_back(name);
      return std::optional<xt::xarray<double>>();
    };
  };
  child->register_output_grad_hook(hook_of("child"));
  parent.register_output_grad_hook(hook_of("parent"));
  GradientTape tape;
  tape.backward(sum(parent(Tensor<double>::randn({4, 3}, gen))));
  EXPECT_EQ(order, (std::vector<std::string>{"parent", "child"}));
}

// Hooks that remove hooks while the forward runs change the next call, not this one.
TEST(ModuleHook, AForwardHookRemovingHooksDuringTheCallChangesTheNextCall) {
  Generator gen(12);
  nn::Linear<double> linear(3, 2, gen);
  const auto x = Tensor<double>::randn({4, 3}, gen);
  int forward_calls = 0, grad_calls = 0;
  std::uint64_t forward_id = 0, grad_id = 0;
  forward_id = linear.register_forward_hook([&](const Tensor<double>&, const Tensor<double>&) {
    ++forward_calls;
    linear.remove_hook(forward_id);
    linear.remove_hook(grad_id);
    return std::optional<Tensor<double>>();
  });
  grad_id = linear.register_output_grad_hook([&](const xt::xarray<double>&) {
    ++grad_calls;
    return std::optional<xt::xarray<double>>();
  });
  for (int step = 0; step < 2; ++step) {
    GradientTape tape;
    tape.backward(sum(linear(x)));
  }
  EXPECT_EQ(forward_calls, 1);
  EXPECT_EQ(grad_calls, 1);
}

// ---- bad input -------------------------------------------------------------------------------

TEST(ModuleHook, EmptyHooksUnknownIdsAndMisshapedReplacementsAreErrorsNamingTheModule) {
  Generator gen(8);
  tf::TransformerDecoderLayer<double> layer(d_model, 16, 2, 0.0, 1e-5, gen);
  nn::Linear<double> linear(3, 2, gen);
  EXPECT_TRUE(throws_with<ValueError>([&] { layer.register_forward_hook(Hook()); },
                                      {"TransformerDecoderLayer", "register_forward_hook", "empty hook"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { layer.register_output_grad_hook(GradHook<double>()); },
                                      {"TransformerDecoderLayer", "register_output_grad_hook", "empty hook"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { linear.register_forward_hook(nn::UnaryModule<double>::UnaryForwardHook()); },
                                      {"Linear", "register_forward_hook", "empty hook"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { layer.remove_hook(12345); },
                                      {"TransformerDecoderLayer: remove_hook: no hook with id 12345"}));
  const auto linears = linear.register_output_grad_hook([](const xt::xarray<double>&) { return std::nullopt; });
  EXPECT_TRUE(throws_with<ValueError>([&] { layer.remove_hook(linears); }, {"TransformerDecoderLayer", "no hook with id"}));

  for (const auto& c : attention_cases(gen)) {
    SCOPED_TRACE(c.family);
    const Qkv leaves = qkv(c, gen);
    const Tensor<double> &q = leaves.q, &k = leaves.k, &v = leaves.v;
    const auto id = c.module->register_forward_hook([](std::span<const Tensor<double>>, const Tensor<double>&) {
      return std::optional<Tensor<double>>(Tensor<double>::ones({1}));
    });
    EXPECT_TRUE(throws_with<ShapeError>([&] { c.out(q, k, v); },
                                        {c.module->type_name() + ": forward hook 1", "of shape [1]",
                                         "output of shape " + format_shape(c.query_shape), "must have the output's shape"}));
    c.module->remove_hook(id);
  }
  linear.register_forward_hook(
      [](const Tensor<double>&, const Tensor<double>&) { return std::optional<Tensor<double>>(Tensor<double>()); });
  EXPECT_TRUE(throws_with<ShapeError>([&] { linear(Tensor<double>::ones({4, 3})); },
                                      {"Linear: forward hook 1", "undefined", "[4,2]"}));
}

// ---- cost --------------------------------------------------------------------------------------

// With no hook registered operator() allocates exactly what forward() does: the hook step is a
// branch, not a vector of inputs.
TEST(ModuleHook, ACallWithNoHooksAllocatesNothingBeyondForward) {
  Generator gen(9);
  tf::TransformerEncoderLayer<double> layer(d_model, 16, 2, 0.0, 1e-5, gen);
  nn::labml::MultiHeadAttention<double> labml(2, d_model, gen, 0.0);
  const auto x = Tensor<double>::randn({batch, seq_s, d_model}, gen);
  const auto allocations_of = [](const auto& fn) {
    fn();  // warm up thread-local and lazily built state
    const std::size_t before = testing::allocations_on_this_thread();
    fn();
    return testing::allocations_on_this_thread() - before;
  };
  EXPECT_EQ(allocations_of([&] { layer(x); }), allocations_of([&] { layer.forward(x); }));
  EXPECT_EQ(allocations_of([&] { labml(x, x, x); }), allocations_of([&] { labml.forward(x, x, x); }));
  layer.register_forward_hook([](std::span<const Tensor<double>>, const Tensor<double>&) { return std::nullopt; });
  EXPECT_GT(allocations_of([&] { layer(x); }), allocations_of([&] { layer.forward(x); }));  // the count can tell
}

}  // namespace
}  // namespace tapegrad
