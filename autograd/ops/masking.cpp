#include "autograd/ops/masking.h"

// Implemented in the next commit.
