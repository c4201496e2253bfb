#include "autograd/ops/shape.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "autograd/ops/detail/dims.h"
#include "autograd/core/record.h"
#include "autograd/kernels/layout/broadcast.h"
#include "autograd/kernels/simd/row_kernels.h"
#include "autograd/kernels/simd/strided_copy.h"
#include "autograd/ops/reduce.h"

namespace tapegrad {

namespace {

using detail::accumulate;
using detail::edge;
using detail::make_result;
using detail::should_record;
using kernels::Strides;

// "[2,-1]": a requested shape or axis list as given (it may hold negative entries).
std::string format_dims(const std::vector<Index>& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

template <class T>
Shape shape_of(const xt::xarray<T>& x) {
  return Shape(x.shape().begin(), x.shape().end());
}

// x's elements, in order, in a new array of `shape` (same element count).
template <class T>
xt::xarray<T> with_shape(const xt::xarray<T>& x, const Shape& shape) {
  xt::xarray<T> out = xt::xarray<T>::from_shape(shape);
  std::copy_n(x.data(), x.size(), out.data());
  return out;
}

// The ops that only rename the shape (reshape, unsqueeze, squeeze): a copy forward; the gradient
// is renamed back. `value` is a's value in the new shape.
template <class T>
Tensor<T> reshaped(const char* op, std::source_location where, const Tensor<T>& a, xt::xarray<T> value) {
  return make_result(op, where, std::move(value), should_record(a),
                     [a = edge(a)](Tensor<T> g) { accumulate(a, reshape(std::move(g), detail::as_dims(a.shape()))); });
}

template <class T>
Tensor<T> reshaped(const char* op, std::source_location where, const Tensor<T>& a, const Shape& shape) {
  return reshaped(op, where, a, with_shape(a.value(), shape));
}

// The ops that reorder axes (permute, transpose): output axis i is input axis perm[i]; the
// gradient goes back through the inverse permutation.
template <class T>
Tensor<T> permuted(const char* op, std::source_location where, const Tensor<T>& a, const std::vector<std::size_t>& perm) {
  std::vector<std::size_t> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = i;
  return make_result(op, where, kernels::permute_copy(a.value(), perm), should_record(a),
                     [a = edge(a), inverse = std::vector<Index>(inverse.begin(), inverse.end())](const Tensor<T>& g) {
                       accumulate(a, permute(g, inverse));
                     });
}

// Elements start, start + step, ... (length of them) along one axis, all of every other axis.
struct Window {
  std::size_t axis, start, length, step;
};

// Where a window lies inside a row-major array of shape `whole`: its own shape, the element offset
// of its first element and the strides that walk it.
struct WindowLayout {
  Shape shape;
  std::ptrdiff_t offset;
  Strides strides;
};

WindowLayout layout_of(const Shape& whole, const Window& w) {
  WindowLayout l{whole, 0, kernels::row_major_strides(whole)};
  l.shape[w.axis] = w.length;
  l.offset = static_cast<std::ptrdiff_t>(w.start) * l.strides[w.axis];
  l.strides[w.axis] *= static_cast<std::ptrdiff_t>(w.step);
  return l;
}

// The window of `whole` as a new contiguous array.
template <class T>
xt::xarray<T> gather(const xt::xarray<T>& whole, const Window& w) {
  const WindowLayout l = layout_of(shape_of(whole), w);
  xt::xarray<T> part = xt::xarray<T>::from_shape(l.shape);
  // An empty array may have no storage at all (a null data()): no offset may be applied to it.
  if (part.size() == 0) return part;
  kernels::strided_copy(l.shape, whole.data() + l.offset, l.strides, part.data(), kernels::row_major_strides(l.shape));
  return part;
}

// Writes `part` (shaped like the window) into the window of `whole`.
template <class T>
void scatter(const xt::xarray<T>& part, const Window& w, xt::xarray<T>& whole) {
  if (part.size() == 0) return;  // see gather
  const WindowLayout l = layout_of(shape_of(whole), w);
  kernels::strided_copy(l.shape, part.data(), kernels::row_major_strides(l.shape), whole.data() + l.offset, l.strides);
}

template <class T>
Tensor<T> unwindowed(const Tensor<T>& part, const Shape& whole, const Window& w);

// One window of `a` as a tensor of its own (slice, narrow, split, chunk); the gradient lands in
// the window of a zero gradient of a's shape.
template <class T>
Tensor<T> windowed(const char* op, std::source_location where, const Tensor<T>& a, const Window& w) {
  return make_result(op, where, gather(a.value(), w), should_record(a),
                     [a = edge(a), w](const Tensor<T>& g) { accumulate(a, unwindowed(g, a.shape(), w)); });
}

// The backward of windowed: `part` written into the window of zeros of shape `whole`. Its own
// backward takes the window out again.
template <class T>
Tensor<T> unwindowed(const Tensor<T>& part, const Shape& whole, const Window& w) {
  xt::xarray<T> out = xt::zeros<T>(whole);
  scatter(part.value(), w, out);
  return make_result("slice_backward", std::source_location::current(), std::move(out), should_record(part),
                     [part = edge(part), w](const Tensor<T>& g) {
                       accumulate(part, windowed("slice", std::source_location::current(), g, w));
                     });
}

// Consecutive windows of the given sizes along axis (split, chunk).
template <class T>
std::vector<Tensor<T>> pieces(const char* op, std::source_location where, const Tensor<T>& a, std::size_t axis, const std::vector<std::size_t>& sizes) {
  std::vector<Tensor<T>> out;
  out.reserve(sizes.size());
  std::size_t start = 0;
  for (const std::size_t size : sizes) {
    out.push_back(windowed(op, where, a, Window{axis, start, size, 1}));
    start += size;
  }
  return out;
}

// A list of `count` pieces, each a tensor and its node, checked like an array of them: a huge axis
// of an empty tensor cut into pieces of 1 would otherwise ask for 2^40 of them.
template <class T>
void check_piece_count(const char* op, std::size_t count) {
  allocatable(Shape{count}, sizeof(Tensor<T>) + sizeof(Node<T>), op, "the list of pieces");
}

// n cut into pieces of `size` (the last one smaller when size does not divide n); n, size > 0.
template <class T>
std::vector<std::size_t> even_sizes(const char* op, std::size_t n, std::size_t size) {
  check_piece_count<T>(op, n / size + (n % size != 0));
  std::vector<std::size_t> sizes(n / size, size);
  if (n % size != 0) sizes.push_back(n % size);
  return sizes;
}

}  // namespace

// reshape's new shape for a (with its -1 inferred), or the error.
template <class T>
Shape reshape_target(const Tensor<T>& a, const std::vector<Index>& shape) {
  require_defined(a, "reshape", "a");
  const Shape in = a.shape();
  const std::size_t numel = a.numel();
  // Built only for an error: reshape runs a few hundred times a training step.
  const auto source = [&] { return format_shape(in) + " (" + std::to_string(numel) + " elements)"; };
  Shape out(shape.size());
  std::optional<std::size_t> inferred;  // the axis given as -1
  Shape given;                          // the other sizes
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (inferred) throw ValueError("reshape: only one -1 is allowed in the new shape " + format_dims(shape) + " for " + source());
      inferred = d;
    } else if (shape[d] < 0) {
      throw ValueError("reshape: size " + std::to_string(shape[d]) + " is invalid in the new shape " + format_dims(shape) +
                       " for " + source());
    } else {
      out[d] = static_cast<std::size_t>(shape[d]);
      given.push_back(out[d]);
    }
  }
  // Checked: sizes whose product wraps around 2^64 to the input's count would pass the test below.
  const std::size_t known =
      checked_numel(given, "reshape", inferred ? "the new shape without its -1" : "the new shape");
  if (inferred) {
    if (known == 0 || numel % known != 0) {
      throw ShapeError("reshape: cannot reshape " + source() + " into " + format_dims(shape) + ": the other sizes multiply to " +
                       std::to_string(known) + ", which does not divide " + std::to_string(numel));
    }
    out[*inferred] = numel / known;
  } else if (known != numel) {
    throw ShapeError("reshape: cannot reshape " + source() + " into " + format_shape(out) + " (" + std::to_string(known) +
                     " elements)");
  }
  return out;
}

template <class T>
Tensor<T> reshape(const Tensor<T>& a, const std::vector<Index>& shape, CallSite where) {
  return reshaped("reshape", where, a, reshape_target(a, shape));
}

template <class T>
Tensor<T> reshape(Tensor<T>&& a, const std::vector<Index>& shape, CallSite where) {
  const Shape out = reshape_target(a, shape);
  // No one can read the value after this: it moves instead of being copied. (A value already
  // moved out is left to a.value() below to report.)
  if (std::optional<xt::xarray<T>> value = detail::take_value_if_sole_reader(a)) {
    value->reshape(out);
    return reshaped("reshape", where, a, std::move(*value));
  }
  return reshaped("reshape", where, a, out);
}

template <class T>
Tensor<T> permute(const Tensor<T>& a, const std::vector<Index>& dims, CallSite where) {
  require_defined(a, "permute", "a");
  const Shape in = a.shape();
  if (dims.size() != in.size()) {
    throw ShapeError("permute: dims " + format_dims(dims) + " has " + std::to_string(dims.size()) +
                     " entries but the tensor of shape " + format_shape(in) + " has " + std::to_string(in.size()) + " dims");
  }
  std::vector<std::size_t> perm(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    perm[i] = normalize_axis(dims[i], in.size(), "permute", in);
    if (seen[perm[i]]) {
      throw ValueError("permute: dims " + format_dims(dims) + " is not a permutation: axis " + std::to_string(perm[i]) +
                       " appears twice (tensor of shape " + format_shape(in) + ")");
    }
    seen[perm[i]] = true;
  }
  return permuted("permute", where, a, perm);
}

template <class T>
Tensor<T> transpose(const Tensor<T>& a, Index dim0, Index dim1, CallSite where) {
  require_defined(a, "transpose", "a");
  const Shape in = a.shape();
  std::vector<std::size_t> perm(in.size());
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  // A 0-d tensor takes dims 0 and -1 (as PyTorch) and has nothing to swap.
  const bool scalar = is_scalar_axis(dim0, in, "transpose") && is_scalar_axis(dim1, in, "transpose");
  if (!scalar) {
    std::swap(perm[normalize_axis(dim0, in.size(), "transpose", in)],
              perm[normalize_axis(dim1, in.size(), "transpose", in)]);
  }
  return permuted("transpose", where, a, perm);
}

template <class T>
Tensor<T> unsqueeze(const Tensor<T>& a, Index axis, CallSite where) {
  require_defined(a, "unsqueeze", "a");
  Shape shape = a.shape();
  const auto n = static_cast<Index>(shape.size());
  if (axis < -n - 1 || axis > n) {
    throw ValueError("unsqueeze: axis " + std::to_string(axis) + " is out of range [" + std::to_string(-n - 1) + ", " +
                     std::to_string(n) + "] for a tensor of shape " + format_shape(shape));
  }
  shape.insert(shape.begin() + (axis < 0 ? axis + n + 1 : axis), 1);
  return reshaped("unsqueeze", where, a, shape);
}

template <class T>
Tensor<T> squeeze(const Tensor<T>& a, CallSite where) {
  require_defined(a, "squeeze", "a");
  Shape shape = a.shape();
  std::erase(shape, std::size_t{1});
  return reshaped("squeeze", where, a, shape);
}

template <class T>
Tensor<T> squeeze(const Tensor<T>& a, Index axis, CallSite where) {
  require_defined(a, "squeeze", "a");
  Shape shape = a.shape();
  if (is_scalar_axis(axis, shape, "squeeze")) return reshaped("squeeze", where, a, shape);  // as PyTorch
  const std::size_t d = normalize_axis(axis, shape.size(), "squeeze", shape);
  if (shape[d] == 1) shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(d));
  return reshaped("squeeze", where, a, shape);
}

template <class T>
Tensor<T> expand(const Tensor<T>& a, const std::vector<Index>& shape, CallSite where) {
  require_defined(a, "expand", "a");
  const Shape in = a.shape();
  const auto context = [&] { return " (input " + format_shape(in) + ", target " + format_dims(shape) + ")"; };
  if (shape.size() < in.size()) {
    throw ShapeError("expand: the target has " + std::to_string(shape.size()) + " dims, fewer than the input's " +
                     std::to_string(in.size()) + context());
  }
  const std::size_t lead = shape.size() - in.size();
  Shape out(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const Index target = shape[d];
    const bool keep = d >= lead && target == -1;
    if (target < 0 && !keep) {
      throw ValueError("expand: size " + std::to_string(target) + " at axis " + std::to_string(d) + " is invalid" +
                       (d < lead ? " for a new leading axis" : "") + context());
    }
    if (d < lead) {
      out[d] = static_cast<std::size_t>(target);
      continue;
    }
    const std::size_t size = in[d - lead];
    out[d] = keep ? size : static_cast<std::size_t>(target);
    if (size != 1 && out[d] != size) {
      throw ShapeError("expand: axis " + std::to_string(d) + " of size " + std::to_string(size) + " cannot expand to " +
                       std::to_string(out[d]) + " (only size-1 axes stretch)" + context());
    }
  }
  allocatable(out, sizeof(T), "expand", "the output");
  return make_result("expand", where, kernels::broadcast_copy(a.value().data(), in, out), should_record(a),
                     [a = edge(a)](const Tensor<T>& g) { accumulate(a, sum_to(g, a.shape())); });
}

template <class T>
Tensor<T> slice(const Tensor<T>& a, Index axis, Index start, Index end, Index step, CallSite where) {
  require_defined(a, "slice", "a");
  const Shape in = a.shape();
  const std::size_t d = normalize_axis(axis, in.size(), "slice", in);
  if (step < 1) {
    throw ValueError("slice: step must be at least 1, got " + std::to_string(step) + " (axis " + std::to_string(axis) +
                     " of shape " + format_shape(in) + ")");
  }
  // Python's rule: a negative bound counts from the end, then both are clamped to [0, n].
  const auto n = static_cast<Index>(in[d]);
  const auto clamp = [n](Index i) { return i < 0 ? std::max<Index>(i + n, 0) : std::min(i, n); };
  const Index first = clamp(start), last = clamp(end);
  const Index length = last > first ? (last - first - 1) / step + 1 : 0;
  // With fewer than two elements the step is never taken; 1 keeps a huge step out of the strides.
  const Index taken_step = length > 1 ? step : 1;
  return windowed("slice", where, a,
                  Window{d, static_cast<std::size_t>(first), static_cast<std::size_t>(length),
                         static_cast<std::size_t>(taken_step)});
}

template <class T>
Tensor<T> narrow(const Tensor<T>& a, Index axis, Index start, Index length, CallSite where) {
  require_defined(a, "narrow", "a");
  const Shape in = a.shape();
  const std::size_t d = normalize_axis(axis, in.size(), "narrow", in);
  const auto n = static_cast<Index>(in[d]);
  // A negative start counts from the end, as in PyTorch.
  const Index first = start < 0 ? start + n : start;
  if (first < 0 || length < 0 || first > n || length > n - first) {
    throw ValueError("narrow: start " + std::to_string(start) + " and length " + std::to_string(length) +
                     " do not fit in axis " + std::to_string(axis) + " of size " + std::to_string(n) + " (shape " +
                     format_shape(in) + ")");
  }
  return windowed("narrow", where, a, Window{d, static_cast<std::size_t>(first), static_cast<std::size_t>(length), 1});
}

template <class T>
Tensor<T> concat(const std::vector<Tensor<T>>& tensors, Index axis, CallSite where) {
  if (tensors.empty()) throw ValueError("concat: needs at least one tensor, got an empty list");
  for (std::size_t i = 0; i < tensors.size(); ++i)
    require_defined(tensors[i], "concat", "tensors[" + std::to_string(i) + "]");
  const Shape first = tensors[0].shape();
  if (first.empty()) throw ShapeError("concat: tensors[0] has shape [] and a 0-d tensor has no axis to join along");
  const std::size_t d = normalize_axis(axis, first.size(), "concat", first);
  std::size_t total = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Shape s = tensors[i].shape();
    const std::string which = "concat: tensors[" + std::to_string(i) + "] has shape " + format_shape(s);
    if (s.size() != first.size()) {
      throw ShapeError(which + " (" + std::to_string(s.size()) + " dims) but tensors[0] has shape " + format_shape(first) +
                       " (" + std::to_string(first.size()) + " dims)");
    }
    for (std::size_t k = 0; k < s.size(); ++k) {
      if (k != d && s[k] != first[k]) {
        throw ShapeError(which + ", which differs from tensors[0] " + format_shape(first) + " at axis " + std::to_string(k) +
                         " (only axis " + std::to_string(d) + ", the join axis, may differ)");
      }
    }
    // Zero-size inputs can hold huge axes, whose sum must not wrap.
    if (__builtin_add_overflow(total, s[d], &total)) {
      throw ValueError(which + ": the sizes along the join axis " + std::to_string(d) + " sum past 2^64");
    }
  }
  Shape out_shape = first;
  out_shape[d] = total;
  xt::xarray<T> out = xt::xarray<T>::from_shape(allocatable(out_shape, sizeof(T), "concat", "the output"));
  std::vector<Window> windows;
  windows.reserve(tensors.size());
  std::size_t start = 0;
  for (const auto& t : tensors) {
    windows.push_back(Window{d, start, t.shape()[d], 1});
    scatter(t.value(), windows.back(), out);
    start += windows.back().length;
  }
  return make_result("concat", where, std::move(out), detail::should_record_any(tensors),
                     [tensors = detail::edges(tensors), windows, where](const Tensor<T>& g) {
                       for (std::size_t i = 0; i < tensors.size(); ++i)
                         if (tensors[i].requires_grad()) accumulate(tensors[i], windowed("slice", where, g, windows[i]));
                     });
}

template <class T>
std::vector<Tensor<T>> chunk(const Tensor<T>& a, std::size_t chunks, Index axis, CallSite where) {
  require_defined(a, "chunk", "a");
  const Shape in = a.shape();
  const std::size_t d = normalize_axis(axis, in.size(), "chunk", in);
  if (chunks == 0) throw ValueError("chunk: chunks must be at least 1, got 0 (shape " + format_shape(in) + ")");
  const std::size_t n = in[d];
  // PyTorch: an empty axis gives `chunks` empty pieces; otherwise pieces of ceil(n / chunks).
  if (n == 0) {
    check_piece_count<T>("chunk", chunks);
    return pieces("chunk", where, a, d, std::vector<std::size_t>(chunks, 0));
  }
  // ceil(n / chunks) without n + chunks - 1, which wraps for a huge chunks (and then divides by 0).
  return pieces("chunk", where, a, d, even_sizes<T>("chunk", n, n / chunks + (n % chunks != 0)));
}

template <class T>
std::vector<Tensor<T>> split(const Tensor<T>& a, std::size_t split_size, Index axis, CallSite where) {
  require_defined(a, "split", "a");
  const Shape in = a.shape();
  const std::size_t d = normalize_axis(axis, in.size(), "split", in);
  const std::size_t n = in[d];
  if (split_size == 0 && n > 0) {
    throw ValueError("split: split_size must be at least 1 for axis " + std::to_string(axis) + " of size " +
                     std::to_string(n) + " (shape " + format_shape(in) + ")");
  }
  // PyTorch: an empty axis gives one empty piece.
  return pieces("split", where, a, d, n == 0 ? std::vector<std::size_t>{0} : even_sizes<T>("split", n, split_size));
}

template <class T>
std::vector<Tensor<T>> split(const Tensor<T>& a, const std::vector<std::size_t>& sizes, Index axis, CallSite where) {
  require_defined(a, "split", "a");
  const Shape in = a.shape();
  const std::size_t d = normalize_axis(axis, in.size(), "split", in);
  // Summed against the axis size, so that sizes wrapping around 2^64 to the right total are caught.
  std::size_t total = 0;
  bool too_many = false;
  for (const std::size_t size : sizes) {
    too_many = too_many || size > in[d] - total;
    if (!too_many) total += size;
  }
  if (too_many || total != in[d]) {
    throw ValueError("split: sizes " + format_shape(sizes) + (too_many ? " sum to more than " : " sum to ") +
                     std::to_string(too_many ? in[d] : total) + " but axis " + std::to_string(axis) + " of shape " +
                     format_shape(in) + " has size " + std::to_string(in[d]));
  }
  return pieces("split", where, a, d, sizes);
}

namespace {

// index_select's kernel: seen as [outer, n, inner], output row (o, k) is input row (o, idx[k]),
// each `inner` long.
template <class T>
xt::xarray<T> select_rows(const xt::xarray<T>& x, const std::vector<Index>& idx, std::size_t d) {
  const Shape in = shape_of(x);
  const kernels::AxisLayout l = kernels::axis_layout(in, d);
  const std::size_t count = idx.size();
  Shape out_shape = in;
  out_shape[d] = count;
  xt::xarray<T> out =
      xt::xarray<T>::from_shape(allocatable(out_shape, sizeof(T), "index_select", "the output"));
  const T* xv = x.data();
  T* y = out.data();
  kernels::parallel_items(l.outer * count, l.inner, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const std::size_t o = r / count, k = r % count;
      std::copy_n(xv + (o * l.n + static_cast<std::size_t>(idx[k])) * l.inner, l.inner, y + r * l.inner);
    }
  });
  return out;
}

// index_select's backward: the rows of g added into zeros with `n` rows along axis d, row k into
// row idx[k]. Its own backward selects the rows again.
template <class T>
Tensor<T> index_add_into_zeros(const Tensor<T>& g, const IndexArray& index, std::size_t d, std::size_t n) {
  const std::vector<Index> idx(index.begin(), index.end());
  Shape whole = g.shape();
  whole[d] = n;
  const kernels::AxisLayout l = kernels::axis_layout(whole, d);
  // Each task owns a tile of columns of one outer slice and adds the rows of g into it in index
  // order, so repeated indices sum without races and in the same order at any thread count.
  constexpr std::size_t kTile = 256;
  const std::size_t count = idx.size(), tiles = (l.inner + kTile - 1) / kTile;
  xt::xarray<T> grad = xt::zeros<T>(whole);
  const T* gv = g.value().data();
  T* dv = grad.data();
  kernels::parallel_items(l.outer * tiles, count * kTile, [&](std::size_t begin, std::size_t end) {
    for (std::size_t t = begin; t < end; ++t) {
      const std::size_t o = t / tiles, c0 = (t % tiles) * kTile, c1 = std::min(l.inner, c0 + kTile);
      for (std::size_t k = 0; k < count; ++k) {
        const T* src = gv + (o * count + k) * l.inner;
        T* dst = dv + (o * l.n + static_cast<std::size_t>(idx[k])) * l.inner;
        for (std::size_t c = c0; c < c1; ++c) dst[c] += src[c];
      }
    }
  });
  return make_result("index_select_backward", std::source_location::current(), std::move(grad), should_record(g),
                     [g = edge(g), index, d](const Tensor<T>& gg) {
                       accumulate(g, index_select(gg, static_cast<Index>(d), index));
                     });
}

}  // namespace

template <class T>
Tensor<T> index_select(const Tensor<T>& a, Index axis, const IndexArray& index, CallSite where) {
  require_defined(a, "index_select", "a");
  const Shape in = a.shape();
  if (is_scalar_axis(axis, in, "index_select")) {
    // A 0-d tensor has one element along axis 0 or -1 (PyTorch): the index picks it, once.
    if (index.dimension() != 1 || index.size() != 1 || *index.begin() != 0) {
      throw ValueError("index_select: a 0-d tensor (shape []) has one element, so the index must be [0]; got an index of shape " +
                       format_shape(index.shape()) + (index.size() == 1 ? " holding " + std::to_string(*index.begin()) : ""));
    }
    return reshaped("index_select", where, a, in);
  }
  const std::size_t d = normalize_axis(axis, in.size(), "index_select", in);
  if (index.dimension() != 1) {
    throw ShapeError("index_select: index must be 1-D, got shape " + format_shape(index.shape()) + " (input shape " +
                     format_shape(in) + ")");
  }
  const std::vector<Index> idx(index.begin(), index.end());
  for (std::size_t k = 0; k < idx.size(); ++k) {
    if (idx[k] < 0 || idx[k] >= static_cast<Index>(in[d])) {
      throw ValueError("index_select: index " + std::to_string(idx[k]) + " at position " + std::to_string(k) +
                       " is out of range [0, " + std::to_string(in[d]) + ") for axis " + std::to_string(axis) +
                       " of shape " + format_shape(in));
    }
  }
  return make_result("index_select", where, select_rows(a.value(), idx, d), should_record(a),
                     [a = edge(a), index, d](const Tensor<T>& g) {
                       accumulate(a, index_add_into_zeros(g, index, d, a.shape()[d]));
                     });
}

#define TAPEGRAD_INSTANTIATE_SHAPE(T)                                                                    \
  template Tensor<T> reshape(const Tensor<T>&, const std::vector<Index>&, CallSite);                               \
  template Tensor<T> reshape(Tensor<T>&&, const std::vector<Index>&, CallSite);                                    \
  template Tensor<T> permute(const Tensor<T>&, const std::vector<Index>&, CallSite);                               \
  template Tensor<T> transpose(const Tensor<T>&, Index, Index, CallSite);                                          \
  template Tensor<T> unsqueeze(const Tensor<T>&, Index, CallSite);                                                 \
  template Tensor<T> squeeze(const Tensor<T>&, CallSite);                                                          \
  template Tensor<T> squeeze(const Tensor<T>&, Index, CallSite);                                                   \
  template Tensor<T> expand(const Tensor<T>&, const std::vector<Index>&, CallSite);                                \
  template Tensor<T> slice(const Tensor<T>&, Index, Index, Index, Index, CallSite);                                \
  template Tensor<T> narrow(const Tensor<T>&, Index, Index, Index, CallSite);                                      \
  template Tensor<T> concat(const std::vector<Tensor<T>>&, Index, CallSite);                                       \
  template std::vector<Tensor<T>> chunk(const Tensor<T>&, std::size_t, Index, CallSite);                           \
  template std::vector<Tensor<T>> split(const Tensor<T>&, std::size_t, Index, CallSite);                           \
  template std::vector<Tensor<T>> split(const Tensor<T>&, const std::vector<std::size_t>&, Index, CallSite);       \
  template Tensor<T> index_select(const Tensor<T>&, Index, const IndexArray&, CallSite);
TAPEGRAD_INSTANTIATE_SHAPE(float)
TAPEGRAD_INSTANTIATE_SHAPE(double)

}  // namespace tapegrad
