#include "bench/copy_task_sizes.h"

#include "autograd/base/errors.h"

namespace tapegrad::bench {

copy_task::Config copy_task_config(const std::string& size) {
  copy_task::Config config;
  config.batches_per_epoch = 1;
  config.layers = 2;
  config.dropout = 0.0;
  if (size == "tiny") {
    config.d_model = 64;
    config.d_ff = 256;
    config.heads = 4;
    config.batch = 32;
  } else if (size == "paper") {
    config.d_model = 512;
    config.d_ff = 2048;
    config.heads = 8;
    config.batch = 80;
  } else {
    throw ValueError("tapegrad_bench: unknown copy-task size \"" + size + "\" (tiny or paper)");
  }
  return config;
}

}  // namespace tapegrad::bench
