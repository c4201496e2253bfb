// Every op autograd/ops/all.h declares has an op spec (tests/ops/op_spec.h), or is one of the ops
// below still awaiting theirs, whose cases are in the older registry (higher_order/*_cases.cpp)
// and whose bad inputs are rows of tests/bad_inputs/. An op missing from both fails here by name,
// as does a spec naming no declared op.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "autograd/ops/pointwise_table.h"
#include "higher_order/declared_ops.h"
#include "higher_order/op_case.h"
#include "higher_order/op_coverage.h"
#include "tests/bad_inputs/table.h"
#include "tests/ops/op_spec.h"

namespace tapegrad::testing {

// The ops whose cases, bad-input rows and PyTorch rows have not yet moved into a spec, with the
// remark docs/ops.md prints beside each. The list only shrinks: an op that gets a spec leaves it.
const std::map<std::string, std::string>& awaiting_spec() {
  static const std::map<std::string, std::string> ops = {
      {"add", ""}, {"sub", ""}, {"mul", ""}, {"div", ""}, {"div_trunc", ""}, {"div_floor", ""}, {"pow", ""},
      {"maximum", ""}, {"minimum", ""}, {"neg", ""}, {"exp", ""}, {"expm1", ""}, {"log", ""}, {"log1p", ""},
      {"sqrt", ""}, {"rsqrt", ""}, {"reciprocal", ""}, {"sin", ""}, {"cos", ""}, {"abs", ""}, {"sign", ""},
      {"rsub", ""}, {"rdiv", ""}, {"rpow", ""}, {"cast", ""},
      {"clamp", ""}, {"where", ""}, {"topk", ""}, {"relu", ""}, {"gelu", ""}, {"sigmoid", ""}, {"tanh", ""},
      {"softplus", ""}, {"sum", ""}, {"mean", ""}, {"max", ""}, {"min", ""}, {"sum_to", ""}, {"reshape", ""}, {"view", ""}, {"permute", ""}, {"transpose", ""},
      {"unsqueeze", ""}, {"squeeze", ""}, {"expand", ""}, {"slice", ""}, {"narrow", ""}, {"concat", ""},
      {"cat", "concat's other name"}, {"chunk", ""}, {"split", ""}, {"index_select", ""}, {"matmul", ""}, {"linear", ""},
      {"einsum", "torch.einsum's grammar: ellipsis, implicit output, size-1 broadcasting"},
      {"gather", ""}, {"scatter_add", ""}, {"index_fill", ""},
      {"masked_fill", "a scalar or 0-d tensor value"}, {"softmax", ""}, {"log_softmax", ""},
      {"attention_softmax", "fused scale + mask + softmax"}, {"layer_norm", ""}, {"dropout", ""},
      {"embedding", ""},
      {"cross_entropy", "weight, ignore_index, label_smoothing; class-index or class-probability targets"},
      {"nll_loss", "weight, ignore_index"}, {"kl_div", "log_target"}, {"mse_loss", ""},
      {"binary_cross_entropy", "weight"}, {"binary_cross_entropy_with_logits", "weight, pos_weight"},
  };
  return ops;
}

namespace {

// Awaiting ops with no bad-input row, and why.
const std::map<std::string, std::string> no_bad_input_row = {
    {"cast", "takes any tensor; an undefined one is the row tensor_undefined_to (Tensor::to)"},
    {"sum_to", "the broadcasting ops' reduction of a gradient to an input's shape; add's rows reach it"},
};

// A case covers op when its name is the op, or the op is one of its underscore-separated parts
// at a word boundary: "max_axes", "unsqueeze_squeeze" and "transpose_squeeze_index_select_0d"
// cover max, squeeze and index_select; "maximum_same" does not cover max.
bool covers(const std::string& case_name, const std::string& op) {
  const std::string padded = "_" + case_name + "_";
  return padded.find("_" + op + "_") != std::string::npos;
}

std::set<std::string> spec_names() {
  std::set<std::string> names;
  for (const OpSpec& spec : op_specs()) {
    names.insert(spec.name);
    names.insert(spec.aliases.begin(), spec.aliases.end());
  }
  return names;
}

TEST(OpCoverage, EveryDeclaredOpHasASpec) {
  const auto declared = declared_ops();
  ASSERT_GT(declared.size(), 80u) << "read too few ops from the headers of autograd/ops/all.h";
  const auto specs = spec_names();
  for (const auto& op : declared) {
    EXPECT_TRUE(specs.count(op.name) || awaiting_spec().count(op.name))
        << op.name << " (autograd/ops/" << op.family << ".h) has no op spec: add one at the bottom of its test file";
  }
}

TEST(OpCoverage, OpsAwaitingASpecAreDeclaredAndHaveNone) {
  std::set<std::string> declared;
  for (const auto& op : declared_ops()) declared.insert(op.name);
  const auto specs = spec_names();
  for (const auto& [op, remark] : awaiting_spec()) {
    EXPECT_TRUE(declared.count(op)) << op << " is awaiting a spec but autograd/ops/all.h declares no such op";
    EXPECT_FALSE(specs.count(op)) << op << " has a spec now: remove it from awaiting_spec()";
  }
}

TEST(OpCoverage, EverySpecNamesADeclaredOp) {
  std::map<std::string, std::string> family;
  for (const auto& op : declared_ops()) family[op.name] = op.family;
  for (const OpSpec& spec : op_specs()) {
    EXPECT_EQ(family[spec.name], spec.family) << "spec " << spec.name << ": the op is declared in autograd/ops/"
                                              << family[spec.name] << ".h";
    for (const auto& alias : spec.aliases) EXPECT_TRUE(family.count(alias)) << spec.name << "'s alias " << alias;
  }
}

TEST(OpCoverage, OpsAwaitingASpecHaveOlderRegistryCases) {
  const auto cases = op_cases();
  for (const auto& [op, remark] : awaiting_spec()) {
    const bool covered = std::any_of(cases.begin(), cases.end(), [&](const OpCase& c) { return covers(c.name, op); });
    EXPECT_TRUE(covered) << op << " has no case in the registry (tests/higher_order/*_cases.cpp)";
  }
}

TEST(OpCoverage, OpsAwaitingASpecHaveBadInputRows) {
  std::set<std::string> entry_points;
  for (const auto& row : bad_inputs::read_table(BAD_INPUTS_DOC))
    entry_points.insert(row.entry_points.begin(), row.entry_points.end());
  std::set<std::string> pointwise;
  for (const auto& op : declared_ops())
    if (op.family == "pointwise") pointwise.insert(op.name);
  for (const auto& [op, remark] : awaiting_spec()) {
    if (pointwise.count(op) || no_bad_input_row.count(op)) continue;  // test_pointwise tests the table's rows
    EXPECT_TRUE(entry_points.count(op)) << op << " has no row in " << BAD_INPUTS_DOC;
  }
}

TEST(OpSpecs, NamesAndIdsAreUniqueAndEachSpecIsComplete) {
  std::set<std::string> names, samples, errors;
  for (const OpSpec& spec : op_specs()) {
    EXPECT_TRUE(names.insert(spec.name).second) << "two specs of " << spec.name;
    EXPECT_TRUE(spec.differentiable == Differentiable::no || !spec.samples.empty()) << spec.name << " has no samples";
    EXPECT_FALSE(spec.errors.empty()) << spec.name << " has no error inputs";
    EXPECT_TRUE(!spec.pytorch.empty() || !spec.no_pytorch.empty())
        << spec.name << " has no PyTorch name: give one, or say in no_pytorch why not";
    for (const auto& c : spec.samples) EXPECT_TRUE(samples.insert(c.name).second) << "sample " << c.name << " twice";
    for (const auto& e : spec.errors) EXPECT_TRUE(errors.insert(e.id).second) << "error input " << e.id << " twice";
  }
}

TEST(OpCoverage, ReadsEveryDeclarationFormOfAHeader) {
  const std::string header = R"(
template <class T> Tensor<T> first(const Tensor<T>& a, CallSite where = std::source_location::current());
template <class T, std::integral D> ValuesIndices<T> second(const Tensor<T>& a, D dim, bool keepdim = false,
    CallSite where = std::source_location::current()) {  // a comment: not_an_op(CallSite where)
  return detail::helper(a, where);
}
namespace detail {
template <class T> Tensor<T> hidden(const Tensor<T>& a, CallSite where);
}
#define MACRO(name) \
  template <class T> Tensor<T> name(const Tensor<T>& a, CallSite where);
template <class T> Tensor<T> first(const Tensor<T>& a, Index axis, CallSite where);
)";
  EXPECT_EQ(ops_declared_in(header), (std::vector<std::string>{"first", "second"}));
}

TEST(OpCoverage, CoversMatchesWholeParts) {
  EXPECT_TRUE(covers("max", "max"));
  EXPECT_TRUE(covers("max_axes", "max"));
  EXPECT_TRUE(covers("unsqueeze_squeeze", "squeeze"));
  EXPECT_TRUE(covers("transpose_squeeze_index_select_0d", "index_select"));
  EXPECT_FALSE(covers("maximum_same", "max"));
  EXPECT_FALSE(covers("unsqueeze_x", "squeeze"));
}

}  // namespace
}  // namespace tapegrad::testing
