#include "autograd/ops/normalization.h"

// Implemented in the next commit.
