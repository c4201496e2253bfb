#include "autograd/ops/loss.h"

// Implemented in the next commit.
