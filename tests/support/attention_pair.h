#pragma once
// One attention module in a cross-attention call, queries from one input, keys and values from
// another, with a metric linear in the output: m = sum(out * w). Patching a q or k slice changes
// only A; the metric is linear in A, V, z and each head's result. With inputs scaled up (scale 30)
// the softmax saturates. What the patching tests (test_attribution_patching.cpp,
// test_subset_diagnostic.cpp) patch between a clean and a corrupted call.
#include <cstdint>

#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "nn/transformer/multi_head_attention.h"
#include "study/run_with_cache.h"

namespace tapegrad::testing {

inline Tensor<double> uniform_attention_input(const Shape& shape, std::uint64_t seed, double scale = 1.0) {
  Generator gen(seed);
  return (Tensor<double>::uniform(shape, gen) * 2.0 - 1.0) * scale;
}

struct AttentionPair {
  Generator gen{43};
  nn::transformer::MultiHeadAttention<double> mha{8, 4, gen};
  Tensor<double> weights = uniform_attention_input({2, 3, 8}, 3), squared_weights = uniform_attention_input({2, 3, 8}, 9);
  Tensor<double> clean_q, clean_kv, corrupted_q, corrupted_kv;

  explicit AttentionPair(double scale)
      : clean_q(uniform_attention_input({2, 3, 8}, 1, scale)),
        clean_kv(uniform_attention_input({2, 5, 8}, 4, scale)),
        corrupted_q(uniform_attention_input({2, 3, 8}, 2, scale)),
        corrupted_kv(uniform_attention_input({2, 5, 8}, 5, scale)) {}

  Tensor<double> output(const Tensor<double>& q, const Tensor<double>& kv) { return mha(q, kv, kv); }
  Tensor<double> linear_metric(const Tensor<double>& q, const Tensor<double>& kv) { return sum(output(q, kv) * weights); }
  study::RunLoss<double> clean() {
    return [this] { return linear_metric(clean_q, clean_kv); };
  }
  study::RunLoss<double> corrupted() {
    return [this] { return linear_metric(corrupted_q, corrupted_kv); };
  }
  // m = sum(out * w) + sum(out^2 * u): quadratic in z, v and each head's result (out is linear in them).
  study::RunLoss<double> quadratic(const Tensor<double>& q, const Tensor<double>& kv) {
    return [this, q, kv] {
      const Tensor<double> out = output(q, kv);
      return sum(out * weights) + sum(out * out * squared_weights);
    };
  }
};

}  // namespace tapegrad::testing
