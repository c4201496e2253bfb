// Trains a two-layer network (Linear - tanh - Linear) to fit y = sin(3x) with Adam, using an
// installed tapegrad. Exits non-zero unless the loss falls at least tenfold.
#include <cstdio>
#include <memory>

#include "tapegrad.h"  // the whole public API

using namespace tapegrad;

class TwoLayer : public nn::Module<float> {
 public:
  explicit TwoLayer(Generator& gen)
      : fc1_(register_module("fc1", std::make_shared<nn::Linear<float>>(1, 32, gen))),
        fc2_(register_module("fc2", std::make_shared<nn::Linear<float>>(32, 1, gen))) {}
  std::string type_name() const override { return "TwoLayer"; }
  Tensor<float> forward(const Tensor<float>& x) { return (*fc2_)(tanh((*fc1_)(x))); }

 private:
  std::shared_ptr<nn::Linear<float>> fc1_, fc2_;
};

int main() {
  Generator gen(0);
  TwoLayer net(gen);
  optim::Adam<float> adam(net.named_parameters(), {.lr = 0.01});
  const auto x = Tensor<float>::uniform({256, 1}, gen, -1.0f, 1.0f);
  const Tensor<float> y(xt::xarray<float>(xt::sin(3.0f * x.value())));

  float first = 0.0f, last = 0.0f;
  for (int step = 0; step < 500; ++step) {
    GradientTape tape;
    const auto loss = mse_loss(net.forward(x), y);
    tape.backward(loss);
    adam.step();
    adam.zero_grad();
    last = loss.item();
    if (step == 0) first = last;
    if (step % 100 == 0) std::printf("step %3d  loss %.5f\n", step, last);
  }
  std::printf("loss %.5f -> %.5f\n", first, last);
  return last * 10.0f < first ? 0 : 1;
}
