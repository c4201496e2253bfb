// libFuzzer target: einsum's subscript parser, its shape checks, the planned evaluation and the
// backward, through the public tapegrad::einsum. The input decodes into subscripts and 1-3 small
// operand shapes (einsum_input.h).
//
// Property: einsum returns a result or throws a tapegrad::Error; ASan/UBSan stop on any bad
// memory access or overflow. When it returns, forward and backward must equal a naive loop over
// every index assignment: the operands hold small integers, so both are exact in double and
// compared bit for bit. A mismatch aborts with a message.
#include <cstdio>
#include <cstdlib>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/kernels/einsum/einsum_subscripts.h"
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "fuzz/einsum_input.h"

namespace {

using namespace tapegrad;

// Index assignments the naive reference may walk; larger (valid) problems are skipped, so that
// one input takes milliseconds.
constexpr std::size_t kMaxAssignments = 1 << 14;

// Small integers, different per operand and element: exact products and sums in double.
xt::xarray<double> operand_values(const Shape& shape, std::size_t k) {
  auto x = xt::xarray<double>::from_shape(shape);
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<double>((i * 7 + k * 3) % 9) - 4.0;
  return x;
}

// Row-major flat index of the element that `letters` pick under `value` (letter -> index).
std::size_t flat_index(const std::string& letters, const Shape& shape, const std::map<char, std::size_t>& value) {
  std::size_t flat = 0;
  for (std::size_t d = 0; d < letters.size(); ++d) flat = flat * shape[d] + value.at(letters[d]);
  return flat;
}

struct Reference {
  xt::xarray<double> out;
  std::vector<xt::xarray<double>> grads;  // d sum(out * seed) / d operand k
};

// out[output letters] = sum over every assignment of prod_k operand_k[its letters], and each
// operand's gradient under the output gradient `seed`, by walking every assignment.
Reference naive_einsum(const kernels::EinsumEquation& eq, const kernels::EinsumSizes& sizes,
                       const std::vector<xt::xarray<double>>& values, const xt::xarray<double>& seed) {
  Shape out_shape;
  for (char c : eq.output) out_shape.push_back(sizes.at(c));
  Reference ref{xt::zeros<double>(out_shape), {}};
  for (const auto& v : values) ref.grads.push_back(xt::zeros<double>(v.shape()));
  std::vector<char> letters;
  for (const auto& [c, size] : sizes) letters.push_back(c);
  std::map<char, std::size_t> value;
  for (char c : letters) value[c] = 0;
  for (const auto& [c, size] : sizes)
    if (size == 0) return ref;  // no assignment at all
  const std::size_t n = values.size();
  std::vector<Shape> shapes;
  for (const auto& v : values) shapes.emplace_back(v.shape().begin(), v.shape().end());
  std::vector<std::size_t> at(n);
  while (true) {
    for (std::size_t k = 0; k < n; ++k) at[k] = flat_index(eq.operands[k], shapes[k], value);
    const std::size_t o = flat_index(eq.output, out_shape, value);
    double product = 1;
    for (std::size_t k = 0; k < n; ++k) product *= values[k].data()[at[k]];
    ref.out.data()[o] += product;
    for (std::size_t k = 0; k < n; ++k) {
      double others = seed.data()[o];
      for (std::size_t j = 0; j < n; ++j)
        if (j != k) others *= values[j].data()[at[j]];
      ref.grads[k].data()[at[k]] += others;
    }
    std::size_t d = letters.size();
    while (d > 0 && ++value[letters[d - 1]] == sizes.at(letters[d - 1])) value[letters[--d]] = 0;
    if (d == 0) return ref;
  }
}

bool same(const xt::xarray<double>& a, const xt::xarray<double>& b) { return a.shape() == b.shape() && a == b; }

// A broken property: say which, then abort so that libFuzzer saves the input.
void require(bool holds, const char* property, const std::string& subscripts) {
  if (holds) return;
  std::fprintf(stderr, "fuzz_einsum: einsum(\"%s\") broke the property: %s\n", subscripts.c_str(), property);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fuzz::EinsumInput input = fuzz::decode_einsum_input({reinterpret_cast<const char*>(data), size});
  const std::size_t n = input.shapes.size();

  // The problem's size, to skip what the naive reference cannot walk quickly. Invalid inputs
  // throw here already; tapegrad::einsum below must throw for them too. The reference walks the
  // resolved equation (ellipses as letters, broadcast size-1 axes dropped from the operands).
  kernels::ResolvedEinsum resolved;
  bool valid = true;
  try {
    resolved = kernels::resolve_einsum(input.subscripts, input.shapes);
  } catch (const Error&) {
    valid = false;
  }
  if (valid) {
    std::size_t assignments = 1;
    for (const auto& [c, s] : resolved.sizes) assignments *= std::max<std::size_t>(s, 1);
    if (assignments > kMaxAssignments) return 0;
  }

  std::vector<xt::xarray<double>> values;
  std::vector<Tensor<double>> operands;
  for (std::size_t k = 0; k < n; ++k) {
    const bool alias = input.alias && k == 1;
    values.push_back(alias ? values[0] : operand_values(input.shapes[k], k));
    operands.push_back(alias ? operands[0] : Tensor<double>(values[k], /*requires_grad=*/true));
  }
  GradientTape tape;
  Tensor<double> out;
  try {
    out = einsum(input.subscripts, operands);
  } catch (const Error&) {
    require(!valid, "the op rejects what resolve_einsum accepts", input.subscripts);
    return 0;
  }
  require(valid, "the op accepts what resolve_einsum rejects", input.subscripts);

  const xt::xarray<double> seed = operand_values(out.shape(), 5);
  tape.backward(out, seed);
  std::vector<xt::xarray<double>> resolved_values = values;  // same elements, broadcast axes dropped
  for (std::size_t k = 0; k < n; ++k) resolved_values[k].reshape(resolved.shapes[k]);
  Reference ref = naive_einsum(resolved.eq, resolved.sizes, resolved_values, seed);
  for (std::size_t k = 0; k < n; ++k) ref.grads[k].reshape(input.shapes[k]);
  require(same(out.value(), ref.out), "forward equals the naive reference", input.subscripts);
  for (std::size_t k = 0; k < n; ++k) {
    if (input.alias && k == 1) continue;
    xt::xarray<double> expected = ref.grads[k];
    if (input.alias && k == 0) expected += ref.grads[1];
    require(same(operands[k].grad(), expected), "backward equals the naive reference", input.subscripts);
  }
  return 0;
}
