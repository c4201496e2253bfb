#pragma once
// Every op, one include.
#include "autograd/ops/activation.h"
#include "autograd/ops/attention.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/embedding.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/masking.h"
#include "autograd/ops/normalization.h"
#include "autograd/ops/pointwise.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"
#include "autograd/ops/softmax.h"
