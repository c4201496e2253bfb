#pragma once
// A model with a shared (tied) parameter, for the sharing tests of nn, optim and checkpoints: a
// language model whose output projection is its embedding matrix, as the Transformer paper ties
// the embedding and the pre-softmax linear (PyTorch: model.generator.weight = model.embed.weight):
//   tokens [n] -> embed: E[tokens] [n, d] -> generator: x E^T [n, vocab],  E [vocab, d]
// The one tensor E is "embed.weight" and "generator.weight".
#include <memory>
#include <string>
#include <utility>

#include "autograd/ops/embedding.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/shape.h"
#include "autograd/core/tape.h"
#include "nn/embedding.h"
#include "nn/unary_module.h"

namespace tapegrad::testing {

// x [..., d] -> x W^T [..., vocab] with the weight W [vocab, d] it is given.
template <class T>
class TiedProjection : public nn::UnaryModule<T> {
 public:
  explicit TiedProjection(Tensor<T> weight) : weight_(this->register_parameter("weight", std::move(weight))) {}
  std::string type_name() const override { return "TiedProjection"; }
  Tensor<T> forward(const Tensor<T>& x) override { return matmul(x, transpose(weight_, 0, 1)); }

 private:
  Tensor<T> weight_;
};

template <class T>
class TiedLm : public nn::Module<T> {
 public:
  TiedLm(std::size_t vocab, std::size_t d, Generator& gen)
      : embed(this->register_module("embed", std::make_shared<nn::Embedding<T>>(vocab, d, gen))),
        generator(this->register_module("generator", std::make_shared<TiedProjection<T>>(embed->weight()))) {}
  std::string type_name() const override { return "TiedLm"; }
  // Logits [n, vocab] for tokens [n].
  Tensor<T> forward(const IndexArray& tokens) { return (*generator)((*embed)(tokens)); }

  std::shared_ptr<nn::Embedding<T>> embed;
  std::shared_ptr<TiedProjection<T>> generator;
};

// The untied reference: dL/dE1 + dL/dE2 of L = cross_entropy(E1[tokens] E2^T, targets) with E1 and
// E2 two separate copies of lm's E. It is what the tied E's gradient must be, and what one
// optimiser step of the tied E must use once.
template <class T>
xt::xarray<T> untied_gradient_sum(const TiedLm<T>& lm, const IndexArray& tokens, const IndexArray& targets) {
  Tensor<T> e1(lm.embed->weight().value(), true), e2(lm.embed->weight().value(), true);
  GradientTape tape;
  tape.backward(cross_entropy(matmul(embedding(e1, tokens), transpose(e2, 0, 1)), targets));
  return e1.grad() + e2.grad();
}

}  // namespace tapegrad::testing
