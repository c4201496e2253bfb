#include "autograd/ops/softmax.h"

// Implemented in the next commit.
