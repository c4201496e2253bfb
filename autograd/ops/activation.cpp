#include "autograd/ops/activation.h"

// Implemented in the next commit.
