#include "autograd/matmul_precision.h"

namespace tapegrad {

namespace {

thread_local MatmulPrecision current = MatmulPrecision::kFloat32;

}  // namespace

MatmulPrecision matmul_precision() { return current; }

MatmulPrecisionScope::MatmulPrecisionScope(MatmulPrecision precision) : previous_(current) { current = precision; }

MatmulPrecisionScope::~MatmulPrecisionScope() { current = previous_; }

}  // namespace tapegrad
