#include "autograd/tape.h"

#include <algorithm>

#include "autograd/anomaly.h"
#include "autograd/detail/checks.h"

namespace tapegrad {

namespace {
thread_local std::vector<GradientTape*> active_tapes;
thread_local int pause_depth = 0;
}  // namespace

bool is_recording() { return !active_tapes.empty() && pause_depth == 0; }

NoGradGuard::NoGradGuard() { ++pause_depth; }
NoGradGuard::~NoGradGuard() { --pause_depth; }

GradientTape::GradientTape(bool persistent) : persistent_(persistent) { active_tapes.push_back(this); }

GradientTape::~GradientTape() {
  // Tapes normally die in reverse order of creation, but nothing requires it.
  const auto it = std::find(active_tapes.begin(), active_tapes.end(), this);
  if (it != active_tapes.end()) active_tapes.erase(it);
}

void GradientTape::record(std::shared_ptr<const Entry> entry) {
  for (GradientTape* tape : active_tapes) tape->entries_.push_back(entry);
}

bool GradientTape::records(const NodeBase& node) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const auto& e) { return e->output.get() == &node; });
}

template <class T>
void GradientTape::backward(const Tensor<T>& loss) {
  detail::require_defined(loss, "backward", "loss");
  if (loss.numel() != 1) {
    throw ShapeError("backward: the loss " + loss.describe() +
                     " has more than one element; pass a seed of its shape: backward(output, seed)");
  }
  xt::xarray<T> seed = xt::xarray<T>::from_shape(loss.value().shape());
  seed.fill(T(1));
  backward(loss, seed);
}

template <class T>
void GradientTape::backward(const Tensor<T>& output, const xt::xarray<T>& seed) {
  detail::require_defined(output, "backward", "output");
  if (used_ && !persistent_) {
    throw TapeError("backward: this tape was already used and released its entries; "
                    "make it GradientTape(/*persistent=*/true) to call backward more than once");
  }
  if (!output.requires_grad()) {
    throw TapeError("backward: output " + output.describe() +
                    " does not require a gradient (no input required one, or no tape was recording)");
  }
  if (!std::equal(seed.shape().begin(), seed.shape().end(), output.value().shape().begin(), output.value().shape().end())) {
    throw ShapeError("backward: seed of shape " + format_shape(seed.shape()) + " does not match output " + output.describe());
  }
  NodeBase& root = *output.node();
  if (!root.is_leaf && !records(root)) {
    throw TapeError("backward: output " + output.describe() + " (from " + root.op + ") was not recorded by this tape");
  }
  // Intermediates start every walk clean: a gradient retained from an earlier walk must not
  // flow back a second time.
  for (const auto& e : entries_) e->output->clear_grad();
  if (is_anomaly_enabled()) [[unlikely]] detail::check_gradient(output, seed, "the seed passed to backward");
  output.node()->accumulate_grad(xt::xarray<T>(seed));
  walk();
}

void GradientTape::walk() {
  NoGradGuard no_recording_inside_backward;
  // Entries are appended in creation order, which is a topological order: walking them newest
  // to oldest visits every output after all of its consumers.
  // Once an entry's backward has run, every consumer of its output has been visited, so the
  // output's gradient is final: it is dropped at once (unless retained), and a non-persistent
  // tape drops the entry too, freeing what its closure saved. Peak memory during backward is
  // then the forward's saved tensors plus the gradients still in flight, not all of them.
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    const Entry& e = **it;
    if (e.output->has_grad()) {
      const detail::BackwardSite site(e.op, e.where);  // names this op in anomaly reports
      try {
        e.backward();
      } catch (const TapeError& error) {  // e.g. a custom op's backward handing back a mis-shaped gradient
        throw TapeError(std::string("backward of ") + e.op + ": " + error.what());
      }
    }
    if (!e.output->retains_grad) e.output->clear_grad();
    if (!persistent_) it->reset();
  }
  used_ = true;
  if (!persistent_) entries_.clear();
}

template void GradientTape::backward<float>(const Tensor<float>&);
template void GradientTape::backward<double>(const Tensor<double>&);
template void GradientTape::backward<float>(const Tensor<float>&, const xt::xarray<float>&);
template void GradientTape::backward<double>(const Tensor<double>&, const xt::xarray<double>&);

}  // namespace tapegrad
