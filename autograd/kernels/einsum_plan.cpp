#include "autograd/kernels/einsum_plan.h"
