#include "autograd/ops/embedding.h"

// Implemented in the next commit.
