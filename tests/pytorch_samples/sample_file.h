#pragma once
// The samples generate_samples.py writes (samples.json + samples.bin): PyTorch's inputs, outputs
// and gradients of sum(out * G), read back exactly (doubles travel as raw float64).
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/memory/array_allocator.h"  // before xtensor: it sets xt::xarray's allocator
#include <xtensor/xarray.hpp>

#include "autograd/core/tensor.h"

namespace tapegrad::pytorch_samples {

struct TensorData {
  int leaf = -1;       // the same number for one torch tensor passed twice
  std::string dtype;   // "float64", "int64" or "bool"
  Shape shape;
  xt::xarray<double> values;    // float64 data
  bool requires_grad = false;   // float64 only, as the sample made it (class weights do not)
  xt::xarray<Index> integers;   // int64 and bool data
  std::optional<xt::xarray<double>> grad;  // an input's gradient in PyTorch (none when unused)
  std::optional<xt::xarray<double>> seed;  // an output's G
  bool is_float() const { return dtype == "float64"; }
};

// One positional or keyword argument, or an output, as generate_samples.py's `encode` wrote it.
struct Value {
  enum class Kind { tensor, list, number, integer, boolean, text, dtype, none };
  Kind kind = Kind::none;
  std::shared_ptr<const TensorData> tensor;
  std::vector<Value> list;
  double number = 0;
  Index integer = 0;
  bool boolean = false;
  std::string text;  // a str or a dtype's name
};

struct Sample {
  std::string id;  // "op#index shapes kwargs", as in differences.txt
  std::string op;  // the OpInfo's name.variant
  Value input;
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
  std::vector<Value> outputs;
};

struct SampleFile {
  std::string torch_version;
  std::vector<Sample> samples;
  std::map<std::string, std::string> left_out;  // id -> why the generator left it out
};

// Reads dir/samples.json and dir/samples.bin; std::runtime_error naming the file when one is
// missing or malformed.
SampleFile load_samples(const std::string& dir);

}  // namespace tapegrad::pytorch_samples
