#pragma once
// Start-up agreement and broadcasts: every rank must train the same model from the same values.
//
//   Context ctx(argc, argv);
//   auto model = make_model(config, gen);                  // on every rank
//   distributed::broadcast_parameters(ctx, *model);        // checks agreement, then rank 0's values
//   optim::Adam<float> opt(model->named_parameters(), ...);
//   if (resuming && ctx.rank() == 0) opt.load_state(...);  // rank 0 read the checkpoint
//   distributed::broadcast_optimizer_state(ctx, opt);      // every rank resumes from it
//
// Each call is collective: every rank of ctx calls it, with the same root (checked first: ranks
// passing different roots all throw ValueError naming the smallest and the largest, before
// anything is sent).
#include <string>
#include <utility>
#include <vector>

#include "distributed/context.h"
#include "nn/module.h"
#include "optim/optimizer.h"

namespace tapegrad::distributed {

// Checks that every rank has the same parameters: the same names, shapes and element type, in
// the same order (what bucketing and broadcasts rely on; a difference would mix up tensors or hang).
// One 64-bit hash per rank is gathered; only when they differ are the lists themselves gathered,
// and every rank throws the same ValueError, e.g.
//   check_model_agreement: rank 1 differs from rank 0 at parameter 1 of 2: rank 0 has 'weight'
//   [3,4] float64, rank 1 has 'weight' [5,4] float64 (ranks that differ from rank 0: 1)
// `function` names the caller in the message.
template <class T>
void check_model_agreement(const Context& ctx, const optim::NamedParameters<T>& parameters,
                           const std::string& function = "check_model_agreement");
template <class T>
void check_model_agreement(const Context& ctx, const nn::Module<T>& module);

// Checks agreement, then copies rank `root`'s parameter values into every other rank's (in place:
// each non-root parameter's version is bumped, as for any in-place write). ValueError for a root
// outside [0, size) or roots that differ between ranks.
template <class T>
void broadcast_parameters(const Context& ctx, nn::Module<T>& module, int root = 0);

// Replaces every other rank's optimiser state with rank `root`'s (Optimizer::state(): keys,
// shapes and values, e.g. after rank 0 loaded a checkpoint). The optimisers must have the same
// parameters (check_model_agreement first); a key naming a parameter another rank's optimiser
// does not have throws there as Optimizer::load_state does. ValueError for a root outside [0, size)
// or roots that differ between ranks.
template <class T>
void broadcast_optimizer_state(const Context& ctx, optim::Optimizer<T>& optimizer, int root = 0);

}  // namespace tapegrad::distributed
