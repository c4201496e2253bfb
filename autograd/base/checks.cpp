#include "autograd/base/checks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <sstream>

#include <sys/resource.h>
#include <sys/sysinfo.h>

namespace tapegrad {

std::size_t normalize_axis(Index axis, std::size_t ndim, std::string_view op, const Shape& shape) {
  const auto n = static_cast<Index>(ndim);
  const Index a = axis < 0 ? axis + n : axis;
  if (a < 0 || a >= n) {
    throw ValueError(std::string(op) + ": axis " + std::to_string(axis) + " is out of range for a tensor of shape " +
                     format_shape(shape) + " (" + std::to_string(ndim) + " dims)");
  }
  return static_cast<std::size_t>(a);
}

bool is_scalar_axis(Index axis, const Shape& shape, std::string_view op) {
  if (!shape.empty()) return false;
  if (axis != 0 && axis != -1) {
    throw ValueError(std::string(op) + ": axis " + std::to_string(axis) +
                     " is out of range [-1, 0] for a 0-d tensor (shape [])");
  }
  return true;
}

namespace {

// Sizes multiply in std::size_t but are used as signed offsets (kernels::Strides are ptrdiff_t).
constexpr std::size_t kMaxElements = static_cast<std::size_t>(PTRDIFF_MAX);

// What one allocation can get, and where that limit comes from: physical memory plus swap (Linux's
// default overcommit refuses any single allocation larger than that; a smaller one that cannot be
// met ends with the OOM killer, which no check here can foresee), or the address-space limit
// (ulimit -v) when that is lower. Read once.
struct MemoryLimit {
  std::size_t bytes = SIZE_MAX;
  const char* source = "";
};

const MemoryLimit& memory_limit() {
  static const MemoryLimit limit = [] {
    MemoryLimit l;
    struct sysinfo info {};
    if (sysinfo(&info) == 0) {
      l = {(static_cast<std::size_t>(info.totalram) + static_cast<std::size_t>(info.totalswap)) * info.mem_unit,
           "of RAM + swap"};
    }
    struct rlimit as {};
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY && as.rlim_cur < l.bytes) {
      l = {static_cast<std::size_t>(as.rlim_cur), "of address space (ulimit -v)"};
    }
    return l;
  }();
  return limit;
}

// "512 B", "37.5 GiB", "8 TiB": a byte count as a person reads it.
std::string format_bytes(double bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  std::size_t unit = 0;
  while (bytes >= 1024.0 && unit + 1 < std::size(units)) {
    bytes /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, bytes == std::floor(bytes) ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
  return text;
}

}  // namespace

std::size_t checked_numel(const Shape& shape, std::string_view op, std::string_view what) {
  // The product of the non-zero sizes must fit, not only the element count: strides, row counts
  // and the shapes of reductions are products of some of the sizes, and [2^32,2^32,0] holds no
  // element yet summing over its last axis would ask for 2^64. No division: every op calls this.
  std::size_t nonzero = 1;
  bool empty = false;
  for (const std::size_t d : shape) {
    if (d == 0) {
      empty = true;
    } else if (__builtin_mul_overflow(nonzero, d, &nonzero) || nonzero > kMaxElements) {
      const auto negative = std::find_if(shape.begin(), shape.end(), [](std::size_t s) { return s > kMaxElements; });
      throw ValueError(std::string(op) + ": " + std::string(what) + " " + format_shape(shape) +
                       " has more elements than fit in memory: its sizes multiply past 2^63" +
                       (negative == shape.end() ? ""
                                                : " (size " + std::to_string(*negative) + " is " +
                                                      std::to_string(static_cast<std::int64_t>(*negative)) +
                                                      " converted to size_t?)"));
    }
  }
  return empty ? 0 : nonzero;
}

const Shape& allocatable(const Shape& shape, std::size_t element_size, std::string_view op, std::string_view what) {
  const std::size_t numel = checked_numel(shape, op, what);
  const MemoryLimit& limit = memory_limit();
  std::size_t bytes;
  if (__builtin_mul_overflow(numel, element_size, &bytes) || bytes > limit.bytes) {
    throw ValueError(std::string(op) + ": " + std::string(what) + " " + format_shape(shape) + " needs " +
                     format_bytes(static_cast<double>(numel) * static_cast<double>(element_size)) +
                     ", more than can fit in memory (this machine has " +
                     format_bytes(static_cast<double>(limit.bytes)) + " " + limit.source + ")");
  }
  return shape;
}

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

ValueError undefined_argument(std::string_view op, std::string_view argument) {
  return ValueError(std::string(op) + ": argument '" + std::string(argument) + "' is an undefined tensor");
}

}  // namespace tapegrad
