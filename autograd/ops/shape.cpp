#include "autograd/ops/shape.h"

// Implemented in the next commit.
