// The README's code snippets, compiled and run, so the README stays true.
#include "autograd/custom_op.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/tape.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

TEST(Readme, UsingItSnippet) {
  Generator gen(0);
  auto w = Tensor<float>::randn({3, 4}, gen).set_requires_grad(true);
  auto x = Tensor<float>::randn({2, 3}, gen);
  GradientTape tape;
  auto loss = mean(softmax(matmul(x, w), -1) * 2.0f);
  tape.backward(loss);
  EXPECT_EQ(w.grad().shape(), w.value().shape());
}

Tensor<double> cube(const Tensor<double>& x) {
  return custom_op("cube", xt::xarray<double>(x.value() * x.value() * x.value()),
                   [x](const xt::xarray<double>& grad, const xt::xarray<double>&) {
                     add_gradient(x, xt::xarray<double>(grad * 3.0 * x.value() * x.value()));
                   }, x);
}

TEST(Readme, GradcheckYourOwnOpSnippet) {
  Generator gen(0);
  auto result = gradcheck([](const std::vector<Tensor<double>>& in) { return cube(in[0]); },
                          {Tensor<double>::randn({2, 3}, gen).set_requires_grad(true)});
  EXPECT_TRUE(result.ok) << result.message;
}

}  // namespace
}  // namespace tapegrad
