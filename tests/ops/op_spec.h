#pragma once
// One entry per op (PyTorch's OpInfo): an OpSpec names the op and holds its sample inputs, its
// error inputs, the PyTorch OpInfo names its samples are compared with, and its flags. Every sweep
// reads the registry: test_higher_order gives each sample gradcheck, gradgradcheck, jvp against
// vjp, float32 against float64 and the same bits at one and two threads, runs each error input,
// checks that every op autograd/ops/all.h declares has a spec, and writes the op list of
// docs/ops.md and the op rows of docs/bad-inputs.md; test_pytorch_samples runs PyTorch's samples
// through the spec's calls.
//
// A spec sits at the bottom of its op's test file (tests/test_cumulative.cpp shows one), defined
// with TAPEGRAD_OP_SPEC; the file is compiled into the op-spec library that both programs link.
// This is test code, not autograd/testing: its PyTorch calls read generate_samples.py's sample
// files, and its samples use the test helpers.
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "tests/ops/op_case.h"
#include "tests/support/reference.h"

namespace tapegrad::pytorch_samples {
class Call;  // a PyTorch sample's arguments (tests/pytorch_samples/call.h)
}  // namespace tapegrad::pytorch_samples

namespace tapegrad::testing {

// A bad input to the op: `call` must throw `kind` (the exception's type, as docs/bad-inputs.md
// names it) whose message holds every fragment. `entry_point` and `bad_input` are the table's
// columns; its message column is what the call really throws.
struct OpError {
  std::string id;           // a gtest name, unique among every bad-input row
  std::string entry_point;  // e.g. "`cumsum`"
  std::string bad_input;    // e.g. "dim 2 of [2,3]"
  std::string kind;         // "ValueError", "ShapeError", ...
  std::function<::testing::AssertionResult()> check;
  std::function<void()> call;
};

// gtest prints an error input by its id.
inline void PrintTo(const OpError& e, std::ostream* os) { *os << e.id; }

template <class E> constexpr const char* error_kind();
template <> constexpr const char* error_kind<ValueError>() { return "ValueError"; }
template <> constexpr const char* error_kind<ShapeError>() { return "ShapeError"; }
template <> constexpr const char* error_kind<TapeError>() { return "TapeError"; }

// The error input of `call`, which must throw E naming each fragment.
template <class E, class Call>
OpError error_input(std::string id, std::string entry_point, std::string bad_input, Call call,
                    std::vector<std::string> fragments) {
  return {std::move(id), std::move(entry_point), std::move(bad_input), error_kind<E>(),
          [call, fragments] { return throws_with<E>(call, fragments); },
          [call] { (void)call(); }};
}

// Calls tapegrad with one PyTorch sample's arguments (tests/pytorch_samples/rows.h has builders).
using PyTorchCall = std::function<std::vector<Tensor<double>>(pytorch_samples::Call&)>;

// An OpInfo name (name.variant, as torch.testing's op_db spells it) and the call it maps to.
struct PyTorchName {
  std::string opinfo;
  PyTorchCall call;
};

enum class Differentiable { no, once, twice };

struct OpSpec {
  OpSpec(std::string name, std::string family) : name(std::move(name)), family(std::move(family)) {}

  std::string name;    // the function autograd/ops/all.h declares
  std::string family;  // its header in autograd/ops/, without .h
  std::string remark;  // a remark docs/ops.md prints beside the name, or ""
  std::vector<OpCase> samples;
  std::vector<OpError> errors;
  std::vector<PyTorchName> pytorch;
  std::string no_pytorch;  // why there is no PyTorch name (required when `pytorch` is empty)
  std::vector<std::string> aliases;  // other names of the same function (cat for concat)
  Differentiable differentiable = Differentiable::twice;
  bool deterministic = true;          // the same bits at any thread count
  double float32_tolerance = 2e-4;    // float32 against float64, relative to the largest value
};

// Every registered spec, sorted by family and name.
const std::vector<OpSpec>& op_specs();
bool register_op_specs(std::vector<OpSpec> (*make)());

}  // namespace tapegrad::testing

// TAPEGRAD_OP_SPEC(cumsum) { OpSpec s{...}; ...; return s; } defines and registers one spec;
// TAPEGRAD_OP_SPECS(pointwise) { return {...}; } several, made in a loop. The body runs once,
// on first use of op_specs() (after static initialisation).
#define TAPEGRAD_OP_SPECS(id)                                                                          \
  static std::vector<::tapegrad::testing::OpSpec> tapegrad_op_specs_##id();                             \
  [[maybe_unused]] static const bool tapegrad_op_specs_registered_##id =                                \
      ::tapegrad::testing::register_op_specs(&tapegrad_op_specs_##id);                                 \
  static std::vector<::tapegrad::testing::OpSpec> tapegrad_op_specs_##id()

#define TAPEGRAD_OP_SPEC(id)                                                                           \
  static ::tapegrad::testing::OpSpec tapegrad_op_spec_##id();                                           \
  TAPEGRAD_OP_SPECS(id) { return {tapegrad_op_spec_##id()}; }                                           \
  static ::tapegrad::testing::OpSpec tapegrad_op_spec_##id()
