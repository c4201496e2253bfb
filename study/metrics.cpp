#include "study/metrics.h"

#include "autograd/base/errors.h"
#include "autograd/ops/indexing.h"
#include "autograd/ops/operators.h"
#include "autograd/ops/reduce.h"

namespace tapegrad::study {

template <class T>
Tensor<T> mean_score_at(const Tensor<T>& scores, const IndexArray& tokens) {
  const Shape& shape = scores.shape();
  if (shape.size() != 3 || tokens.dimension() != 2 || tokens.shape()[0] != shape[0] || tokens.shape()[1] != shape[1]) {
    throw ShapeError("mean_score_at: scores must be [batch, seq, vocab] and tokens [batch, seq], got scores " +
                     format_shape(shape) + " and tokens " + format_shape(Shape(tokens.shape().begin(), tokens.shape().end())));
  }
  IndexArray index = tokens;
  index.reshape({shape[0], shape[1], 1});
  return mean(gather(scores, 2, index));
}

template <class T>
Tensor<T> score_difference(const Tensor<T>& scores, const IndexArray& correct, const IndexArray& wrong) {
  return mean_score_at(scores, correct) - mean_score_at(scores, wrong);
}

template Tensor<float> mean_score_at(const Tensor<float>&, const IndexArray&);
template Tensor<double> mean_score_at(const Tensor<double>&, const IndexArray&);
template Tensor<float> score_difference(const Tensor<float>&, const IndexArray&, const IndexArray&);
template Tensor<double> score_difference(const Tensor<double>&, const IndexArray&, const IndexArray&);

}  // namespace tapegrad::study
