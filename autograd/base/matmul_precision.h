#pragma once
// Mixed precision for matrix products: in bf16 mode every float32 product
// (matmul, linear, einsum, and their backward) rounds its two inputs to bfloat16 (round to
// nearest even, as PyTorch's CPU autocast does; a subnormal input, 0 < |x| < 2^-126, becomes a
// zero of its sign on every path, as the CPU's bf16 instructions read it: kernels/gemm/bf16.h) and
// accumulates in float32 into a float32 result.
// Everything else stays float32: the tensors themselves (so the weights are fp32 master weights),
// the optimiser's state, reductions, softmax, layer_norm and the loss. float64 products are never
// rounded, so gradcheck is unaffected.
//
// On a CPU with AVX512_BF16 the large products run through oneDNN's bf16 matmul at about twice the
// float32 rate; the others (and every product in a build without oneDNN, or on a CPU where oneDNN
// has no bf16 kernel) compute the same rounding-then-fp32-accumulation through OpenBLAS on rounded
// copies. So the mode's results do not depend on which library computed a product, beyond the
// order of float32 additions and one rule of the AVX512_BF16 instructions oneDNN uses there
// (vdpbf16ps): a product term or partial sum below 2^-126 in magnitude is flushed to zero, where
// OpenBLAS keeps it as a float32 subnormal. Only results built from such tiny terms differ so.
//
//   tapegrad::MatmulPrecisionGuard bf16(tapegrad::MatmulPrecision::kBfloat16);
//   Tensor<float> loss = model.forward(...);   // products in bf16
//   ...
//   tape.backward(loss);                        // may be outside the scope: see below
//
// The mode is per thread, like torch.autocast: it applies to ops called on the thread that made the
// scope. An op records the mode it ran in, and its backward runs its products in that mode wherever
// backward is called, so the backward of a bf16 forward is bf16 too (as PyTorch's is).
#include "autograd/base/scoped_mode.h"

namespace tapegrad {

enum class MatmulPrecision { kFloat32, kBfloat16 };

// The mode of ops called on this thread now.
MatmulPrecision matmul_precision();

// Sets the mode of ops called on this thread from now on.
void set_matmul_precision(MatmulPrecision precision);

struct MatmulPrecisionSetting {
  using Value = MatmulPrecision;
  static Value get() { return matmul_precision(); }
  static void set(Value precision) { set_matmul_precision(precision); }
};

// While alive, ops called on this thread run their float32 products in the precision given; nests,
// and restores the mode it found when destroyed.
using MatmulPrecisionGuard = ScopedMode<MatmulPrecisionSetting>;

}  // namespace tapegrad
