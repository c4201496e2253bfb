#include "nn/attention_inputs.h"

#include <array>

namespace tapegrad::nn {

namespace {

// The message after "<owner>: " for inputs that failed the check: `shapes` are query's, key's and
// value's descriptions, `misfit` the first input that is not [.., .., d_model] (3 when all are,
// and it is their lengths or batch sizes that disagree).
std::string problem(AttentionFamily family, std::size_t d_model, const std::array<std::string, 3>& shapes,
                    std::size_t misfit) {
  const std::string width = std::to_string(d_model) + "]";
  if (family == AttentionFamily::kTransformer) {
    const std::string got = ", got q " + shapes[0] + ", k " + shapes[1] + ", v " + shapes[2];
    if (misfit < 3) return "q, k and v must be [batch, seq, " + width + got;
    return "q, k and v must share the batch size, and k and v the sequence length" + got;
  }
  if (misfit < 3) {
    static constexpr std::array<const char*, 3> names{"query", "key", "value"};
    const char* axes = family == AttentionFamily::kLabml ? "[seq_len, batch_size, " : "[batch, seq_len, ";
    return std::string(names[misfit]) + " " + shapes[misfit] + " must be " + axes + width;
  }
  return "key " + shapes[1] + " and value " + shapes[2] + " must have one length and the batch size of query " +
         shapes[0];
}

}  // namespace

template <class T>
void check_attention_inputs(AttentionFamily family, std::size_t d_model, const Tensor<T>& query, const Tensor<T>& key,
                            const Tensor<T>& value, const std::function<std::string()>& owner) {
  const std::array<const Tensor<T>*, 3> inputs{&query, &key, &value};
  std::size_t misfit = 0;
  while (misfit < 3 && inputs[misfit]->ndim() == 3 && inputs[misfit]->size(2) == d_model) ++misfit;
  if (misfit == 3) {
    const std::size_t batch = family == AttentionFamily::kLabml ? 1 : 0, seq = 1 - batch;
    if (key.size(seq) == value.size(seq) && key.size(batch) == query.size(batch) &&
        value.size(batch) == query.size(batch)) {
      return;
    }
  }
  throw ShapeError(owner() + ": " +
                   problem(family, d_model, {query.describe(), key.describe(), value.describe()}, misfit));
}

template void check_attention_inputs(AttentionFamily, std::size_t, const Tensor<float>&, const Tensor<float>&,
                                     const Tensor<float>&, const std::function<std::string()>&);
template void check_attention_inputs(AttentionFamily, std::size_t, const Tensor<double>&, const Tensor<double>&,
                                     const Tensor<double>&, const std::function<std::string()>&);

}  // namespace tapegrad::nn
