// Every op autograd/ops/all.h declares has an op spec (tests/ops/op_spec.h), and every spec names
// a declared op; an op missing its spec fails here by name. Each spec is complete: samples (unless
// it has no derivative), error inputs, and PyTorch names or the reason for none.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "higher_order/declared_ops.h"
#include "tests/ops/op_spec.h"

namespace tapegrad::testing {
namespace {

TEST(OpCoverage, EveryDeclaredOpHasASpec) {
  const auto declared = declared_ops();
  ASSERT_GT(declared.size(), 75u) << "read too few ops from the headers of autograd/ops/all.h";
  std::set<std::string> specs;
  for (const OpSpec& spec : op_specs()) {
    specs.insert(spec.name);
    specs.insert(spec.aliases.begin(), spec.aliases.end());
  }
  for (const auto& op : declared) {
    EXPECT_TRUE(specs.count(op.name)) << op.name << " (autograd/ops/" << op.family
                                      << ".h) has no op spec: add one at the bottom of its test file";
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
template <class T> Tensor<T> third(const Mask& m, Scalar<T> s, CallSite site = std::source_location::current());
template <class T> IndexArray fourth(const Tensor<T>& x, std::optional<Index> dim = std::nullopt);
void check_something(double p, std::string_view op);
)";
  EXPECT_EQ(ops_declared_in(header), (std::vector<std::string>{"first", "second", "third", "fourth"}));
}

}  // namespace
}  // namespace tapegrad::testing
