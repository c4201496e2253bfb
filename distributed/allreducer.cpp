#include "distributed/allreducer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <thread>

#include "autograd/base/errors.h"
#include "distributed/mpi_type.h"
#include "distributed/parameters.h"

namespace tapegrad::distributed {

namespace {
void require_main_thread(const char* function) {
  int is_main = 0;
  MPI_Is_thread_main(&is_main);
  if (!is_main) {
    throw ValueError(std::string(function) +
                     ": called on a thread other than the one that made the Context; MPI runs at "
                     "MPI_THREAD_FUNNELED, so backward and wait() must run on that thread");
  }
}
}  // namespace

template <class T>
GradientAllreducer<T>::GradientAllreducer(const Context& ctx, optim::NamedParameters<T> parameters,
                                          const AllreducerOptions& options)
    : ctx_(ctx), parameters_(std::move(parameters)), options_(options) {
  const std::string function = "GradientAllreducer";
  if (parameters_.empty()) throw ValueError(function + ": parameters is empty; give it the model's named_parameters()");
  for (const auto& [name, param] : parameters_) {
    if (!param.defined()) throw ValueError(function + ": parameter '" + name + "' is undefined");
  }
  if (options_.bucket_bytes == 0) throw ValueError(function + ": options.bucket_bytes is 0; it must be at least 1");
  const double seconds = options_.timeout.count();
  if (!(seconds > 0) || !std::isfinite(seconds)) {
    throw ValueError(function + ": options.timeout is " + std::to_string(seconds) + " s; it must be positive and finite");
  }
  check_model_agreement(ctx_, parameters_, function);
  // Other bucket sizes on another rank would pair different buffers in one allreduce.
  const auto [smallest, largest] = min_and_max(ctx_, std::uint64_t{options_.bucket_bytes}, function);
  if (smallest != largest) {
    throw ValueError(function + ": the ranks' options.bucket_bytes differ (from " + std::to_string(smallest) + " to " +
                     std::to_string(largest) + "); every rank must cut the same buckets");
  }

  // Reverse registration order: backward finishes the last-registered parameters first.
  const std::size_t n = parameters_.size();
  bucket_of_.resize(n);
  slot_of_.resize(n);
  arrived_.assign(n, false);
  std::size_t bytes = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = n - 1 - k;
    const std::size_t param_bytes = parameters_[i].second.numel() * sizeof(T);
    if (buckets_.empty() || (bytes > 0 && bytes + param_bytes > options_.bucket_bytes)) {
      buckets_.emplace_back();
      bytes = 0;
    }
    Bucket& bucket = buckets_.back();
    bucket_of_[i] = buckets_.size() - 1;
    slot_of_[i] = bucket.params.size();
    bucket.offsets.push_back(bucket.params.empty() ? 0 : bucket.offsets.back() + parameters_[bucket.params.back()].second.numel());
    bucket.params.push_back(i);
    bytes += param_bytes;
  }
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    const std::size_t elements = bucket.offsets.back() + parameters_[bucket.params.back()].second.numel();
    bucket.buffer.assign(elements + bucket.params.size(), T(0));
    mpi_count(bucket.buffer.size(), function + ": " + describe_bucket(b));
    bucket.pending = bucket.params.size();
    bucket.index = b;
  }
  arrivals_.assign(static_cast<std::size_t>(ctx_.size()), 0);
  // Its own communicator (collective, like the checks above): the start notices of a reducer
  // destroyed before wait() stay on it instead of being counted by a later reducer as its own.
  check_mpi(MPI_Comm_dup(ctx_.comm(), &comm_), function + ": MPI_Comm_dup");
  for (std::size_t i = 0; i < n; ++i) {
    hook_ids_.push_back(parameters_[i].second.register_hook([this, i](const xt::xarray<T>& g) {
      receive(i, g);
      return std::optional<xt::xarray<T>>();
    }));
  }
}

template <class T>
GradientAllreducer<T>::~GradientAllreducer() {
  for (std::size_t i = 0; i < hook_ids_.size(); ++i) parameters_[i].second.remove_hook(hook_ids_[i]);
  try {
    complete_started();
  } catch (const std::exception& e) {
    // A failed MPI_Test: the buffers may still be written into, so the process cannot go on.
    std::fprintf(stderr, "~GradientAllreducer: rank %d: %s\n", ctx_.rank(), e.what());
    ctx_.abort(3);
  }
  int finalized = 0;  // a reducer outliving its Context: MPI is gone, and its communicators with it
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);  // unreceived notices go with it
}

template <class T>
std::vector<std::string> GradientAllreducer<T>::bucket_parameters(std::size_t i) const {
  if (i >= buckets_.size()) {
    throw ValueError("GradientAllreducer::bucket_parameters: bucket " + std::to_string(i) + " does not exist (" +
                     std::to_string(buckets_.size()) + " buckets)");
  }
  std::vector<std::string> names;
  for (const std::size_t p : buckets_[i].params) names.push_back(parameters_[p].first);
  return names;
}

template <class T>
std::string GradientAllreducer<T>::describe_bucket(std::size_t b) const {
  std::string text = "bucket " + std::to_string(b) + " of " + std::to_string(buckets_.size()) + " (";
  for (std::size_t k = 0; k < buckets_[b].params.size(); ++k) {
    const auto& [name, param] = parameters_[buckets_[b].params[k]];
    text += (k ? ", '" : "'") + name + "' " + format_shape(param.shape());
  }
  return text + ")";
}

template <class T>
void GradientAllreducer<T>::receive(std::size_t i, const xt::xarray<T>& g) {
  require_main_thread("GradientAllreducer (gradient hook)");
  const auto& [name, param] = parameters_[i];
  if (arrived_[i] || param.has_grad()) {
    throw ValueError("GradientAllreducer: parameter '" + name +
                     "' already has a gradient when backward reaches it; call zero_grad() before each backward "
                     "and wait() after it (a gradient accumulated over two walks would be overwritten unreduced)");
  }
  Bucket& bucket = buckets_[bucket_of_[i]];
  const std::size_t slot = slot_of_[i];
  std::copy(g.data(), g.data() + g.size(), bucket.buffer.begin() + static_cast<std::ptrdiff_t>(bucket.offsets[slot]));
  bucket.buffer[bucket.buffer.size() - bucket.params.size() + slot] = T(1);
  arrived_[i] = true;
  --bucket.pending;
  if (!options_.start_during_backward) return;
  if (bucket.pending == 0) start_ready();
  progress();
}

template <class T>
void GradientAllreducer<T>::progress() {
  // MPI progresses non-blocking collectives only inside MPI calls (no progress thread under
  // FUNNELED), so each hook gives the started buckets a push while the walk goes on. Testing the
  // oldest unfinished bucket drives the whole progress engine.
  while (next_done_ < next_start_) {
    int done = 0;
    check_mpi(MPI_Test(&buckets_[next_done_].request, &done, MPI_STATUS_IGNORE), "GradientAllreducer: MPI_Test");
    if (!done) return;
    ++next_done_;
  }
}

template <class T>
void GradientAllreducer<T>::start_ready() {
  while (next_start_ < buckets_.size() && buckets_[next_start_].pending == 0) start(buckets_[next_start_++]);
}

template <class T>
void GradientAllreducer<T>::start(Bucket& bucket) {
  // Tell every other rank this bucket has started here, for the timeout's report of the ranks
  // that have not (the message is the bucket's index, which never changes: the request can be
  // freed at once). wait() receives these once the allreduces have completed.
  for (int r = 0; r < ctx_.size(); ++r) {
    if (r == ctx_.rank()) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Isend(&bucket.index, 1, MPI_UINT64_T, r, kArrivalTag, comm_, &request),
              "GradientAllreducer: MPI_Isend");
    check_mpi(MPI_Request_free(&request), "GradientAllreducer: MPI_Request_free");
  }
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, bucket.buffer.data(), static_cast<int>(bucket.buffer.size()), mpi_type<T>(),
                           MPI_SUM, comm_, &bucket.request),
            "GradientAllreducer: MPI_Iallreduce");
}

template <class T>
void GradientAllreducer<T>::complete_started() {
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (; next_done_ < next_start_; ++next_done_) {
    for (;;) {
      int done = 0;
      // MPI_Test also drives the progress of the non-blocking allreduces.
      check_mpi(MPI_Test(&buckets_[next_done_].request, &done, MPI_STATUS_IGNORE), "GradientAllreducer: MPI_Test");
      if (done) break;
      if (std::chrono::steady_clock::now() > deadline) time_out(next_done_);
      std::this_thread::yield();
    }
  }
}

template <class T>
void GradientAllreducer<T>::receive_arrivals(bool wait_for_all) {
  for (int r = 0; r < ctx_.size(); ++r) {
    if (r == ctx_.rank()) continue;
    auto& count = arrivals_[static_cast<std::size_t>(r)];
    while (count < buckets_.size()) {
      if (!wait_for_all) {
        int waiting = 0;
        check_mpi(MPI_Iprobe(r, kArrivalTag, comm_, &waiting, MPI_STATUS_IGNORE), "GradientAllreducer: MPI_Iprobe");
        if (!waiting) break;
      }
      std::uint64_t bucket = 0;
      check_mpi(MPI_Recv(&bucket, 1, MPI_UINT64_T, r, kArrivalTag, comm_, MPI_STATUS_IGNORE),
                "GradientAllreducer: MPI_Recv");
      ++count;
    }
  }
}

template <class T>
void GradientAllreducer<T>::time_out(std::size_t b) {
  // The ranks whose notice for bucket b has not come (every rank starts buckets in index order).
  receive_arrivals(/*wait_for_all=*/false);
  std::string missing;
  for (int r = 0; r < ctx_.size(); ++r) {
    if (r != ctx_.rank() && arrivals_[static_cast<std::size_t>(r)] <= b) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
  }
  const std::string who = missing.empty() ? "every rank has started it, so the exchange itself is stuck"
                                          : "rank(s) " + missing + " have not started it (stalled or gone)";
  std::fprintf(stderr,
               "GradientAllreducer: rank %d of %d: the allreduce of %s has not completed after %g s "
               "(options.timeout): %s. Ending the job.\n",
               ctx_.rank(), ctx_.size(), describe_bucket(b).c_str(), options_.timeout.count(), who.c_str());
  std::fflush(stderr);
  ctx_.abort(3);
}

template <class T>
void GradientAllreducer<T>::wait() {
  require_main_thread("GradientAllreducer::wait");
  // Buckets a parameter without a gradient held back start now, in index order, zeros in its place.
  for (; next_start_ < buckets_.size(); ++next_start_) {
    Bucket& bucket = buckets_[next_start_];
    for (std::size_t slot = 0; slot < bucket.params.size(); ++slot) {
      const std::size_t i = bucket.params[slot];
      if (arrived_[i]) continue;
      const auto begin = bucket.buffer.begin() + static_cast<std::ptrdiff_t>(bucket.offsets[slot]);
      std::fill(begin, begin + static_cast<std::ptrdiff_t>(parameters_[i].second.numel()), T(0));
      bucket.buffer[bucket.buffer.size() - bucket.params.size() + slot] = T(0);
    }
    start(bucket);
  }
  complete_started();
  // Every rank has started every bucket, so all their notices are sent: take them all, leaving
  // none to be mistaken for the next step's.
  receive_arrivals(/*wait_for_all=*/true);
  std::fill(arrivals_.begin(), arrivals_.end(), 0);
  for (Bucket& bucket : buckets_) {
    for (std::size_t slot = 0; slot < bucket.params.size(); ++slot) {
      Tensor<T>& param = parameters_[bucket.params[slot]].second;
      if (bucket.buffer[bucket.buffer.size() - bucket.params.size() + slot] == T(0)) {
        param.zero_grad();  // no rank had a gradient for it
        continue;
      }
      auto grad = xt::xarray<T>::from_shape(param.shape());
      const auto begin = bucket.buffer.begin() + static_cast<std::ptrdiff_t>(bucket.offsets[slot]);
      std::copy(begin, begin + static_cast<std::ptrdiff_t>(grad.size()), grad.data());
      param.set_grad(std::move(grad));
    }
    bucket.pending = bucket.params.size();
  }
  std::fill(arrived_.begin(), arrived_.end(), false);
  next_start_ = 0;
  next_done_ = 0;
}

template class GradientAllreducer<float>;
template class GradientAllreducer<double>;

}  // namespace tapegrad::distributed
