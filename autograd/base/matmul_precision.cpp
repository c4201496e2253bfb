#include "autograd/base/matmul_precision.h"

namespace tapegrad {

namespace {

thread_local MatmulPrecision current = MatmulPrecision::kFloat32;

}  // namespace

MatmulPrecision matmul_precision() { return current; }

void set_matmul_precision(MatmulPrecision precision) { current = precision; }

}  // namespace tapegrad
