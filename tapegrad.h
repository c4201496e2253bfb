#pragma once
// The whole public API in one include: what a training program, a gradient-check test or an
// attention study needs. Link tapegrad::tapegrad. (The GoogleTest macros are apart, in
// autograd/testing/gradcheck_gtest.h, so that a program without GoogleTest can include this;
// distributed/ is apart because it needs MPI.)

// autograd: tensors, the tape, every op, the functional transforms, custom ops, gradcheck.
#include "autograd/base/generator.h"
#include "autograd/base/matmul_precision.h"
#include "autograd/core/anomaly.h"
#include "autograd/core/custom_op.h"
#include "autograd/core/tape.h"
#include "autograd/core/tensor.h"
#include "autograd/memory/step_capture.h"
#include "autograd/ops/all.h"
#include "autograd/ops/functional.h"
#include "autograd/testing/gradcheck.h"

// nn: the modules of the three attention designs and the Transformer, init, checkpoints.
#include "nn/activation.h"
#include "nn/containers.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/functional_call.h"
#include "nn/init.h"
#include "nn/io/checkpoint.h"
#include "nn/label_smoothing.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/masks.h"
#include "nn/mha/multi_head_attention.h"
#include "nn/module.h"
#include "nn/positional_encoding.h"
#include "nn/transformer/transformer.h"

// optim: optimisers, learning-rate schedules, gradient clipping.
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "optim/sgd.h"

// study: attention capture, interventions, snapshots, exports, attribution methods.
#include "study/attention_capture.h"
#include "study/attention_export.h"
#include "study/attention_intervention.h"
#include "study/training_snapshots.h"
#include "study/attribution.h"
#include "study/run_with_cache.h"
#include "study/activation_patching.h"
#include "study/attribution_patching.h"
#include "study/batched_patching.h"
#include "study/integrated_patching.h"
#include "study/edge_patching.h"
#include "study/metrics.h"
#include "study/patching_agreement.h"
#include "study/patching_comparison.h"
#include "study/subset_diagnostic.h"
