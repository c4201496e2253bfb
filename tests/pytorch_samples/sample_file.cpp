#include "sample_file.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <xtensor/xadapt.hpp>

namespace tapegrad::pytorch_samples {
namespace {

using nlohmann::json;

class Reader {
 public:
  explicit Reader(std::vector<double> bin) : bin_(std::move(bin)) {}

  Value value(const json& j) const {
    // One key, the value's kind. (Not `*j.items().begin()`: the proxy it binds to is a temporary.)
    const auto first = j.begin();
    const std::string kind = first.key();
    const json& body = first.value();
    Value v;
    if (kind == "tensor") {
      v.kind = Value::Kind::tensor;
      v.tensor = tensor(body);
    } else if (kind == "list") {
      v.kind = Value::Kind::list;
      for (const json& item : body) v.list.push_back(value(item));
    } else if (kind == "float") {
      v.kind = Value::Kind::number;
      v.number = std::strtod(body.get<std::string>().c_str(), nullptr);  // float.hex: exact
    } else if (kind == "int") {
      v.kind = Value::Kind::integer;
      v.integer = body.get<Index>();
    } else if (kind == "bool") {
      v.kind = Value::Kind::boolean;
      v.boolean = body.get<bool>();
    } else if (kind == "str" || kind == "dtype") {
      v.kind = kind == "str" ? Value::Kind::text : Value::Kind::dtype;
      v.text = body.get<std::string>();
    } else if (kind != "none") {
      throw std::runtime_error("samples.json: unknown value kind '" + kind + "'");
    }
    return v;
  }

 private:
  std::shared_ptr<const TensorData> tensor(const json& j) const {
    auto t = std::make_shared<TensorData>();
    t->leaf = j.at("leaf").get<int>();
    t->dtype = j.at("dtype").get<std::string>();
    t->shape = j.at("shape").get<Shape>();
    if (t->is_float()) {
      t->values = doubles(j.at("at").get<std::size_t>(), t->shape);
      t->requires_grad = j.at("requires_grad").get<bool>();
    } else {
      std::vector<Index> data;
      for (const json& x : j.at("data")) data.push_back(x.is_boolean() ? Index(x.get<bool>()) : x.get<Index>());
      t->integers = xt::adapt(data, t->shape);
    }
    if (j.contains("grad")) t->grad = doubles(j["grad"].get<std::size_t>(), t->shape);
    if (j.contains("seed")) t->seed = doubles(j["seed"].get<std::size_t>(), t->shape);
    return t;
  }

  xt::xarray<double> doubles(std::size_t at, const Shape& shape) const {
    std::size_t n = 1;
    for (std::size_t s : shape) n *= s;
    if (at + n > bin_.size()) throw std::runtime_error("samples.bin: too short for the offsets in samples.json");
    xt::xarray<double> a = xt::xarray<double>::from_shape(shape);
    std::copy_n(bin_.begin() + at, n, a.begin());
    return a;
  }

  std::vector<double> bin_;
};

std::vector<double> read_doubles(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path + " (run generate_samples.py first)");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<double> out(bytes.size() / sizeof(double));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(double));  // little-endian float64 both sides
  return out;
}

}  // namespace

SampleFile load_samples(const std::string& dir) {
  const std::string json_path = dir + "/samples.json";
  std::ifstream in(json_path);
  if (!in) throw std::runtime_error("cannot open " + json_path + " (run generate_samples.py first)");
  const json j = json::parse(in);
  const Reader reader(read_doubles(dir + "/samples.bin"));
  SampleFile file;
  file.torch_version = j.at("torch").get<std::string>();
  file.left_out = j.at("left_out").get<std::map<std::string, std::string>>();
  for (const json& s : j.at("samples")) {
    Sample sample;
    sample.id = s.at("id").get<std::string>();
    sample.op = s.at("op").get<std::string>();
    sample.input = reader.value(s.at("input"));
    for (const json& a : s.at("args")) sample.args.push_back(reader.value(a));
    for (const auto& [name, v] : s.at("kwargs").items()) sample.kwargs.emplace_back(name, reader.value(v));
    for (const json& o : s.at("outputs")) sample.outputs.push_back(reader.value(o));
    file.samples.push_back(std::move(sample));
  }
  return file;
}

}  // namespace tapegrad::pytorch_samples
