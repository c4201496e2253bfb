#pragma once
// The checks every layer makes of its arguments, and the one way numbers and shapes are printed
// in their messages (format_shape is in autograd/base/errors.h). Ops, modules, optimisers and user code
// use the same helpers, so a message reads the same wherever it comes from.
#include <string>
#include <string_view>

#include "autograd/base/errors.h"

namespace tapegrad {

// "0.5", "-1", "1e-08", "nan", "inf": how numbers (hyper-parameters, bounds) are printed in messages.
std::string format_number(double value);

// The error for an undefined tensor argument: "<op>: argument '<argument>' is an undefined tensor".
ValueError undefined_argument(std::string_view op, std::string_view argument);

// Maps a possibly negative axis into [0, ndim); ValueError naming op, the axis and the shape.
std::size_t normalize_axis(Index axis, std::size_t ndim, std::string_view op, const Shape& shape);

// PyTorch lets an op that takes an axis name axis 0 or -1 of a 0-d tensor, as if it had one axis
// of size 1 (sum(x, {0}) of a 0-d x is x). True when `shape` is 0-d and axis is 0 or -1: the op
// then acts on the one element. False when the tensor has axes (use normalize_axis). Any other
// axis of a 0-d tensor: ValueError naming op, the axis and the range [-1, 0].
bool is_scalar_axis(Index axis, const Shape& shape, std::string_view op);

// The one overflow-checked shape product: every shape an op makes (a reshape target, an output,
// a workspace) goes through it or through allocatable, so no size wraps around. Returns the
// element count; ValueError naming op, `what` (the argument or result the shape belongs to) and
// the shape when the product of its non-zero sizes passes 2^63 (a negative size converted to
// size_t is the usual cause). A shape that passes has every partial product in range too.
std::size_t checked_numel(const Shape& shape, std::string_view op, std::string_view what = "shape");

// shape itself, or ValueError naming op, `what`, the shape and the bytes it needs when its
// elements (of element_size bytes) cannot fit in this machine's memory (RAM + swap, or ulimit -v):
// "matmul: the output [1048576,1048576] needs 8 TiB, more than can fit in memory (...)".
// Why a check where the shape is made, and not a catch of std::bad_alloc: the allocations happen
// in many places (outputs, workspaces, backward buffers, xtensor expressions), and a bad_alloc
// caught afterwards no longer knows which op or shape asked; an allocation that the check lets
// through can still fail (memory in use elsewhere), but not one that could never succeed. An
// output shaped like an input needs no check: that shape was checked when its tensor was made.
const Shape& allocatable(const Shape& shape, std::size_t element_size, std::string_view op,
                         std::string_view what = "shape");

}  // namespace tapegrad
