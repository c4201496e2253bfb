#pragma once
// A sample's arguments as an op spec's PyTorch call reads them: each read marks the argument
// used, so that a sample with an argument no row understood is reported as needing it instead
// of being run without it.
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/ops/masking.h"
#include "autograd/core/tensor.h"
#include "sample_file.h"

namespace tapegrad::pytorch_samples {

// The sample needs something tapegrad does not have: an argument, a mode, an op.
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Call {
 public:
  explicit Call(const Sample& sample);

  const Value& input() const { return sample_.input; }
  bool has_arg(std::size_t i) const { return i < sample_.args.size(); }
  const Value& arg(std::size_t i);
  const Value* kwarg(const std::string& name);  // null when absent

  // Conversions; Unsupported when the value is of another kind (what names the argument).
  Tensor<double> tensor(const Value& v);  // one leaf per torch tensor, requiring a gradient as there
  std::vector<Tensor<double>> tensors(const Value& v);
  IndexArray indices(const Value& v) const;
  Mask mask(const Value& v) const;
  double number(const Value& v) const;  // a float or an int
  Index integer(const Value& v) const;  // an int or a 0-d int64 tensor
  std::vector<Index> integers(const Value& v) const;  // a list of ints, or one int
  bool boolean(const Value& v) const;
  const std::string& text(const Value& v) const;

  // Unsupported naming the first argument the row did not read.
  void require_all_used() const;

  // The tapegrad leaves made for the sample's float64 inputs, by leaf number, and their names
  // ("args[0]", "input[1]", "kwargs.weight").
  const std::map<int, Tensor<double>>& leaves() const { return leaves_; }
  const std::map<int, std::string>& leaf_names() const { return leaf_names_; }

 private:
  const Sample& sample_;
  std::vector<bool> used_args_;
  std::vector<bool> used_kwargs_;
  std::map<const Value*, std::string> names_;  // every value's name, for messages
  std::map<int, Tensor<double>> leaves_;
  std::map<int, std::string> leaf_names_;
};

// "1.5", "[2,3]", "float64 tensor [2,3]": a value as messages show it.
std::string describe(const Value& v);

}  // namespace tapegrad::pytorch_samples
