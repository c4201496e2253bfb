#pragma once
// What every attribution method (study/attribution/*.h) takes, and the checks they share.
//
// Attention maps arrive as one xt::xarray per attention module, in FORWARD order (the order the
// modules ran: layer 0 first), each [batch, heads, seq_q, seq_k]: A after the mask and softmax,
// and dL/dA of the same shape. That is the layout nn's attention modules keep and the capture
// returns. Heads may differ from layer to layer; batch and seq may not. Every method works per
// sequence of the batch, so results carry a leading batch axis.
//
// Every entry must be finite (a NaN would be skipped by the clips and comparisons, an infinity
// would make the result NaN) and every map needs at least one head: the checks below refuse
// both, naming the function, the layer and the position. A head whose weights are all zero (an
// ablated head, study/attention_intervention.h) is a head that attends nowhere: it counts as zeros
// in a mean over heads (rollout, flow), adds nothing to Chefer's Ā (gradient-weighted rollout,
// relevance), and the residual identity each method adds keeps the result finite. Layers whose
// every head is zero give the identity (rollout, gradient-weighted rollout, Chefer).
//
// The per-sequence matrices ([seq_q, seq_k], one batch element after the heads are combined)
// are small and few, so they are plain xtensors and the products plain loops (matmul below).
#include <cstddef>
#include <span>
#include <string_view>

#include "autograd/memory/array_allocator.h"  // before xtensor: it sets xt::xarray's allocator
#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

namespace tapegrad::study::detail {

template <class T>
using Matrix = xt::xtensor<T, 2>;

// The sizes every layer of a list shares.
struct MapSizes {
  std::size_t batch = 0, rows = 0, cols = 0;
};

// Checks a forward-order list of maps named `argument` for `function`: ValueError when empty;
// ShapeError naming the layer and its shape when a map is not [batch, heads, seq_q, seq_k], has
// no heads, when `square` and seq_q != seq_k, and when its batch or seq sizes differ from layer
// 0's; ValueError naming the layer and the batch, head, query and key of the first NaN or
// infinite entry.
template <class T>
MapSizes check_layer_maps(std::span<const xt::xarray<T>> maps, std::string_view function,
                          std::string_view argument, bool square);

// Checks that `gradients` has one map per map of `attention`, each of the same shape: ValueError
// for a different count, ShapeError naming the layer and both shapes otherwise; ValueError for a
// NaN or infinite entry, named as check_layer_maps names one.
template <class T>
void check_gradients(std::span<const xt::xarray<T>> attention, std::span<const xt::xarray<T>> gradients,
                     std::string_view function, std::string_view attention_argument,
                     std::string_view gradient_argument);

// mean_h A[b, h] of one sequence b: [seq_q, seq_k].
template <class T>
Matrix<T> mean_over_heads(const xt::xarray<T>& attention, std::size_t b);

// Chefer et al. 2021, Eq. 5: Ā = E_h[(∇A ⊙ A)^+], the mean over heads of the positive part of
// A ⊙ dL/dA, for sequence b: [seq_q, seq_k]. The clip comes before the mean, per head.
template <class T>
Matrix<T> positive_gradient_mean_over_heads(const xt::xarray<T>& attention, const xt::xarray<T>& gradient,
                                            std::size_t b);

template <class T>
Matrix<T> identity(std::size_t n);

// a · b for [n, k] · [k, m].
template <class T>
Matrix<T> matmul(const Matrix<T>& a, const Matrix<T>& b);

// Each row divided by its own sum (the keepdim sum: row i by sum_j m[i, j], not column j by row
// j's sum, the broadcast the known rollout scripts make). ValueError naming `function` and the
// row when a row sums to 0 or less: such a row has no distribution to normalise.
template <class T>
void normalize_rows(Matrix<T>& m, std::string_view function, std::size_t layer, std::size_t b);

// Writes m into out[b] of a [batch, rows, cols] result.
template <class T>
void store_sequence(xt::xarray<T>& out, std::size_t b, const Matrix<T>& m);

}  // namespace tapegrad::study::detail
