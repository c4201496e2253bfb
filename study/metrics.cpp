#include "study/metrics.h"

#include "autograd/base/errors.h"
#include "autograd/ops/indexing.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/shape.h"

namespace tapegrad::study {

namespace {

// scores[b, s, tokens[b, s]] as [batch, seq, 1], checked (the errors of mean_score_at naming `who`).
template <class T>
Tensor<T> scores_at(const Tensor<T>& scores, const IndexArray& tokens, const std::string& who) {
  const Shape& shape = scores.shape();
  if (shape.size() != 3 || tokens.dimension() != 2 || tokens.shape()[0] != shape[0] || tokens.shape()[1] != shape[1]) {
    throw ShapeError(who + ": scores must be [batch, seq, vocab] and tokens [batch, seq], got scores " +
                     format_shape(shape) + " and tokens " + format_shape(Shape(tokens.shape().begin(), tokens.shape().end())));
  }
  IndexArray index = tokens;
  index.reshape({shape[0], shape[1], 1});
  return gather(scores, 2, index);
}

// values [replicas * batch, ...] -> [replicas], each replica's mean.
template <class T>
Tensor<T> replica_means(const Tensor<T>& values, std::size_t replicas, const std::string& who) {
  if (replicas == 0 || values.size(0) % replicas != 0) {
    throw ValueError(who + ": " + std::to_string(values.size(0)) + " rows do not split into " +
                     std::to_string(replicas) + " replicas");
  }
  return mean(reshape(values, {static_cast<Index>(replicas), -1}), Axes{1});
}

}  // namespace

template <class T>
Tensor<T> mean_score_at(const Tensor<T>& scores, const IndexArray& tokens) {
  return mean(scores_at(scores, tokens, "mean_score_at"));
}

template <class T>
Tensor<T> score_difference(const Tensor<T>& scores, const IndexArray& correct, const IndexArray& wrong) {
  return mean_score_at(scores, correct) - mean_score_at(scores, wrong);
}

template <class T>
Tensor<T> score_difference_per_replica(const Tensor<T>& scores, const IndexArray& correct, const IndexArray& wrong,
                                       std::size_t replicas) {
  const std::string who = "score_difference_per_replica";
  return replica_means(scores_at(scores, correct, who) - scores_at(scores, wrong, who), replicas, who);
}

#define TAPEGRAD_INSTANTIATE_METRICS(T)                                                                     \
  template Tensor<T> mean_score_at(const Tensor<T>&, const IndexArray&);                                   \
  template Tensor<T> score_difference(const Tensor<T>&, const IndexArray&, const IndexArray&);             \
  template Tensor<T> score_difference_per_replica(const Tensor<T>&, const IndexArray&, const IndexArray&,  \
                                                  std::size_t);
TAPEGRAD_INSTANTIATE_METRICS(float)
TAPEGRAD_INSTANTIATE_METRICS(double)
#undef TAPEGRAD_INSTANTIATE_METRICS

}  // namespace tapegrad::study
