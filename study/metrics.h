#pragma once
// Metrics a study differentiates or patches, of a model's scores over the vocabulary (logits, or
// log-probabilities: the copy-task Transformer's generator gives those), each one element:
//
//   mean_score_at(log_probs, targets)              the targets' mean log-probability
//   mean_score_at(logits, targets)                 the targets' mean logit (Chefer et al.'s target score)
//   score_difference(scores, correct, wrong)       the mean logit difference, correct - wrong; the
//                                                  same on log-probabilities (log_softmax shifts a
//                                                  position's scores by one constant)
//
// The mean loss is the training loss (copy_task::batch_loss, cross_entropy).
#include "autograd/core/tensor.h"

namespace tapegrad::study {

// scores [batch, seq, vocab], tokens [batch, seq]: the mean over positions of
// scores[b, s, tokens[b, s]]. ShapeError naming the function and both shapes when scores has not
// three axes or tokens is not its first two; ValueError (gather's) for a token outside [0, vocab).
template <class T>
Tensor<T> mean_score_at(const Tensor<T>& scores, const IndexArray& tokens);

// mean_score_at(scores, correct) - mean_score_at(scores, wrong); the same errors.
template <class T>
Tensor<T> score_difference(const Tensor<T>& scores, const IndexArray& correct, const IndexArray& wrong);

// score_difference of each of `replicas` copies of a batch stacked along axis 0 (scores
// [replicas * batch, seq, vocab], correct and wrong [replicas * batch, seq]): [replicas], what
// patch_slices_batched's run returns. The same errors, and ValueError when the rows do not split
// into the replicas.
template <class T>
Tensor<T> score_difference_per_replica(const Tensor<T>& scores, const IndexArray& correct, const IndexArray& wrong,
                                       std::size_t replicas);

}  // namespace tapegrad::study
