#include "autograd/ops/linalg.h"

// Implemented in the next commit.
