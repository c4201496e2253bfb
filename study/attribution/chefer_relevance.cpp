#include "study/attribution/chefer_relevance.h"

#include <string>

#include "autograd/base/errors.h"
#include "study/attribution/layer_maps.h"

namespace tapegrad::study {

namespace {

template <class T>
using Matrix = detail::Matrix<T>;

template <class T>
detail::MapSizes check_self(const AttentionAndGradient<T>& maps, const char* function, const char* name,
                            const char* gradient_name) {
  const auto sizes = detail::check_layer_maps(maps.attention, function, name, true);
  detail::check_gradients(maps.attention, maps.gradients, function, name, gradient_name);
  return sizes;
}

// Eq. 6 applied to one sequence's relevance, layer by layer in forward order.
template <class T>
void apply_self_attention_rule(const AttentionAndGradient<T>& maps, std::size_t b, Matrix<T>& r) {
  for (std::size_t l = 0; l < maps.attention.size(); ++l) {
    r += detail::matmul(detail::positive_gradient_mean_over_heads(maps.attention[l], maps.gradients[l], b), r);
  }
}

// Eqs. 8-9: R̄ = rownormalise(R - I) + I; rows of R - I that sum to 0 stay 0 (see the header).
template <class T>
Matrix<T> normalized_residual(const Matrix<T>& r) {
  const std::size_t n = r.shape(0);
  Matrix<T> out = r - detail::identity<T>(n);
  for (std::size_t i = 0; i < n; ++i) {
    T total = T(0);
    for (std::size_t j = 0; j < n; ++j) total += out(i, j);
    if (total != T(0))
      for (std::size_t j = 0; j < n; ++j) out(i, j) /= total;
    out(i, i) += T(1);
  }
  return out;
}

template <class T>
Matrix<T> transposed(const Matrix<T>& m) {
  return Matrix<T>(xt::transpose(m));
}

}  // namespace

template <class T>
xt::xarray<T> chefer_self_attention_relevance(AttentionAndGradient<T> self_attention) {
  const auto sizes = check_self(self_attention, "chefer_self_attention_relevance", "attention", "gradients");
  xt::xarray<T> out = xt::zeros<T>({sizes.batch, sizes.rows, sizes.rows});
  for (std::size_t b = 0; b < sizes.batch; ++b) {
    Matrix<T> r = detail::identity<T>(sizes.rows);
    apply_self_attention_rule(self_attention, b, r);
    detail::store_sequence(out, b, r);
  }
  return out;
}

template <class T>
EncoderDecoderRelevance<T> chefer_encoder_decoder_relevance(AttentionAndGradient<T> encoder_self,
                                                            AttentionAndGradient<T> decoder_self,
                                                            AttentionAndGradient<T> cross) {
  constexpr const char* function = "chefer_encoder_decoder_relevance";
  const auto src = check_self(encoder_self, function, "encoder_self.attention", "encoder_self.gradients");
  const auto tgt = check_self(decoder_self, function, "decoder_self.attention", "decoder_self.gradients");
  const auto cross_sizes = detail::check_layer_maps(cross.attention, function, "cross.attention", false);
  detail::check_gradients(cross.attention, cross.gradients, function, "cross.attention", "cross.gradients");
  if (cross.attention.size() != decoder_self.attention.size()) {
    throw ValueError(std::string(function) + ": " + std::to_string(decoder_self.attention.size()) +
                     " decoder self-attention layers but " + std::to_string(cross.attention.size()) +
                     " cross-attention layers (one of each per decoder layer)");
  }
  if (cross_sizes.batch != tgt.batch || cross_sizes.batch != src.batch || cross_sizes.rows != tgt.rows ||
      cross_sizes.cols != src.rows) {
    throw ShapeError(std::string(function) + ": cross.attention[0] has shape " +
                     format_shape(cross.attention[0].shape()) + " but must be [batch, heads, tgt, src] = [" +
                     std::to_string(tgt.batch) + ", heads, " + std::to_string(tgt.rows) + ", " +
                     std::to_string(src.rows) + "] to match decoder_self.attention[0] " +
                     format_shape(decoder_self.attention[0].shape()) + " and encoder_self.attention[0] " +
                     format_shape(encoder_self.attention[0].shape()));
  }
  EncoderDecoderRelevance<T> out{xt::zeros<T>({src.batch, src.rows, src.rows}),
                                 xt::zeros<T>({tgt.batch, tgt.rows, tgt.rows}),
                                 xt::zeros<T>({tgt.batch, tgt.rows, src.rows})};
  for (std::size_t b = 0; b < src.batch; ++b) {
    Matrix<T> r_ss = detail::identity<T>(src.rows);
    apply_self_attention_rule(encoder_self, b, r_ss);
    const Matrix<T> r_ss_bar = normalized_residual(r_ss);
    Matrix<T> r_qq = detail::identity<T>(tgt.rows);
    Matrix<T> r_qs = xt::zeros<T>({tgt.rows, src.rows});
    for (std::size_t l = 0; l < decoder_self.attention.size(); ++l) {
      const Matrix<T> a_self =
          detail::positive_gradient_mean_over_heads(decoder_self.attention[l], decoder_self.gradients[l], b);
      r_qq += detail::matmul(a_self, r_qq);  // Eq. 6
      r_qs += detail::matmul(a_self, r_qs);  // Eq. 7
      const Matrix<T> a_cross = detail::positive_gradient_mean_over_heads(cross.attention[l], cross.gradients[l], b);
      r_qs += detail::matmul(detail::matmul(transposed(normalized_residual(r_qq)), a_cross), r_ss_bar);  // Eq. 10
    }
    detail::store_sequence(out.encoder, b, r_ss);
    detail::store_sequence(out.decoder, b, r_qq);
    detail::store_sequence(out.cross, b, r_qs);
  }
  return out;
}

#define TAPEGRAD_CHEFER(T)                                                                                   \
  template xt::xarray<T> chefer_self_attention_relevance<T>(AttentionAndGradient<T>);                        \
  template EncoderDecoderRelevance<T> chefer_encoder_decoder_relevance<T>(                                   \
      AttentionAndGradient<T>, AttentionAndGradient<T>, AttentionAndGradient<T>);
TAPEGRAD_CHEFER(float)
TAPEGRAD_CHEFER(double)
#undef TAPEGRAD_CHEFER

}  // namespace tapegrad::study
