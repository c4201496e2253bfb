#include "nn/transformer/masks.h"

#include "autograd/base/checks.h"
#include "nn/masks.h"

namespace tapegrad::nn::transformer {

AttendMask make_src_mask(const IndexArray& src, Index pad) {
  require_token_batch(src, "make_src_mask");
  Mask mask = create_padding_mask(src, pad).may_attend();  // [batch, 1, 1, seq]
  mask.reshape({src.shape()[0], std::size_t{1}, src.shape()[1]});
  return AttendMask(std::move(mask));
}

AttendMask make_tgt_mask(const IndexArray& tgt, Index pad) {
  require_token_batch(tgt, "make_tgt_mask");
  const std::size_t batch = tgt.shape()[0], seq = tgt.shape()[1];
  // The result's size, checked under this function's name before either part is built.
  allocatable({batch, seq, seq}, sizeof(bool), "make_tgt_mask", "the mask");
  return make_src_mask(tgt, pad) && create_look_ahead_mask(seq);  // [batch, 1, seq] && [seq, seq]
}

}  // namespace tapegrad::nn::transformer
