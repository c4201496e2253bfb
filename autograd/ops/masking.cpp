#include "autograd/ops/masking.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <xtensor/xoperation.hpp>

#include "autograd/ops/detail/dims.h"
#include "autograd/core/record.h"
#include "autograd/kernels/layout/broadcast.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/kernels/simd/strided_copy.h"
#include "autograd/ops/reduce.h"
#include "autograd/ops/selection.h"
#include "autograd/ops/shape.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::make_result;
using detail::should_record;

// T's bits as an unsigned integer, for the branch-free selections below: written with `?:`,
// GCC 12 emits a branch per element, mispredicted at random on a random mask (4 ns per element);
// a bitwise blend vectorises.
template <class T>
using SameSizeBits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

// All ones when `on`, all zeros otherwise: `x & all_or_nothing<T>(on)` is `on ? x : +0`.
template <class T>
SameSizeBits<T> all_or_nothing(bool on) {
  return SameSizeBits<T>(0) - SameSizeBits<T>(on);
}

// out[i] = mask[i] ? value : x[i] over [0, n), as a bitwise blend of value's and x's bits.
template <class T>
void select_into(std::size_t n, const bool* mask, T value, const T* x, T* out) {
  using Bits = SameSizeBits<T>;
  const Bits value_bits = std::bit_cast<Bits>(value);
  // Read as bytes: converting each bool to an integer defeats GCC's vectoriser (4x slower).
  const auto* m = reinterpret_cast<const std::uint8_t*>(mask);
  kernels::parallel_items(n, 1, [=](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const Bits pick_value = Bits(0) - Bits(m[i]);  // a bool's byte is 0 or 1
      const Bits bits = (value_bits & pick_value) | (std::bit_cast<Bits>(x[i]) & ~pick_value);
      out[i] = std::bit_cast<T>(bits);
    }
  });
}

// a with value where the mask (at a's shape) is true. Its backward fills the gradient with 0
// where the mask is true: this op again, sharing the mask, and so at every order (it is linear).
template <class T>
Tensor<T> fill_where(const Tensor<T>& a, std::shared_ptr<const Mask> mask, T value,
                     CallSite where = std::source_location::current()) {
  auto y = xt::xarray<T>::from_shape(a.shape());
  select_into(y.size(), mask->data(), value, a.value().data(), y.data());
  return make_result("masked_fill", where, std::move(y), should_record(a, value),
                     [a = detail::edge(a), mask = std::move(mask)](const Tensor<T>& g) {
                       accumulate(a, fill_where(g, mask, T(0)));
                     });
}

// Dropout's keep mask, 8 elements a byte: bit j of byte b is element 8b + j. Every dropout's mask
// lives from its forward until its backward: the masks of a paper-size copy-task step (N=2,
// dropout 0.1, a dropout per sublayer) cover 3.9 M elements, 3.9 MB as one bool each against
// 0.5 MB packed.
using KeepBits = xt::xarray<std::uint8_t>;

inline std::size_t keep_bytes(std::size_t n) { return n / 8 + (n % 8 != 0); }

// Elements a dropout loop handles at a time: whole bytes of the mask, and enough for its
// per-element steps to vectorise.
constexpr std::size_t kKeepChunk = 64;

// Calls fn(first, count) for each chunk of kKeepChunk elements (fewer in the last), in parallel:
// a chunk covers whole bytes of the mask, so no two tasks write one byte.
template <class Fn>
void for_each_keep_chunk(std::size_t n, Fn&& fn) {
  const std::size_t chunks = n / kKeepChunk + (n % kKeepChunk != 0);
  kernels::parallel_items(chunks, kKeepChunk, [&](std::size_t begin, std::size_t end) {
    for (std::size_t c = begin; c < end; ++c) fn(c * kKeepChunk, std::min(kKeepChunk, n - c * kKeepChunk));
  });
}

// pack_flags undone: flags[0, count) from bits. Each byte copied to all 8 bytes of a word keeps
// bit j in byte j; adding 0x7F carries it into that byte's top bit, shifted down to 0 or 1.
inline void unpack_flags(const std::uint8_t* bits, std::size_t count, std::uint8_t* flags) {
  std::uint8_t padded[kKeepChunk];
  const std::size_t bytes = keep_bytes(count);
  for (std::size_t q = 0; q < kKeepChunk / 8; ++q) {
    const std::uint64_t byte = q < bytes ? bits[q] : 0u;
    const std::uint64_t spread = (byte * 0x0101010101010101ull) & 0x8040201008040201ull;
    const std::uint64_t word = ((spread + 0x7F7F7F7F7F7F7F7Full) >> 7) & 0x0101010101010101ull;
    std::memcpy(padded + 8 * q, &word, sizeof word);
  }
  std::copy_n(padded, count, flags);
}

// flags[0, count) (each 0 or 1) as bits from bits[0]: 8 flags read as one little-endian word, and
// the multiply gathers byte j's low bit into bit j of the top byte.
inline void pack_flags(const std::uint8_t* flags, std::size_t count, std::uint8_t* bits) {
  std::uint8_t padded[kKeepChunk] = {};
  std::copy_n(flags, count, padded);
  for (std::size_t q = 0; q < keep_bytes(count); ++q) {
    std::uint64_t word;
    std::memcpy(&word, padded + 8 * q, sizeof word);
    bits[q] = static_cast<std::uint8_t>((word * 0x0102040810204080ull) >> 56);
  }
}

// dropout's backward, g scaled where the bit is set and 0 elsewhere (whatever g is there: an
// infinite or NaN gradient at a dropped element gives 0, as a product with the mask would not);
// linear in g, so its own backward is itself.
template <class T>
Tensor<T> dropout_backward(const Tensor<T>& g, std::shared_ptr<const KeepBits> keep, T scale,
                           CallSite where = std::source_location::current()) {
  auto dx = xt::xarray<T>::from_shape(g.shape());
  const std::uint8_t* k = keep->data();
  const T* pg = g.value().data();
  T* pd = dx.data();
  for_each_keep_chunk(dx.size(), [&](std::size_t first, std::size_t count) {
    std::uint8_t flags[kKeepChunk];
    unpack_flags(k + first / 8, count, flags);
    for (std::size_t j = 0; j < count; ++j) {
      pd[first + j] = std::bit_cast<T>(std::bit_cast<SameSizeBits<T>>(pg[first + j] * scale) & all_or_nothing<T>(flags[j]));
    }
  });
  return make_result("dropout_backward", where, std::move(dx), should_record(g),
                     [g = detail::edge(g), keep = std::move(keep), scale](const Tensor<T>& gg) {
                       accumulate(g, dropout_backward(gg, keep, scale));
                     });
}

// The input and the mask at the output's shape, their broadcast shape (PyTorch's rule).
template <class T>
struct FillOperands {
  Tensor<T> a;                      // expanded when smaller than the output: expand's backward sums back
  std::shared_ptr<const Mask> mask;  // saved for the backward
};

template <class T>
FillOperands<T> at_output_shape(const Tensor<T>& a, const Mask& mask, CallSite where) {
  const Shape in = a.shape();
  const Shape mask_shape(mask.shape().begin(), mask.shape().end());
  const Shape shape = kernels::broadcast_shapes(in, mask_shape, "masked_fill (input, mask)");
  Tensor<T> full_a = in == shape ? a : expand(a, detail::as_dims(shape), where);
  // The mask is materialised once (one strided copy; xtensor's broadcast assignment took longer
  // than the fill itself).
  Mask full = mask_shape == shape ? mask : kernels::broadcast_copy(mask.data(), mask_shape, shape);
  return {std::move(full_a), std::make_shared<const Mask>(std::move(full))};
}

}  // namespace

template <class T>
Tensor<T> masked_fill(const Tensor<T>& a, const Mask& mask, Scalar<T> value, CallSite where) {
  require_defined(a, "masked_fill", "a");
  FillOperands<T> full = at_output_shape(a, mask, where);
  return fill_where(full.a, std::move(full.mask), value, where);
}

template <class T>
Tensor<T> masked_fill(const Tensor<T>& a, const Mask& mask, const Tensor<T>& value, CallSite where) {
  require_defined(a, "masked_fill", "a");
  require_defined(value, "masked_fill", "value");
  if (value.ndim() != 0) {
    throw ShapeError("masked_fill: value must be a 0-d tensor, got shape " + format_shape(value.shape()) + " (input " +
                     format_shape(a.shape()) + ", mask " + format_shape(mask.shape()) + ")");
  }
  FillOperands<T> full = at_output_shape(a, mask, where);
  auto y = xt::xarray<T>::from_shape(full.a.shape());
  select_into(y.size(), full.mask->data(), value.item(), full.a.value().data(), y.data());
  return make_result("masked_fill", where, std::move(y), should_record(full.a, value),
                     [a = detail::edge(full.a), value = detail::edge(value), mask = std::move(full.mask)](const Tensor<T>& g) {
                       if (a.requires_grad()) accumulate(a, fill_where(g, mask, T(0)));
                       // The filled positions' gradients, summed: where (not a product with the
                       // mask), so that an infinite g elsewhere does not make NaN.
                       if (value.requires_grad()) {
                         accumulate(value, sum(tapegrad::where(*mask, g, Tensor<T>(xt::xarray<T>(T(0))))));
                       }
                     });
}

namespace {
// Dropout whose uniform draws are values [begin, begin + a.size()) of a draw of `total` values.
template <class T>
Tensor<T> dropout_part(const Tensor<T>& a, double p, bool training, Generator& gen, std::size_t total,
                       std::size_t begin, CallSite where) {
  if (!training || p == 0.0) {
    return make_result("dropout", where, xt::xarray<T>(a.value()), should_record(a),
                       [a = detail::edge(a)](Tensor<T> g) { accumulate(a, std::move(g)); });
  }
  if (p == 1.0) {  // every element dropped: 1/(1-p) would be infinite, and nothing is random
    return make_result("dropout", where, xt::xarray<T>(xt::zeros<T>(a.shape())), should_record(a),
                       [a = detail::edge(a)](const Tensor<T>& g) { accumulate(a, Tensor<T>::zeros(g.shape())); });
  }
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  auto y = xt::xarray<T>::from_shape(a.shape());
  auto keep = KeepBits::from_shape({keep_bytes(y.size())});
  T* out = y.data();
  std::uint8_t* k = keep.data();
  const T* x = a.value().data();
  // float draws: into the output buffer when it holds floats (each is replaced in place after it
  // is read), into a buffer of their own otherwise.
  std::vector<float> own_draws;
  float* u;
  if constexpr (std::is_same_v<T, float>) {
    u = out;
  } else {
    own_draws.resize(y.size());
    u = own_draws.data();
  }
  gen.fill_uniform_slice(u, total, begin, y.size());
  // u >= p, compared in float: for a float u that is u >= the smallest float not below p.
  float p_up = static_cast<float>(p);
  if (static_cast<double>(p_up) < p) p_up = std::nextafter(p_up, 2.0f);
  for_each_keep_chunk(y.size(), [&](std::size_t first, std::size_t count) {
    std::uint8_t flags[kKeepChunk];
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t i = first + j;
      const bool kept = u[i] >= p_up;
      flags[j] = kept;
      out[i] = std::bit_cast<T>(std::bit_cast<SameSizeBits<T>>(x[i] * scale) & all_or_nothing<T>(kept));
    }
    pack_flags(flags, count, k + first / 8);
  });
  return make_result("dropout", where, std::move(y), should_record(a),
                     [a = detail::edge(a), kept = std::make_shared<const KeepBits>(std::move(keep)), scale](const Tensor<T>& g) {
                       accumulate(a, dropout_backward(g, kept, scale));
                     });
}

}  // namespace

template <class T>
Tensor<T> dropout(const Tensor<T>& a, double p, bool training, Generator& gen, CallSite where) {
  require_defined(a, "dropout", "a");
  check_dropout_p(p, "dropout");
  return dropout_part(a, p, training, gen, a.numel(), 0, where);
}

template <class T>
Tensor<T> dropout(const Tensor<T>& a, double p, bool training, Generator& gen, const BatchRows& rows, CallSite where) {
  require_defined(a, "dropout", "a");
  check_dropout_p(p, "dropout");
  if (a.ndim() == 0) throw ShapeError("dropout: a " + a.describe() + " has no batch axis (axis 0) for rows of a batch");
  const std::size_t local = a.shape()[0];
  if (rows.first > rows.total || local > rows.total - rows.first) {
    throw ShapeError("dropout: a " + a.describe() + " holds " + std::to_string(local) + " rows from row " +
                     std::to_string(rows.first) + ", beyond the batch of " + std::to_string(rows.total) + " rows");
  }
  const std::size_t row_size = local == 0 ? 0 : a.numel() / local;
  if (row_size != 0 && rows.total > std::numeric_limits<std::size_t>::max() / row_size) {
    throw ShapeError("dropout: a batch of " + std::to_string(rows.total) + " rows of " + std::to_string(row_size) +
                     " elements (a " + a.describe() + ") has more elements than size_t can count");
  }
  return dropout_part(a, p, training, gen, rows.total * row_size, rows.first * row_size, where);
}

void check_dropout_p(double p, std::string_view op) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw ValueError(std::string(op) + ": p must be in [0, 1], got p = " + format_number(p));
  }
}

#define TAPEGRAD_INSTANTIATE_MASKING(T)                                                 \
  template Tensor<T> masked_fill(const Tensor<T>&, const Mask&, T, CallSite);                     \
  template Tensor<T> masked_fill(const Tensor<T>&, const Mask&, const Tensor<T>&, CallSite);     \
  template Tensor<T> dropout(const Tensor<T>&, double, bool, Generator&, CallSite);                 \
  template Tensor<T> dropout(const Tensor<T>&, double, bool, Generator&, const BatchRows&, CallSite);
TAPEGRAD_INSTANTIATE_MASKING(float)
TAPEGRAD_INSTANTIATE_MASKING(double)

}  // namespace tapegrad
