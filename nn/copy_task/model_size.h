#pragma once
// How big the copy-task model of a Config and its training are, computed from the sizes before
// anything is allocated, so that a run too large for the machine is refused with its sizes named
// instead of failing inside an allocation (std::bad_alloc names nothing) or under the OOM killer.
#include <string>

#include "nn/copy_task/copy_task.h"

namespace tapegrad::copy_task {

// The Transformer's parameter count (equal to model().num_parameters() of a Trainer). A double:
// sizes from the command line can make it exceed 2^64.
double parameter_count(const Config& config);

// Bytes of training state per the parameter count: the float value, its gradient and Adam's two
// moments.
double training_state_bytes(const Config& config);

// Bytes that one training batch's activations kept for the backward pass take at least: the
// largest ones only (FFN hidden activations and attention maps), so a run it refuses could not
// have fitted.
double activation_bytes_lower_bound(const Config& config);

// "a model of 43,243 parameters (N=2, d_model 32, d_ff 64, heads 4)"
std::string describe_model(const Config& config);
// describe_model and " on batches of 80 sequences of 10 tokens": what an out-of-memory error names.
std::string describe_run(const Config& config);

// Throws ValueError naming the model, the batch and the bytes when training_state_bytes plus
// activation_bytes_lower_bound exceed `available` (by default this machine's physical memory).
void check_fits_in_memory(const Config& config, double available);
void check_fits_in_memory(const Config& config);

}  // namespace tapegrad::copy_task
