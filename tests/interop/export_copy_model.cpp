// Writes what tests/interop/pytorch_interop.py needs to check tapegrad against PyTorch: a float64
// copy-task Transformer checkpoint (safetensors, dotted names, Linear weights [out, in]), and one
// batch with tapegrad's log-probabilities, loss and every parameter gradient.
//   export_copy_model OUT_DIR
#include <cstdio>
#include <filesystem>

#include "autograd/ops/loss.h"
#include "autograd/ops/shape.h"
#include "autograd/core/tape.h"
#include "nn/copy_task/copy_task.h"
#include "nn/io/checkpoint.h"

using namespace tapegrad;

namespace {
xt::xarray<double> as_double(const IndexArray& a) { return xt::xarray<double>(xt::cast<double>(a)); }
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: export_copy_model OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path out = argv[1];
  constexpr std::size_t vocab = 11, seq = 10, d_model = 16, d_ff = 32, heads = 4, layers = 2;
  Generator gen(5);
  nn::transformer::Transformer<double> model(vocab, vocab, seq, copy_task::kPad, d_model, layers, d_ff, heads, 0.0,
                                             1e-5, gen);
  model.eval();
  IndexArray data = copy_task::random_sequences(6, seq, vocab, gen);
  data(2, 8) = copy_task::kPad;  // one padded position: exercises the masks and ignore_index
  data(2, 9) = copy_task::kPad;
  const copy_task::Batch batch = copy_task::make_batch(data);

  GradientTape tape;
  const auto log_probs = model.generator(model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask));
  IndexArray targets = batch.tgt_out;
  targets.reshape({targets.size()});
  const auto loss = cross_entropy(reshape(log_probs, {-1, static_cast<Index>(vocab)}), targets,
                                  {.ignore_index = copy_task::kPad});
  tape.backward(loss);

  nn::StateDict<double> expected{{"src", as_double(batch.src)},
                                 {"tgt_in", as_double(batch.tgt_in)},
                                 {"tgt_out", as_double(batch.tgt_out)},
                                 {"log_probs", log_probs.value()},
                                 {"loss", loss.value()}};
  for (const auto& [name, param] : model.named_parameters()) expected["grad." + name] = param.grad();
  nn::save_safetensors(out / "model.safetensors", model.state_dict(), {{"d_model", std::to_string(d_model)}});
  nn::save_safetensors(out / "expected.safetensors", expected,
                       {{"vocab", std::to_string(vocab)}, {"d_model", std::to_string(d_model)},
                        {"d_ff", std::to_string(d_ff)}, {"heads", std::to_string(heads)},
                        {"layers", std::to_string(layers)}, {"max_len", std::to_string(seq)}, {"pad", "0"}});
  std::printf("wrote %s and %s (loss %.12f)\n", (out / "model.safetensors").c_str(),
              (out / "expected.safetensors").c_str(), loss.item());
  return 0;
}
