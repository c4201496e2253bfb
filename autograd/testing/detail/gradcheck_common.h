#pragma once
// What gradcheck's float64 and float32 modes share (autograd/testing/gradcheck.h): input validation, the
// accumulation and input-integrity checks, the analytic Jacobian with the ops that read each
// input, and the search for the worst element with its report. Instantiated for float and double
// in gradcheck_common.cpp.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autograd/testing/gradcheck.h"

namespace tapegrad::detail {

template <class T>
using CheckedFunction = std::function<Tensor<T>(const std::vector<Tensor<T>>&)>;

// "input 1 ('w')"
template <class T>
std::string input_label(std::size_t i, const Tensor<T>& t);

// ValueError for an undefined or non-leaf input, or when no input requires a gradient (nothing to
// compare would be a silent pass). `who` names the caller in the message.
template <class T>
void validate_inputs(const std::vector<Tensor<T>>& inputs, const char* who);

// The function's output shape, from two plain forwards at the inputs as given. ValueError when
// the function returns an undefined tensor, or results that differ in a bit: finite differences
// of a function that is not deterministic read its noise as derivative. ShapeError naming both
// shapes when their shapes differ.
template <class T>
Shape deterministic_output_shape(const CheckedFunction<T>& fn, const std::vector<Tensor<T>>& inputs);

// ShapeError naming gradcheck and both shapes unless `actual`, the shape of the function's result
// with `moved` (e.g. "input 0 moved by a finite-difference step"), is `expected`, its shape at the
// inputs as given: a Jacobian needs a result shape that does not depend on the input values.
void require_output_shape(const Shape& expected, const Shape& actual, const std::string& moved);

// ValueError when the Jacobians [output elements, checked input elements] cannot fit in memory.
template <class T>
void require_jacobian_fits(const Shape& output_shape, const std::vector<Tensor<T>>& inputs);

// One forward and two backward walks seeded with a fixed random tensor. The message of what went
// wrong, or nothing: the forward or the backward changed an input's value (bitwise) or its version
// (an in-place write), or the second walk did not double a checked input's gradient (a backward
// that overwrites instead of adding). Leaves every input's gradient cleared.
template <class T>
std::optional<std::string> check_accumulation_and_integrity(const CheckedFunction<T>& fn,
                                                            const std::vector<Tensor<T>>& inputs);

// The analytic Jacobian, one backward per output element with a one-hot seed. An input with no
// elements has an empty block (nothing to compare: it passes).
struct AnalyticJacobian {
  Shape output_shape;
  std::vector<xt::xarray<double>> blocks;  // per input: [numel(output), numel(input)]; empty when not checked
  std::vector<std::string> read_by;        // per input: the ops that read it directly, with call sites
};
template <class T>
AnalyticJacobian analytic_jacobian(const CheckedFunction<T>& fn, const std::vector<Tensor<T>>& inputs,
                                   const Shape& output_shape);

// Numeric Jacobian columns: numeric[i][e] is d output / d input i element e, flattened (empty
// for inputs not checked).
using NumericJacobian = std::vector<std::vector<xt::xarray<double>>>;

struct WorstElement {
  std::size_t input = 0, element = 0, output = 0;
  double analytic = 0.0, numeric = 0.0;
  std::size_t mismatches = 0;  // how many elements fail
};
// Allowed |analytic - numeric| for input i, element e, output element o.
using Tolerance = std::function<double(std::size_t i, std::size_t e, std::size_t o, double analytic, double numeric)>;
// The element with the largest excess of |analytic - numeric| over its tolerance (a non-finite
// value counts as an infinite excess), or nothing when every element passes.
std::optional<WorstElement> worst_element(const AnalyticJacobian& analytic, const NumericJacobian& numeric,
                                          const Tolerance& tolerance);

// The failed result for `worst`: message and GradcheckResult::worst. `numeric_error` is the
// estimated error of the numeric value, `how` says how it and the tolerance were reached.
template <class T>
GradcheckResult report(const WorstElement& worst, const AnalyticJacobian& analytic, const std::vector<Tensor<T>>& inputs,
                       double numeric_error, const std::string& how);

}  // namespace tapegrad::detail
