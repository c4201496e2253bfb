// tapegrad_threads_bench: what the second thread is worth, measured in one process, in turns.
//
//   tapegrad_threads_bench [--rounds=N] [--turn-ms=M] [--filter=TEXT]
//
// Each workload runs under four settings: 1 thread; 2 threads with every partition spread over
// TBB (SpreadPolicy::kAlwaysSpread, the rule before issue 40); 2 threads with nothing spread; 2
// threads with the measured rule (the default, autograd/base/spread.h). The settings take turns of about M ms (default 300; at
// least one iteration), round after round, in an order that rotates, so that the host's load, which
// on a shared VM moves the second vCPU's worth from one minute to the next, falls on all four
// alike. Separate programs a minute apart measured the same rows 2x apart on such a host.
//
// Prints, per workload, the median over rounds of each setting's time per iteration, and the
// median over rounds of each round's ratios: that round's 2-thread time over its 1-thread time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/base/spread.h"
#include "autograd/kernels/parallel.h"
#include "autograd/ops/all.h"
#include "bench/bench_util.h"
#include "nn/transformer/transformer.h"
#include "optim/adam.h"

namespace tapegrad::bench {
namespace {

struct Setting {
  const char* name;
  std::size_t threads;
  SpreadPolicy policy;
};

constexpr Setting kSettings[] = {{"1 thread", 1, SpreadPolicy::kMeasured},
                                 {"2 always", 2, SpreadPolicy::kAlwaysSpread},
                                 {"2 never", 2, SpreadPolicy::kNeverSpread},
                                 {"2 measured", 2, SpreadPolicy::kMeasured}};
constexpr std::size_t kSettingCount = std::size(kSettings);

struct Workload {
  std::string name;
  std::function<void()> iteration;
};

// forward_backward_once of f (bench_util.h), as a workload's iteration.
template <class Forward>
std::function<void()> forward_backward(std::vector<Tensor<float>> inputs, Forward f) {
  const xt::xarray<float> seed = output_seed(f);
  return [inputs, f, seed]() mutable { forward_backward_once(inputs, seed, f); };
}

std::function<void()> training_step(const std::string& size, MatmulPrecision precision) {
  copy_task::Config config = copy_task_config(size);
  config.matmul_precision = precision;
  auto trainer = std::make_shared<copy_task::Trainer>(config);
  trainer->run_epoch();  // the first step also allocates Adam's buffers
  return [trainer] { trainer->run_epoch(); };
}

std::vector<Workload> workloads(std::string_view filter) {
  std::vector<std::pair<std::string, std::function<std::function<void()>()>>> makers = {
      {"train_step/tiny", [] { return training_step("tiny", MatmulPrecision::kFloat32); }},
      {"train_step/tiny_bf16", [] { return training_step("tiny", MatmulPrecision::kBfloat16); }},
      {"train_step/paper", [] { return training_step("paper", MatmulPrecision::kFloat32); }},
      {"relu/4096x512", [] {
         const Tensor<float> x = random_tensor({4096, 512}, 1);
         return forward_backward({x}, [x] { return relu(x); });
       }},
      {"softmax/4096x512", [] {
         const Tensor<float> x = random_tensor({4096, 512}, 1);
         return forward_backward({x}, [x] { return softmax(x, -1); });
       }},
      {"layer_norm/10x10x80x8", [] {
         const Tensor<float> x = random_tensor({10, 10, 80, 8}, 1), w = random_tensor({8}, 3), b = random_tensor({8}, 4);
         return forward_backward({x}, [x, w, b] { return layer_norm(x, {8}, w, b, 1e-5); });
       }},
      {"masked_fill/10x10x80x8", [] {
         const Tensor<float> x = random_tensor({10, 10, 80, 8}, 1);
         Mask mask = Mask::from_shape({10, 10, 80, 8});
         for (std::size_t i = 0; i < mask.size(); ++i) mask.flat(i) = i % 3 == 0;
         return forward_backward({x}, [x, mask] { return masked_fill(x, mask, -1e9f); });
       }},
      {"dropout/4096x512", [] {
         const Tensor<float> x = random_tensor({4096, 512}, 1);
         auto gen = std::make_shared<Generator>(5);
         return forward_backward({x}, [x, gen] { return dropout(x, 0.1, true, *gen); });
       }},
      {"adam_step/paper", [] {
         Generator gen(1);
         auto model = std::make_shared<nn::transformer::Transformer<float>>(11, 11, 10, 0, 512, 2, 2048, 8, 0.1,
                                                                             1e-5, gen);
         std::size_t seed = 3;
         for (const Tensor<float>& p : model->parameters()) p.node()->grad = random_tensor(p.shape(), seed++, false).value();
         auto adam = std::make_shared<optim::Adam<float>>(model->named_parameters(),
                                                          optim::AdamOptions{.lr = 1e-4, .betas = {0.9, 0.98}, .eps = 1e-9});
         adam->step();  // the first step allocates the moments
         return std::function<void()>([model, adam] { adam->step(); });
       }},
      {"matmul/800x512x2048", [] {
         const Tensor<float> a = random_tensor({800, 512}, 1), b = random_tensor({512, 2048}, 2);
         return forward_backward({a, b}, [a, b] { return matmul(a, b); });
       }},
      {"einsum/ibhd,jbhd->ijbh/s128", [] {
         const Tensor<float> q = random_tensor({128, 80, 8, 64}, 1), k = random_tensor({128, 80, 8, 64}, 2);
         return forward_backward({q, k}, [q, k] { return einsum("ibhd,jbhd->ijbh", q, k); });
       }},
  };
  std::vector<Workload> chosen;
  for (auto& [name, make] : makers)
    if (name.find(filter) != std::string::npos) chosen.push_back({name, make()});
  return chosen;
}

void use(const Setting& s) {
  set_num_threads(s.threads);
  set_spread_policy(s.policy);
}

// Seconds per iteration over one turn of about turn_ms.
double turn(const Workload& w, double turn_ms) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::size_t iterations = 0;
  double elapsed_ms = 0;
  do {
    w.iteration();
    ++iterations;
    elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  } while (elapsed_ms < turn_ms);
  return elapsed_ms / 1e3 / static_cast<double>(iterations);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace
}  // namespace tapegrad::bench

int main(int argc, char** argv) {
  using namespace tapegrad::bench;
  std::size_t rounds = 9;
  double turn_ms = 300;
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    try {
      if (arg.starts_with("--rounds=")) {
        rounds = std::stoul(std::string(arg.substr(9)));
      } else if (arg.starts_with("--turn-ms=")) {
        turn_ms = std::stod(std::string(arg.substr(10)));
      } else if (arg.starts_with("--filter=")) {
        filter = arg.substr(9);
      } else {
        throw std::invalid_argument(std::string(arg));
      }
    } catch (const std::exception&) {
      std::fprintf(stderr, "usage: tapegrad_threads_bench [--rounds=N] [--turn-ms=M] [--filter=TEXT] (bad: %s)\n",
                   argv[i]);
      return 2;
    }
  }
  std::printf("%-28s %10s %10s %10s %10s %9s %9s %9s\n", "workload (ms an iteration)", kSettings[0].name,
              kSettings[1].name, kSettings[2].name, kSettings[3].name, "always/1", "never/1", "measured/1");
  for (const Workload& w : workloads(filter)) {
    for (const Setting& s : kSettings) {  // warm-up: each setting's trials, caches and pages
      use(s);
      turn(w, turn_ms);
    }
    std::vector<double> times[kSettingCount], ratios[kSettingCount];
    for (std::size_t r = 0; r < rounds; ++r) {
      double round_time[kSettingCount];
      for (std::size_t i = 0; i < kSettingCount; ++i) {
        const std::size_t s = (r + i) % kSettingCount;
        use(kSettings[s]);
        round_time[s] = turn(w, turn_ms);
        times[s].push_back(round_time[s]);
      }
      for (std::size_t s = 0; s < kSettingCount; ++s) ratios[s].push_back(round_time[s] / round_time[0]);
    }
    std::printf("%-28s %10.3f %10.3f %10.3f %10.3f %9.2f %9.2f %9.2f\n", w.name.c_str(), median(times[0]) * 1e3,
                median(times[1]) * 1e3, median(times[2]) * 1e3, median(times[3]) * 1e3, median(ratios[1]),
                median(ratios[2]), median(ratios[3]));
    std::fflush(stdout);
  }
  tapegrad::set_spread_policy(tapegrad::SpreadPolicy::kMeasured);
  tapegrad::set_num_threads(0);
  return 0;
}
