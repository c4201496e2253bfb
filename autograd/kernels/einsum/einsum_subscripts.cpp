#include "autograd/kernels/einsum/einsum_subscripts.h"

#include <algorithm>
#include <map>
#include <string>

namespace tapegrad::kernels {

namespace {

// An ellipsis while parsing: one '.' in an operand's or the output's letters.
constexpr char kEllipsis = '.';
constexpr std::string_view kAllLetters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

bool is_letter(char c) { return kAllLetters.find(c) != std::string_view::npos; }

// A group of subscripts as the user wrote it: the '.' marker shown as "...".
std::string as_written(const std::string& letters) {
  std::string s;
  for (char c : letters) s += c == kEllipsis ? std::string("...") : std::string(1, c);
  return s;
}

std::string operand_name(std::size_t k, const std::vector<Shape>& shapes) {
  return "operand " + std::to_string(k) + " " + format_shape(shapes[k]);
}

// The subscripts split into operands and output, each ellipsis kept as one '.', the output made
// explicit (torch's implicit form: ellipsis dims, then the letters seen exactly once, sorted).
EinsumEquation parse(std::string_view subscripts, std::size_t num_operands, const std::string& where) {
  EinsumEquation eq;
  eq.operands.emplace_back();
  bool has_arrow = false;
  for (std::size_t pos = 0; pos < subscripts.size(); ++pos) {
    const char c = subscripts[pos];
    std::string& group = has_arrow ? eq.output : eq.operands.back();
    if (c == ' ') continue;
    if (c == '-' && pos + 1 < subscripts.size() && subscripts[pos + 1] == '>') {
      if (has_arrow) throw ValueError(where + ": \"->\" appears more than once");
      has_arrow = true;
      ++pos;
    } else if (c == ',') {
      if (has_arrow) throw ValueError(where + ": ',' after \"->\"; the output is a single list of indices");
      eq.operands.emplace_back();
    } else if (is_letter(c)) {
      group.push_back(c);
    } else if (c == '.') {
      if (subscripts.substr(pos, 3) != "...")
        throw ValueError(where + ": '.' at position " + std::to_string(pos) + " is not part of an ellipsis \"...\"");
      if (has_letter(group, kEllipsis)) {
        throw ValueError(where + ": " +
                         (has_arrow ? std::string("the output") : "operand " + std::to_string(eq.operands.size() - 1)) +
                         " has a second ellipsis \"...\" at position " + std::to_string(pos) + "; one may stand "
                         "for all its unnamed dims");
      }
      group.push_back(kEllipsis);
      pos += 2;
    } else {
      throw ValueError(where + ": invalid character '" + std::string(1, c) + "' at position " + std::to_string(pos) +
                       "; indices are letters a-z, A-Z, operands are separated by ',' and the output follows \"->\"");
    }
  }
  if (eq.operands.size() != num_operands) {
    throw ValueError(where + ": the subscripts describe " + std::to_string(eq.operands.size()) + " operand(s) but " +
                     std::to_string(num_operands) + " were given");
  }
  if (has_arrow) {
    for (char c : eq.output)
      if (c != kEllipsis && std::count(eq.output.begin(), eq.output.end(), c) > 1)
        throw ValueError(where + ": output index '" + std::string(1, c) + "' appears more than once");
    return eq;
  }
  std::string all;
  for (const auto& s : eq.operands) all += s;
  if (has_letter(all, kEllipsis)) eq.output.push_back(kEllipsis);
  std::string once;
  for (char c : all)
    if (c != kEllipsis && std::count(all.begin(), all.end(), c) == 1) once.push_back(c);
  std::sort(once.begin(), once.end());  // ASCII: A-Z before a-z, as torch
  eq.output += once;
  return eq;
}

// Replaces every ellipsis by letters the subscripts leave unused, one per dim of the broadcast
// ellipsis shape, aligned from the right: operand k's covers its rank minus its letters. Returns
// those letters.
std::string expand_ellipses(EinsumEquation& eq, const std::vector<Shape>& shapes, const std::string& where) {
  std::vector<std::size_t> covered(shapes.size(), 0);
  std::string used = eq.output;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const std::string& own = eq.operands[k];
    used += own;
    const bool has_ellipsis = has_letter(own, kEllipsis);
    const std::size_t named = own.size() - (has_ellipsis ? 1 : 0), rank = shapes[k].size();
    if (has_ellipsis ? rank < named : rank != named) {
      throw ShapeError(where + ": operand " + std::to_string(k) + " has " + std::to_string(rank) + " dims " +
                       format_shape(shapes[k]) + " but its subscripts \"" + as_written(own) + "\" need " +
                       (has_ellipsis ? "at least " : "") + std::to_string(named));
    }
    if (has_ellipsis) covered[k] = rank - named;
  }
  const std::size_t rank = *std::max_element(covered.begin(), covered.end());
  std::string fresh;
  for (char c : kAllLetters)
    if (fresh.size() < rank && !has_letter(used, c)) fresh.push_back(c);
  if (fresh.size() < rank) {
    throw ValueError(where + ": the ellipsis covers " + std::to_string(rank) + " dims, more than the " +
                     std::to_string(fresh.size()) + " letters the subscripts leave unused; einsum names at most " +
                     std::to_string(kAllLetters.size()) + " distinct indices");
  }
  const auto expand = [](std::string& letters, const std::string& dims) {
    if (const auto at = letters.find(kEllipsis); at != std::string::npos) letters.replace(at, 1, dims);
  };
  for (std::size_t k = 0; k < shapes.size(); ++k) expand(eq.operands[k], fresh.substr(rank - covered[k]));
  expand(eq.output, fresh);
  return fresh;
}

// Every letter's size, broadcasting across operands (equal, or 1); `ellipsis_dims` are the
// letters an ellipsis became, for messages in the user's terms.
EinsumSizes broadcast_sizes(const EinsumEquation& eq, const std::vector<Shape>& shapes,
                            const std::string& ellipsis_dims, const std::string& where) {
  EinsumSizes sizes;
  std::map<char, std::size_t> sized_by;  // the operand the letter's size (when not 1) was read from
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const std::string& letters = eq.operands[k];
    for (std::size_t d = 0; d < letters.size(); ++d) {
      const char c = letters[d];
      const std::size_t size = shapes[k][d], first = letters.find(c);
      if (first < d) {  // a diagonal: its axes must match exactly, as in torch
        if (shapes[k][first] != size) {
          throw ShapeError(where + ": index '" + std::string(1, c) + "' is repeated in " + operand_name(k, shapes) +
                           " with sizes " + std::to_string(shapes[k][first]) + " and " + std::to_string(size) +
                           "; a diagonal needs equal sizes");
        }
        continue;
      }
      const auto [it, is_new] = sizes.emplace(c, size);
      if (is_new || it->second == size || size == 1) {
        if (is_new) sized_by[c] = k;
        continue;
      }
      if (it->second == 1) {
        it->second = size;
        sized_by[c] = k;
        continue;
      }
      const std::size_t j = sized_by[c];
      if (has_letter(ellipsis_dims, c)) {
        throw ShapeError(where + ": the dims \"...\" covers do not broadcast (aligned from the right): dim " +
                         std::to_string(eq.operands[j].find(c)) + " of " + operand_name(j, shapes) + " has size " +
                         std::to_string(it->second) + " but dim " + std::to_string(d) + " of " +
                         operand_name(k, shapes) + " has size " + std::to_string(size));
      }
      throw ShapeError(where + ": index '" + std::string(1, c) + "' has size " + std::to_string(it->second) + " in " +
                       operand_name(j, shapes) + " but size " + std::to_string(size) + " in " +
                       operand_name(k, shapes) + "; sizes must be equal or 1");
    }
  }
  for (char c : eq.output)
    if (!sizes.count(c))
      throw ValueError(where + ": output index '" + std::string(1, c) + "' appears in no operand");
  return sizes;
}

}  // namespace

ResolvedEinsum resolve_einsum(std::string_view subscripts, const std::vector<Shape>& shapes) {
  const std::string where = "einsum(\"" + std::string(subscripts) + "\")";
  EinsumEquation eq = parse(subscripts, shapes.size(), where);
  const std::string ellipsis_dims = expand_ellipses(eq, shapes, where);
  ResolvedEinsum r{{{}, eq.output}, {}, broadcast_sizes(eq, shapes, ellipsis_dims, where)};
  // A size-1 axis whose letter has another size leaves its operand: constant along the letter.
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    std::string& letters = r.eq.operands.emplace_back();
    Shape& shape = r.shapes.emplace_back();
    for (std::size_t d = 0; d < shapes[k].size(); ++d) {
      const char c = eq.operands[k][d];
      if (shapes[k][d] == 1 && r.sizes.at(c) != 1) continue;
      letters.push_back(c);
      shape.push_back(shapes[k][d]);
    }
  }
  return r;
}

}  // namespace tapegrad::kernels
