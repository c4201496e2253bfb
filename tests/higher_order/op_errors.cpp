// Every error input of every op spec (tests/ops/op_spec.h): the call throws the exception its spec
// names, with every fragment in the message. docs/bad-inputs.md shows them (op_docs.cpp).
#include <gtest/gtest.h>

#include "tests/ops/op_spec.h"

namespace tapegrad::testing {
namespace {

std::vector<OpError> error_inputs() {
  std::vector<OpError> all;
  for (const OpSpec& spec : op_specs()) all.insert(all.end(), spec.errors.begin(), spec.errors.end());
  return all;
}

class OpErrorInput : public ::testing::TestWithParam<OpError> {};

TEST_P(OpErrorInput, ThrowsNamingTheOpTheArgumentAndTheShapes) { EXPECT_TRUE(GetParam().check()); }

INSTANTIATE_TEST_SUITE_P(Ops, OpErrorInput, ::testing::ValuesIn(error_inputs()),
                         [](const ::testing::TestParamInfo<OpError>& info) { return info.param.id; });

}  // namespace
}  // namespace tapegrad::testing
