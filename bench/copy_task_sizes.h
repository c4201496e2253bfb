#pragma once
// The copy-task model sizes the benchmarks train (bench/model_bench.cpp, bench/distributed_bench.cpp).
#include <string>

#include "nn/copy_task/copy_task.h"

namespace tapegrad::bench {

// The two copy-task sizes of the speed targets (seq 10, vocab 11, N = 2, dropout 0 as the
// copy_task program's default). "tiny": d_model 64, d_ff 256, 4 heads, batch 32;
// "paper": d_model 512, d_ff 2048, 8 heads, batch 80. ValueError for any other name.
copy_task::Config copy_task_config(const std::string& size);

}  // namespace tapegrad::bench
