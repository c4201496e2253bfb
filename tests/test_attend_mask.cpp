// AttendMask (true = may attend) against Mask (true = fill): mixing the two polarities does not
// compile (checked here with concepts and type traits, so a regression fails the build of this
// file), and AttendMask's constructors, blocking(), blocked() and && keep their polarity.
#include <cstdint>
#include <optional>
#include <type_traits>

#include "autograd/ops/attention.h"
#include "autograd/ops/masking.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/masks.h"
#include "nn/mha/multi_head_attention.h"
#include "nn/mha/scaled_dot_product_attention.h"
#include "nn/transformer/decoder.h"
#include "nn/transformer/encoder.h"
#include "nn/transformer/multi_head_attention.h"
#include "nn/transformer/scaled_dot_product_attention.h"
#include "nn/transformer/transformer.h"
#include "tests/support/reference.h"

namespace tapegrad {
namespace {

using Bytes = xt::xarray<std::uint8_t>;
using X = Tensor<double>;

// ---- what must not compile ----------------------------------------------------------------

// Neither polarity turns into the other without a named step.
static_assert(!std::is_convertible_v<AttendMask, Mask>);
static_assert(!std::is_convertible_v<Mask, AttendMask>);
static_assert(!std::is_convertible_v<Bytes, AttendMask>);
static_assert(!std::is_convertible_v<Mask, std::optional<AttendMask>>);  // a module's mask argument
static_assert(std::is_constructible_v<AttendMask, Mask> && std::is_constructible_v<AttendMask, Bytes>);

template <class M>
concept FillsWith = requires(const X& x, const M& m) { masked_fill(x, m, 0.0); };
static_assert(FillsWith<Mask>);         // the one mask masked_fill takes
static_assert(!FillsWith<AttendMask>);  // an attention mask would fill where it allows
static_assert(!FillsWith<Bytes>);       // deleted: a uint8 mask is usually 1 = attend

template <class M>
concept SoftmaxAttendsWith = requires(const X& x, const M& m) { attention_softmax(x, m, 1.0); };
static_assert(SoftmaxAttendsWith<AttendMask> && SoftmaxAttendsWith<std::optional<AttendMask>>);
static_assert(!SoftmaxAttendsWith<Mask> && !SoftmaxAttendsWith<Bytes>);

// Each attention module takes an AttendMask and refuses a Mask (or bytes) in its place.
template <class Module, class M>
concept AttendsWith = requires(Module& m, const X& x, const M& mask) { m(x, x, x, mask); };
template <class Module>
constexpr bool takes_only_attend_masks =
    AttendsWith<Module, AttendMask> && !AttendsWith<Module, Mask> && !AttendsWith<Module, Bytes>;
static_assert(takes_only_attend_masks<nn::labml::MultiHeadAttention<double>>);
static_assert(takes_only_attend_masks<nn::mha::MultiHeadAttention<double>>);
static_assert(takes_only_attend_masks<nn::mha::ScaledDotProductAttention<double>>);
static_assert(takes_only_attend_masks<nn::transformer::MultiHeadAttention<double>>);
static_assert(takes_only_attend_masks<nn::transformer::ScaledDotProductAttention<double>>);

template <class M>
concept EncodesWith = requires(nn::transformer::TransformerEncoderLayer<double>& layer,
                               nn::transformer::TransformerDecoderLayer<double>& decoder,
                               nn::transformer::Transformer<double>& model, const X& x, const IndexArray& t,
                               const M& mask) {
  layer(x, mask);
  decoder(x, x, mask, mask);
  model(t, t, mask, mask);
};
static_assert(EncodesWith<AttendMask> && !EncodesWith<Mask>);

// The builders return the attend type.
static_assert(std::is_same_v<decltype(nn::create_padding_mask(IndexArray{})), AttendMask>);
static_assert(std::is_same_v<decltype(nn::create_look_ahead_mask(1)), AttendMask>);

// ---- what it does -------------------------------------------------------------------------

TEST(AttendMask, KeepsABoolMaskAsMayAttendAndGivesMaskedFillItsComplement) {
  const AttendMask m(Mask{{true, false}, {false, true}});
  EXPECT_EQ(m.may_attend(), (Mask{{true, false}, {false, true}}));
  EXPECT_EQ(m.blocked(), (Mask{{false, true}, {true, false}}));
}

TEST(AttendMask, ReadsNonzeroBytesAsMayAttendAsTheAnnotatedTransformer) {
  // subsequent_mask(3) == 0 as uint8, and bytes other than 1.
  EXPECT_EQ(AttendMask(Bytes{{1, 0, 0}, {1, 1, 0}, {1, 1, 1}}).may_attend(),
            (Mask{{true, false, false}, {true, true, false}, {true, true, true}}));
  EXPECT_EQ(AttendMask(Bytes{0, 2, 255}).may_attend(), (Mask{false, true, true}));
}

TEST(AttendMask, BlockingTakesPyTorchsTrueIsBlockedPolarity) {
  // nn.MultiheadAttention's key_padding_mask: true on the padding.
  const AttendMask m = AttendMask::blocking(Mask{false, false, true});
  EXPECT_EQ(m.may_attend(), (Mask{true, true, false}));
  EXPECT_EQ(m.blocked(), (Mask{false, false, true}));
}

TEST(AttendMask, AndAttendsWhereBothAllowBroadcasting) {
  const AttendMask padding = nn::create_padding_mask(IndexArray{{5, 6, 0}});  // [1, 1, 1, 3]
  const AttendMask both = padding && nn::create_look_ahead_mask(3);          // [1, 1, 3, 3]
  EXPECT_EQ(both.may_attend(), (Mask{{{{true, false, false}, {true, true, false}, {true, true, false}}}}));
  EXPECT_TRUE(throws_with<ShapeError>([] { AttendMask(Mask{true, false}) && AttendMask(Mask{true, false, true}); },
                                      {"AttendMask && AttendMask", "[2]", "[3]"}));
}

// Every cell of a broadcast AND against a loop over the result, at sizes where xtensor's own `&&`
// of bool arrays of different shapes went wrong (n >= 16: the decoder's causal mask let queries see
// the future on copy-task sequences of 17 tokens and more).
TEST(AttendMask, AndIsRightAtEverySizeAndEveryBroadcast) {
  for (const std::size_t n : {3u, 15u, 16u, 17u, 63u}) {
    Mask padding = Mask::from_shape({2, 1, n});  // [batch, 1, seq_k]
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t k = 0; k < n; ++k) padding(b, 0, k) = (k * 7 + b * 3) % 5 != 0;
    const Mask causal = nn::create_look_ahead_mask(n).may_attend();  // [n, n]
    const Mask both = (AttendMask(padding) && AttendMask(causal)).may_attend();
    ASSERT_EQ(both.shape(), (std::vector<std::size_t>{2, n, n})) << "n = " << n;
    std::size_t wrong = 0;
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t q = 0; q < n; ++q)
        for (std::size_t k = 0; k < n; ++k) wrong += both(b, q, k) != (padding(b, 0, k) && k <= q);
    EXPECT_EQ(wrong, 0u) << "n = " << n;
  }
  const IndexArray tgt = xt::arange<Index>(1, 41).reshape({2, 20});
  const Mask self = nn::transformer::make_tgt_mask(tgt, 0).may_attend();
  for (std::size_t q = 0; q < 20; ++q)
    for (std::size_t k = 0; k < 20; ++k) EXPECT_EQ(self(1, q, k), k <= q) << "query " << q << ", key " << k;
}

TEST(AttendMask, ModulesAttendWhereTheMaskIsTrue) {
  // One query over two keys, the second masked out: all weight on the first key, whichever way
  // the mask was built.
  Generator gen(1);
  nn::mha::ScaledDotProductAttention<double> sdpa(gen);
  const X q(xt::xarray<double>{{1.0, 0.0}}), k(xt::xarray<double>{{0.0, 1.0}, {5.0, 0.0}});
  for (const AttendMask& m : {AttendMask(Mask{true, false}), AttendMask(Bytes{1, 0}), AttendMask::blocking(Mask{false, true})}) {
    EXPECT_EQ(sdpa(q, k, k, m).attention_weights.value(), (xt::xarray<double>{{1.0, 0.0}}));
  }
}

}  // namespace
}  // namespace tapegrad
