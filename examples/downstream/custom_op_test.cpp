// A user's own GoogleTest test of a custom op against the installed tapegrad: EXPECT_GRADCHECK
// and EXPECT_GRADGRADCHECK come with the package (autograd/testing/gradcheck_gtest.h).
#include "autograd/core/custom_op.h"
#include "autograd/ops/all.h"
#include "autograd/testing/gradcheck_gtest.h"

using namespace tapegrad;

// A user's ops live in the user's namespace, so an op of the same name added to tapegrad later
// does not make calls ambiguous.
namespace my_ops {

// log_cosh(x) = log(cosh(x)), whose derivative is tanh(x), written as a formula over ops so that
// it can be differentiated again.
template <class T>
Tensor<T> log_cosh(const Tensor<T>& x) {
  return custom_op("log_cosh", xt::xarray<T>(xt::log(xt::cosh(x.value()))),
                   [x](const Tensor<T>& grad, const Tensor<T>& /*result*/) { add_gradient(x, mul(grad, tanh(x))); },
                   x);
}

}  // namespace my_ops

TEST(LogCosh, Gradchecks) {
  Generator gen(0);
  const auto f = [](const std::vector<Tensor<double>>& x) { return my_ops::log_cosh(x[0]); };
  const std::vector<Tensor<double>> in{Tensor<double>::randn({2, 3}, gen).set_requires_grad(true)};
  EXPECT_GRADCHECK(f, in);
  EXPECT_GRADCHECK(f, in, {.fast_mode = true});
  EXPECT_GRADGRADCHECK(f, in);
  const auto f32 = [](const std::vector<Tensor<float>>& x) { return my_ops::log_cosh(x[0]); };
  EXPECT_GRADCHECK(f32, {Tensor<float>::randn({2, 3}, gen).set_requires_grad(true)});
}
