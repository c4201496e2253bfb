#include "distributed/parameters.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "autograd/base/errors.h"
#include "distributed/mpi_type.h"

namespace tapegrad::distributed {

namespace {

// "'name' [3,4] float64": one parameter as every rank must see it.
template <class T>
std::string describe_parameter(const std::string& name, const Tensor<T>& value) {
  return "'" + name + "' " + format_shape(value.shape()) + (std::is_same_v<T, float> ? " float32" : " float64");
}

// FNV-1a: the same 64 bits on every machine for the same text.
std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Every rank's `text`, gathered on every rank (two collectives: the lengths, then the bytes).
std::vector<std::string> allgather_strings(const Context& ctx, const std::string& text, const std::string& what) {
  const int n = ctx.size();
  const int length = mpi_count(text.size(), what + ": the parameter list");
  std::vector<int> lengths(static_cast<std::size_t>(n)), offsets(static_cast<std::size_t>(n));
  check_mpi(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, ctx.comm()), what + ": MPI_Allgather");
  int total = 0;
  for (int r = 0; r < n; ++r) {
    offsets[static_cast<std::size_t>(r)] = total;
    total += lengths[static_cast<std::size_t>(r)];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  check_mpi(MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                           ctx.comm()),
            what + ": MPI_Allgatherv");
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                                                       static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The first difference between rank 0's list and rank r's, in words.
std::string first_difference(const std::vector<std::string>& root, const std::vector<std::string>& other, int r) {
  const std::size_t common = std::min(root.size(), other.size());
  const std::string r_name = "rank " + std::to_string(r);
  for (std::size_t i = 0; i < common; ++i) {
    if (root[i] != other[i]) {
      return r_name + " differs from rank 0 at parameter " + std::to_string(i + 1) + " of " +
             std::to_string(root.size()) + ": rank 0 has " + root[i] + ", " + r_name + " has " + other[i];
    }
  }
  const bool root_longer = root.size() > other.size();
  return "rank 0 has " + std::to_string(root.size()) + " parameters, " + r_name + " has " +
         std::to_string(other.size()) + "; parameter " + std::to_string(common + 1) + " is " +
         (root_longer ? "rank 0's " + root[common] : r_name + "'s " + other[common]);
}

// Collective: a rank given another root would receive from elsewhere and keep other values.
void check_root(const Context& ctx, int root, const std::string& function) {
  const auto [lowest, highest] = min_and_max(ctx, root, function);
  if (lowest != highest) {
    throw ValueError(function + ": the ranks' roots differ (from " + std::to_string(lowest) + " to " +
                     std::to_string(highest) + "); every rank must pass the same root");
  }
  if (root < 0 || root >= ctx.size()) {
    throw ValueError(function + ": root " + std::to_string(root) + " is not a rank of this job (ranks 0.." +
                     std::to_string(ctx.size() - 1) + ")");
  }
}

}  // namespace

template <class T>
void check_model_agreement(const Context& ctx, const optim::NamedParameters<T>& parameters, const std::string& function) {
  std::string text;
  for (const auto& [name, value] : parameters) text += describe_parameter(name, value) + "\n";
  const std::uint64_t mine = fnv1a(text);
  std::vector<std::uint64_t> hashes(static_cast<std::size_t>(ctx.size()));
  check_mpi(MPI_Allgather(&mine, 1, MPI_UINT64_T, hashes.data(), 1, MPI_UINT64_T, ctx.comm()),
            function + ": MPI_Allgather");
  if (std::all_of(hashes.begin(), hashes.end(), [&](std::uint64_t h) { return h == hashes[0]; })) return;
  // Rare path: the lists themselves, so that every rank can name the same first difference.
  const std::vector<std::string> all = allgather_strings(ctx, text, function);
  const std::vector<std::string> root = split_lines(all[0]);
  std::string differing, first;
  for (int r = 1; r < ctx.size(); ++r) {
    if (all[static_cast<std::size_t>(r)] == all[0]) continue;
    differing += (differing.empty() ? "" : ", ") + std::to_string(r);
    if (first.empty()) first = first_difference(root, split_lines(all[static_cast<std::size_t>(r)]), r);
  }
  throw ValueError(function + ": the ranks do not have the same model: " + first + " (ranks that differ from rank 0: " +
                   differing + ")");
}

template <class T>
void check_model_agreement(const Context& ctx, const nn::Module<T>& module) {
  check_model_agreement(ctx, module.named_parameters());
}

template <class T>
void broadcast_parameters(const Context& ctx, nn::Module<T>& module, int root) {
  const std::string function = "broadcast_parameters";
  check_root(ctx, root, function);
  const auto parameters = module.named_parameters();
  check_model_agreement(ctx, parameters, function);
  for (const auto& [name, param] : parameters) {
    Tensor<T> p = param;
    // The root sends from its value as it is: only receivers write in place.
    T* data = ctx.rank() == root ? const_cast<T*>(p.value().data()) : p.mutable_value().data();
    check_mpi(MPI_Bcast(data, mpi_count(p.numel(), function + ": '" + name + "'"), mpi_type<T>(), root, ctx.comm()),
              function + ": MPI_Bcast of '" + name + "'");
  }
}

template <class T>
void broadcast_optimizer_state(const Context& ctx, optim::Optimizer<T>& optimizer, int root) {
  const std::string function = "broadcast_optimizer_state";
  check_root(ctx, root, function);
  // The root's keys and shapes first ("<key length> <key> <ndim> <dims...>" a line), then the values.
  optim::StateMap<T> state;
  std::string layout;
  if (ctx.rank() == root) {
    state = optimizer.state();
    for (const auto& [key, value] : state) {
      // Appended piece by piece: gcc 12 reports a chain of + here as a false -Wstringop-overflow.
      layout.append(std::to_string(key.size())).append(" ").append(key);
      layout.append(" ").append(std::to_string(value.dimension()));
      for (const auto d : value.shape()) layout.append(" ").append(std::to_string(d));
      layout.append("\n");
    }
  }
  std::uint64_t length = layout.size();
  check_mpi(MPI_Bcast(&length, 1, MPI_UINT64_T, root, ctx.comm()), function + ": MPI_Bcast");
  layout.resize(length);
  check_mpi(MPI_Bcast(layout.data(), mpi_count(length, function + ": the state's layout"), MPI_CHAR, root, ctx.comm()), function + ": MPI_Bcast");
  if (ctx.rank() != root) {
    std::istringstream in(layout);
    std::size_t key_length = 0;
    while (in >> key_length) {
      std::string key(key_length, '\0');
      in.get();  // the space before the key (which may itself hold spaces)
      in.read(key.data(), static_cast<std::streamsize>(key_length));
      std::size_t ndim = 0;
      in >> ndim;
      Shape shape(ndim);
      for (auto& d : shape) in >> d;
      state[key] = xt::xarray<T>::from_shape(shape);
    }
  }
  for (auto& [key, value] : state) {
    check_mpi(MPI_Bcast(value.data(), mpi_count(value.size(), function + ": '" + key + "'"), mpi_type<T>(), root, ctx.comm()),
              function + ": MPI_Bcast of '" + key + "'");
  }
  if (ctx.rank() != root) optimizer.load_state(state);
}

template void check_model_agreement(const Context&, const optim::NamedParameters<float>&, const std::string&);
template void check_model_agreement(const Context&, const optim::NamedParameters<double>&, const std::string&);
template void check_model_agreement(const Context&, const nn::Module<float>&);
template void check_model_agreement(const Context&, const nn::Module<double>&);
template void broadcast_parameters(const Context&, nn::Module<float>&, int);
template void broadcast_parameters(const Context&, nn::Module<double>&, int);
template void broadcast_optimizer_state(const Context&, optim::Optimizer<float>&, int);
template void broadcast_optimizer_state(const Context&, optim::Optimizer<double>&, int);

}  // namespace tapegrad::distributed
