// Op-level workloads: einsum / matmul against raw batched sgemm on the same [M,K]x[K,N] shapes,
// the row kernels (softmax, log_softmax, layer_norm, masked_fill) and cross_entropy.
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "autograd/kernels/gemm/blas.h"
#include "autograd/ops/all.h"
#include "bench/bench_util.h"

namespace tapegrad::bench {

namespace {

// An einsum (or matmul, when subscripts is empty) whose two-operand contraction is one batched
// GEMM C_b[m,n] = A_b[m,k] B_b[k,n]; the gemm/ rows time that GEMM on contiguous operands.
struct ProductCase {
  std::string label;       // workload name after "einsum/" or "matmul/" (and after "gemm/")
  std::string subscripts;  // empty: matmul
  Shape a, b;
  std::size_t batch, m, k, n;
};

const std::vector<ProductCase>& product_cases() {
  static const std::vector<ProductCase> cases = {
      // labml.ai's attention at the copy-task sizes: seq 10, batch 80, 8 heads, d_k 64.
      {"ibhd,jbhd->ijbh/s10", "ibhd,jbhd->ijbh", {10, 80, 8, 64}, {10, 80, 8, 64}, 640, 10, 64, 10},
      {"ijbh,jbhd->ibhd/s10", "ijbh,jbhd->ibhd", {10, 10, 80, 8}, {10, 80, 8, 64}, 640, 10, 10, 64},
      {"ibhd,jbhd->ijbh/s128", "ibhd,jbhd->ijbh", {128, 80, 8, 64}, {128, 80, 8, 64}, 640, 128, 64, 128},
      {"ijbh,jbhd->ibhd/s128", "ijbh,jbhd->ibhd", {128, 128, 80, 8}, {128, 80, 8, 64}, 640, 128, 128, 64},
      // the reference Transformer's per-head projection of q repeated over heads: [h, batch, seq, d_model] x [h, d_model, d_k].
      {"hijk,hkl->hijl", "hijk,hkl->hijl", {8, 80, 10, 512}, {8, 512, 64}, 8, 800, 512, 64},
      // The same projection as nn/transformer runs it, without the repeat: one [800,512]x[512,512] GEMM.
      {"ijk,hkl->hijl", "ijk,hkl->hijl", {80, 10, 512}, {8, 512, 64}, 1, 800, 512, 512},
      // Batch-first attention at seq 128: 64 (batch x heads) products [128,64]x[64,128].
      {"bij,bjk->bik", "bij,bjk->bik", {64, 128, 64}, {64, 64, 128}, 64, 128, 64, 128},
      // The paper model's first FFN Linear over a copy-task batch (80 x 10 tokens).
      {"800x512x2048", "", {800, 512}, {512, 2048}, 1, 800, 512, 2048},
  };
  return cases;
}

double gemm_flops(const ProductCase& c) {
  return 2.0 * static_cast<double>(c.batch) * static_cast<double>(c.m) * static_cast<double>(c.n) *
         static_cast<double>(c.k);
}

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  const xt::xarray<float> values = random_tensor({n}, seed, false).value();
  return {values.begin(), values.end()};
}

void register_product(const ProductCase& c) {
  const std::string kind = c.subscripts.empty() ? "matmul/" : "einsum/";
  const auto product = [c](const Tensor<float>& a, const Tensor<float>& b) {
    return c.subscripts.empty() ? matmul(a, b) : einsum(c.subscripts, a, b);
  };
  add_workload(kind + c.label + "/fwd", [c, product](benchmark::State& state) {
    const Tensor<float> a = random_tensor(c.a, 1), b = random_tensor(c.b, 2);
    time_forward(state, [&] { return product(a, b); });
    report_flops(state, gemm_flops(c));
  });
  add_workload(kind + c.label + "/fwd_bwd", [c, product](benchmark::State& state) {
    const Tensor<float> a = random_tensor(c.a, 1), b = random_tensor(c.b, 2);
    time_forward_backward(state, {a, b}, [&] { return product(a, b); });
    report_flops(state, 3 * gemm_flops(c));  // C = AB, dA = G B^T, dB = A^T G
  });

  // The same products straight through kernels::gemm_batched on contiguous [batch, m, k] x
  // [batch, k, n] buffers: the reference an einsum's throughput is held to.
  struct Buffers {
    std::vector<float> a, b, c, g, da, db;
  };
  const auto buffers = [c] {
    return Buffers{random_values(c.batch * c.m * c.k, 1), random_values(c.batch * c.k * c.n, 2),
                   std::vector<float>(c.batch * c.m * c.n), random_values(c.batch * c.m * c.n, 3),
                   std::vector<float>(c.batch * c.m * c.k),
                   std::vector<float>(c.batch * c.k * c.n)};
  };
  const auto forward = [c](Buffers& x) {
    kernels::gemm_batched<float>(c.batch, false, false, c.m, c.n, c.k, 1.0f, x.a.data(), c.m * c.k, c.k, x.b.data(),
                                 c.k * c.n, c.n, 0.0f, x.c.data(), c.m * c.n, c.n);
  };
  add_workload("gemm/" + c.label + "/fwd", [c, buffers, forward](benchmark::State& state) {
    Buffers x = buffers();
    for (auto _ : state) {
      forward(x);
      benchmark::DoNotOptimize(x.c.data());
    }
    report_flops(state, gemm_flops(c));
  });
  add_workload("gemm/" + c.label + "/fwd_bwd", [c, buffers, forward](benchmark::State& state) {
    Buffers x = buffers();
    for (auto _ : state) {
      forward(x);
      // dA[m,k] = G[m,n] B^T, dB[k,n] = A^T G[m,n]
      kernels::gemm_batched<float>(c.batch, false, true, c.m, c.k, c.n, 1.0f, x.g.data(), c.m * c.n, c.n, x.b.data(),
                                   c.k * c.n, c.n, 0.0f, x.da.data(), c.m * c.k, c.k);
      kernels::gemm_batched<float>(c.batch, true, false, c.k, c.n, c.m, 1.0f, x.a.data(), c.m * c.k, c.k, x.g.data(),
                                   c.m * c.n, c.n, 0.0f, x.db.data(), c.k * c.n, c.n);
      benchmark::DoNotOptimize(x.db.data());
    }
    report_flops(state, 3 * gemm_flops(c));
  });
}

// A [rows, cols] and an attention-shaped [seq_q, seq_k, batch, heads] tensor per row op.
const Shape kRows = {4096, 512};
const Shape kAttention = {10, 10, 80, 8};

std::string shape_name(const Shape& shape) {
  std::string out;
  for (std::size_t d : shape) {
    if (!out.empty()) out += 'x';
    out += std::to_string(d);
  }
  return out;
}

std::size_t numel(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

// Registers name/shape timing forward+backward of op(x) for x of that shape.
template <class Op>
void register_row_op(const std::string& name, const Shape& shape, Op op) {
  add_workload(name + "/" + shape_name(shape), [shape, op](benchmark::State& state) {
    const Tensor<float> x = random_tensor(shape, 1);
    time_forward_backward(state, {x}, [&] { return op(x); });
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * numel(shape)));
  });
}

// Each element true (fill) with probability 0.3.
Mask random_mask(const Shape& shape) {
  Generator gen(7);
  Mask mask = Mask::from_shape(shape);
  for (auto& m : mask) m = gen.randint(0, 10) < 3;
  return mask;
}

void register_row_ops() {
  // softmax over the rows' last axis; labml's attention normalises over the key axis (1).
  register_row_op("softmax", kRows, [](const Tensor<float>& x) { return softmax(x, -1); });
  register_row_op("softmax", kAttention, [](const Tensor<float>& x) { return softmax(x, 1); });
  register_row_op("log_softmax", kRows, [](const Tensor<float>& x) { return log_softmax(x, -1); });
  register_row_op("log_softmax", kAttention, [](const Tensor<float>& x) { return log_softmax(x, 1); });
  // The fused scale, mask and softmax of the tiny training step's decoder self-attention: [batch,
  // heads, 10, 10] scores under a look-ahead mask.
  Mask causal = Mask::from_shape({10, 10});
  for (std::size_t q = 0; q < 10; ++q)
    for (std::size_t k = 0; k < 10; ++k) causal(q, k) = k <= q;
  register_row_op("attention_softmax", {32, 4, 10, 10}, [may_attend = AttendMask(causal)](const Tensor<float>& x) {
    return attention_softmax(x, may_attend, 0.25f);
  });
  for (const Shape& shape : {kRows, kAttention}) {
    const Shape last = {shape.back()};
    const Tensor<float> weight = random_tensor(last, 3), bias = random_tensor(last, 4);
    register_row_op("layer_norm", shape, [last, weight, bias](const Tensor<float>& x) {
      return layer_norm(x, last, weight, bias, 1e-5);
    });
  }
  // An elementwise mask over the rows; over the attention scores, a [seq_q, seq_k, batch, 1]
  // mask broadcast over the heads, as labml's prepare_mask makes it.
  const Mask rows_mask = random_mask(kRows), attention_mask = random_mask({10, 10, 80, 1});
  const float minus_inf = -std::numeric_limits<float>::infinity();
  register_row_op("masked_fill", kRows, [rows_mask, minus_inf](const Tensor<float>& x) {
    return masked_fill(x, rows_mask, minus_inf);
  });
  register_row_op("masked_fill", kAttention, [attention_mask, minus_inf](const Tensor<float>& x) {
    return masked_fill(x, attention_mask, minus_inf);
  });
  // Training-mode dropout at the copy task's p, a new mask each iteration, as in training.
  for (const Shape& shape : {kRows, kAttention}) {
    register_row_op("dropout", shape, [gen = std::make_shared<Generator>(8)](const Tensor<float>& x) {
      return dropout(x, 0.1, true, *gen);
    });
  }
  // The feed-forward layers' activation, on the rows and on the paper model's hidden layer
  // (800 tokens by d_ff 2048); half the inputs are negative.
  for (const Shape& shape : {kRows, Shape{800, 2048}}) {
    register_row_op("relu", shape, [](const Tensor<float>& x) { return relu(x); });
  }
}

void register_cross_entropy(std::size_t rows, std::size_t classes) {
  const std::string name = "cross_entropy/" + std::to_string(rows) + "x" + std::to_string(classes);
  add_workload(name, [rows, classes](benchmark::State& state) {
    const Tensor<float> logits = random_tensor({rows, classes}, 1);
    Generator gen(5);
    IndexArray targets = IndexArray::from_shape({rows});
    for (auto& t : targets) t = gen.randint(0, static_cast<Index>(classes));
    time_forward_backward(state, {logits}, [&] { return cross_entropy(logits, targets); });
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rows * classes));
  });
}

// Per-op work alone: 16 chained adds over 4 floats, forward and backward, where the arithmetic
// is nothing and what is timed is checks, shapes, allocation, recording and the walk. Items are
// ops.
constexpr std::size_t kChainedOps = 16;
void register_op_chain() {
  add_workload("op_chain/add_x16/4", [](benchmark::State& state) {
    const Tensor<float> x = random_tensor({4}, 1), y = random_tensor({4}, 2);
    time_forward_backward(state, {x, y}, [&] {
      Tensor<float> t = x;
      for (std::size_t i = 0; i < kChainedOps; ++i) t = add(t, y);
      return t;
    });
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kChainedOps));
  });
}

}  // namespace

void register_op_benchmarks() {
  for (const ProductCase& c : product_cases()) register_product(c);
  register_row_ops();
  register_cross_entropy(800, 11);
  register_cross_entropy(4096, 1000);
  register_op_chain();
}

}  // namespace tapegrad::bench
