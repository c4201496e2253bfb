#pragma once
// The check of a multi-head attention forward's query, key and value, shared by the three reference
// families. They check the same things but lay the inputs out differently (labml seq-first,
// mha and transformer batch-first) and word their messages as their reference designs name the inputs
// (query/key/value one at a time; transformer's q, k and v together), which users and
// docs/bad-inputs.md quote, so each family keeps its wording.
#include <cstddef>
#include <functional>
#include <string>

#include "autograd/core/tensor.h"

namespace tapegrad::nn {

enum class AttentionFamily {
  kLabml,        // [seq_len, batch_size, d_model]: "query [3,4] must be [seq_len, batch_size, 4]"
  kMha,          // [batch, seq_len, d_model]:      "query [1,3,5] must be [batch, seq_len, 4]"
  kTransformer,  // [batch, seq, d_model]:          "q, k and v must be [batch, seq, 4], got q [..], k [..], v [..]"
};

// ShapeError "<owner()>: ..." unless query, key and value are 3-D and end in d_model, key and
// value have one sequence length, and all three have query's batch size (axes as the family lays
// them out). owner() names the module and is called only when a check fails.
template <class T>
void check_attention_inputs(AttentionFamily family, std::size_t d_model, const Tensor<T>& query, const Tensor<T>& key,
                            const Tensor<T>& value, const std::function<std::string()>& owner);

extern template void check_attention_inputs(AttentionFamily, std::size_t, const Tensor<float>&, const Tensor<float>&,
                                            const Tensor<float>&, const std::function<std::string()>&);
extern template void check_attention_inputs(AttentionFamily, std::size_t, const Tensor<double>&, const Tensor<double>&,
                                            const Tensor<double>&, const std::function<std::string()>&);

}  // namespace tapegrad::nn
