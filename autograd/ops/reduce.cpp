#include "autograd/ops/reduce.h"

// Implemented in the next commit.
