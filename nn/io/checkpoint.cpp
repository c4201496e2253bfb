#include "nn/io/checkpoint.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <new>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>
#include <type_traits>

#include <nlohmann/json.hpp>
#include <xtensor/xnpy.hpp>

#include "autograd/base/checks.h"
#include "nn/io/atomic_file.h"

// Tensor data is copied byte for byte between memory and the little-endian file.
static_assert(std::endian::native == std::endian::little, "checkpoint I/O assumes a little-endian host");

namespace tapegrad::nn {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

[[noreturn]] void fail(const char* op, const fs::path& path, const std::string& problem) {
  throw ValueError(std::string(op) + "('" + path.string() + "'): " + problem);
}

template <class T>
constexpr Dtype dtype_of() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  return std::is_same_v<T, float> ? Dtype::F32 : Dtype::F64;
}

std::size_t dtype_size(Dtype dtype) { return dtype == Dtype::F32 ? 4 : 8; }

std::string format_offsets(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + "," + std::to_string(end) + "]";
}

std::string read_file(const char* op, const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail(op, path, fs::exists(path, ec) ? "not a regular file" : "no such file");
  // The size of the file opened, not of the path: a save may rename a new file over the path
  // between the two, and the old size would cut the new file short or read past its end.
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const std::streamoff size = in ? static_cast<std::streamoff>(in.tellg()) : -1;
  if (size < 0) fail(op, path, std::string("cannot open it: ") + std::strerror(errno));
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), size)) fail(op, path, "read error");
  return bytes;
}

std::uint64_t read_u64_le(const char* p) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(p[i]);
  return value;
}

std::string u64_le(std::uint64_t value) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

// A JSON value for an error message: a scalar as written (cut short), an array or object by its
// type only. dump() recurses once per nesting level, and a header may nest a million deep.
std::string describe(const json& value) {
  if (value.is_structured()) return value.type_name();
  const std::string text = value.dump();
  return text.size() <= 40 ? text : text.substr(0, 37) + "...";
}

// One tensor entry of a safetensors header, validated on its own.
struct Entry {
  std::string name;
  Dtype dtype;
  Shape shape;
  std::uint64_t begin, end;
};

constexpr const char* kLoad = "load_safetensors";

Entry parse_entry(const fs::path& path, const std::string& name, const json& value) {
  const auto bad = [&](const std::string& problem) { fail(kLoad, path, "tensor '" + name + "' " + problem); };
  if (!value.is_object()) bad("is not a JSON object but " + std::string(value.type_name()));
  Entry e{name, Dtype::F32, {}, 0, 0};

  const auto dtype = value.find("dtype");
  if (dtype == value.end() || !dtype->is_string()) bad("has no string \"dtype\"");
  const std::string dtype_text = dtype->get<std::string>();
  if (dtype_text == "F32") {
    e.dtype = Dtype::F32;
  } else if (dtype_text == "F64") {
    e.dtype = Dtype::F64;
  } else {
    bad("has unknown dtype '" + dtype_text + "' (supported: F32, F64)");
  }

  const auto shape = value.find("shape");
  if (shape == value.end() || !shape->is_array()) bad("has no \"shape\" array");
  for (const json& dim : *shape) {
    if (!dim.is_number_unsigned()) bad("has a shape entry that is not a non-negative integer: " + describe(dim));
    e.shape.push_back(dim.get<std::size_t>());
  }

  const auto offsets = value.find("data_offsets");
  if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned()) {
    bad("has no \"data_offsets\" pair of non-negative integers");
  }
  e.begin = (*offsets)[0].get<std::uint64_t>();
  e.end = (*offsets)[1].get<std::uint64_t>();
  if (e.begin > e.end) bad("has data_offsets " + format_offsets(e.begin, e.end) + " out of order (end before begin)");

  // Every partial product, not only the total: [0, 2^63-1, 2^63-1] holds no byte, yet its strides
  // would wrap around.
  const std::size_t numel =
      checked_numel(e.shape, std::string(kLoad) + "('" + path.string() + "')", "the shape of tensor '" + name + "'");
  std::uint64_t bytes;
  if (__builtin_mul_overflow(numel, dtype_size(e.dtype), &bytes)) {
    bad("has shape " + format_shape(e.shape) + " too large to address");
  }
  if (e.end - e.begin != bytes) {
    bad("has shape " + format_shape(e.shape) + " of " + dtype_text + " (" + std::to_string(bytes) +
        " bytes) but data_offsets " + format_offsets(e.begin, e.end) + " hold " + std::to_string(e.end - e.begin) +
        " bytes");
  }
  return e;
}

Metadata parse_metadata(const fs::path& path, const json& value) {
  if (!value.is_object()) fail(kLoad, path, "__metadata__ is not a JSON object but " + std::string(value.type_name()));
  Metadata out;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) {
      fail(kLoad, path,
           "__metadata__ '" + key + "' is not a string but " + std::string(item.type_name()) +
               (item.is_structured() ? "" : " " + describe(item)));
    }
    out[key] = item.get<std::string>();
  }
  return out;
}

// "tensor 'x'", or "__metadata__": what a key of the header's top-level object stands for.
std::string describe_top_key(const std::string& key) {
  return key == "__metadata__" ? key : "tensor '" + key + "'";
}

// The header as JSON, refusing a key repeated in one object: the parser would keep the last of
// the two without a word, and which tensor (or dtype, or shape) the writer meant is unknowable.
json parse_header(std::string_view text, const fs::path& path) {
  std::vector<std::set<std::string>> open_objects;  // the keys seen in each object being parsed
  std::string top_key;                              // the top-level key whose value is being parsed
  const auto check_keys = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == json::parse_event_t::object_end) open_objects.pop_back();
    if (event != json::parse_event_t::key) return true;
    const std::string& key = parsed.get_ref<const std::string&>();
    if (depth == 1) top_key = key;
    if (!open_objects.back().insert(key).second) {
      fail(kLoad, path,
           depth == 1 ? describe_top_key(key) + " appears twice in the header"
                      : describe_top_key(top_key) + " has the key '" + key + "' twice");
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check_keys);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    fail(kLoad, path, std::string("malformed JSON header: ") + e.what());
  }
}

// The tensors must tile [0, data_size) exactly, as the safetensors reference reader demands.
void check_layout(const fs::path& path, std::vector<Entry> entries, std::uint64_t data_size) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  std::uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered) {
      fail(kLoad, path,
           "tensors '" + previous->name + "' " + format_offsets(previous->begin, previous->end) + " and '" + e.name +
               "' " + format_offsets(e.begin, e.end) + " overlap");
    }
    if (e.begin > covered) {
      fail(kLoad, path,
           "hole in the data: bytes " + format_offsets(covered, e.begin) + " belong to no tensor (before '" + e.name +
               "')");
    }
    covered = e.end;
    previous = &e;
  }
  if (covered > data_size) {
    fail(kLoad, path,
         "truncated: the tensors need " + std::to_string(covered) + " data bytes but only " +
             std::to_string(data_size) + " follow the header");
  }
  if (covered < data_size) {
    fail(kLoad, path,
         std::to_string(data_size - covered) + " bytes after the last tensor's end offset " + std::to_string(covered) +
             " belong to no tensor");
  }
}

template <class Stored, class T>
void convert(const char* src, std::size_t n, T* dst) {
  if (n == 0) return;  // an empty tensor's data() may be null, and memcpy from or to null is undefined
  if constexpr (std::is_same_v<Stored, T>) {
    std::memcpy(dst, src, n * sizeof(T));
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      Stored v;
      std::memcpy(&v, src + i * sizeof(Stored), sizeof(Stored));
      dst[i] = static_cast<T>(v);
    }
  }
}

template <class T>
NamedGenerators all_generators(const char* op, const fs::path& path, Module<T>& model, const NamedGenerators& extra) {
  NamedGenerators all = model.named_generators();
  for (const auto& [name_binding, gen] : extra) {
    const std::string& name = name_binding;  // clang 14 cannot capture a structured binding
    if (gen == nullptr) fail(op, path, "extra generator '" + name + "' is null");
    const bool taken = std::any_of(all.begin(), all.end(), [&](const auto& g) { return g.first == name; });
    if (taken) fail(op, path, "generator name '" + name + "' is used twice (model generators and extra generators)");
    all.emplace_back(name, gen);
  }
  return all;
}

std::uint64_t parse_decimal(const char* op, const fs::path& path, const std::string& key, const std::string& text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    fail(op, path, "__metadata__ '" + key + "' = '" + text + "' is not a decimal integer");
  }
  return value;
}

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

// "missing parameters [...], unexpected parameters [...]; " when the names of the model's and the
// file's parameters differ, else "".
template <class T>
std::string parameter_mismatch(const StateDict<T>& model, const StateDict<T>& file) {
  std::vector<std::string> missing, unexpected;
  for (const auto& entry : model)
    if (!file.contains(entry.first)) missing.push_back(entry.first);
  for (const auto& entry : file)
    if (!model.contains(entry.first)) unexpected.push_back(entry.first);
  if (missing.empty() && unexpected.empty()) return "";
  return "missing parameters [" + join(missing) + "], unexpected parameters [" + join(unexpected) + "]; ";
}

// "generator.<name>.seed" or "generator.<name>.offset" -> "<name>"; any other key -> "".
std::string generator_name(std::string_view key) {
  constexpr std::string_view prefix = "generator.";
  if (!key.starts_with(prefix)) return "";
  key.remove_prefix(prefix.size());
  for (std::string_view suffix : {std::string_view(".seed"), std::string_view(".offset")}) {
    if (key.size() > suffix.size() && key.ends_with(suffix))
      return std::string(key.substr(0, key.size() - suffix.size()));
  }
  return "";
}

constexpr std::string_view kOptimizerPrefix = "optimizer.";

// The metadata keys save_checkpoint writes itself; the caller's keys are the others.
bool is_checkpoint_key(std::string_view key) { return key == "step" || key.starts_with("generator."); }

}  // namespace

std::string dtype_name(Dtype dtype) { return dtype == Dtype::F32 ? "F32" : "F64"; }

template <class T>
void save_safetensors(const fs::path& path, const StateDict<T>& tensors, const Metadata& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<std::string_view> chunks(2);  // the length and the header, filled in below
  std::uint64_t offset = 0;
  for (const auto& [name, value] : tensors) {
    if (name == "__metadata__") fail("save_safetensors", path, "a tensor may not be named '__metadata__'");
    const std::uint64_t bytes = value.size() * sizeof(T);
    json entry = json::object();
    entry["dtype"] = dtype_name(dtype_of<T>());
    entry["shape"] = Shape(value.shape().begin(), value.shape().end());
    entry["data_offsets"] = {offset, offset + bytes};
    header[name] = std::move(entry);
    chunks.emplace_back(reinterpret_cast<const char*>(value.data()), bytes);
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {
    fail("save_safetensors", path, std::string("a tensor name or metadata string is not valid UTF-8: ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  const std::string length = u64_le(text.size());
  chunks[0] = length;
  chunks[1] = text;
  write_file_atomic(path, chunks, "save_safetensors");
}

template <class T>
SafetensorsFile<T> load_safetensors(const fs::path& path) {
  return parse_safetensors<T>(read_file(kLoad, path), path);
}

template <class T>
SafetensorsFile<T> parse_safetensors(std::string_view bytes, const fs::path& path) {
  const std::uint64_t size = bytes.size();
  if (size < 8) fail(kLoad, path, "truncated: " + std::to_string(size) + " bytes, fewer than the 8-byte header length");
  const std::uint64_t header_len = read_u64_le(bytes.data());
  if (header_len > size) {
    fail(kLoad, path,
         "header length " + std::to_string(header_len) + " is larger than the whole file (" + std::to_string(size) +
             " bytes): not a safetensors file");
  }
  if (8 + header_len > size) {
    fail(kLoad, path,
         "truncated: the header needs bytes [8," + std::to_string(8 + header_len) + ") but the file has " +
             std::to_string(size));
  }
  const json header = parse_header(bytes.substr(8, header_len), path);
  if (!header.is_object())
    fail(kLoad, path, "the JSON header is " + std::string(header.type_name()) + ", not an object");

  SafetensorsFile<T> out;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      out.metadata = parse_metadata(path, value);
    } else {
      entries.push_back(parse_entry(path, name, value));
    }
  }
  check_layout(path, entries, size - 8 - header_len);

  const char* data = bytes.data() + 8 + header_len;
  for (const Entry& e : entries) {
    xt::xarray<T> value = xt::xarray<T>::from_shape(e.shape);
    if (e.dtype == Dtype::F32) {
      convert<float>(data + e.begin, value.size(), value.data());
    } else {
      convert<double>(data + e.begin, value.size(), value.data());
    }
    out.tensors.emplace(e.name, std::move(value));
    out.dtypes.emplace(e.name, e.dtype);
  }
  return out;
}

template <class T>
void save_checkpoint(const fs::path& path, Module<T>& model, const StateDict<T>& optimizer_state, std::uint64_t step,
                     const NamedGenerators& extra_generators, const Metadata& caller_metadata) {
  constexpr const char* op = "save_checkpoint";
  for (const auto& [key, text] : caller_metadata) {
    if (is_checkpoint_key(key)) {
      fail(op, path, "metadata key '" + key + "' is the checkpoint's own (\"step\" and \"generator.*\" are reserved)");
    }
  }
  StateDict<T> tensors = model.state_dict();
  for (const auto& [name, value] : tensors) {
    if (name.starts_with(kOptimizerPrefix)) {
      fail(op, path, "parameter '" + name + "' would be read back as optimiser state (prefix 'optimizer.')");
    }
  }
  for (const auto& [key, value] : optimizer_state) tensors.emplace(std::string(kOptimizerPrefix) + key, value);
  Metadata metadata = caller_metadata;
  metadata["step"] = std::to_string(step);
  for (const auto& [name, gen] : all_generators(op, path, model, extra_generators)) {
    metadata["generator." + name + ".seed"] = std::to_string(gen->seed());
    metadata["generator." + name + ".offset"] = std::to_string(gen->offset());
  }
  save_safetensors(path, tensors, metadata);
}

template <class T>
LoadedCheckpoint<T> load_checkpoint(const fs::path& path, Module<T>& model, bool strict,
                                    const NamedGenerators& extra_generators) {
  constexpr const char* op = "load_checkpoint";
  SafetensorsFile<T> file = load_safetensors<T>(path);
  LoadedCheckpoint<T> out;
  StateDict<T> parameters;
  for (auto& [name, value] : file.tensors) {
    if (file.dtypes.at(name) != dtype_of<T>()) {
      fail(op, path,
           "tensor '" + name + "' is stored as " + dtype_name(file.dtypes.at(name)) + " but the model is " +
               dtype_name(dtype_of<T>()) + " (load_safetensors converts explicitly)");
    }
    if (name.starts_with(kOptimizerPrefix)) {
      out.optimizer_state.emplace(name.substr(kOptimizerPrefix.size()), std::move(value));
    } else {
      parameters.emplace(name, std::move(value));
    }
  }
  const auto meta = [&](const std::string& key) { return file.metadata.find(key); };
  if (const auto it = meta("step"); it != file.metadata.end()) out.step = parse_decimal(op, path, "step", it->second);
  for (const auto& [key, text] : file.metadata)
    if (!is_checkpoint_key(key)) out.metadata.emplace(key, text);

  // Parse every generator state first: nothing may change until all of the file has been checked.
  struct Restore {
    Generator* gen;
    std::uint64_t seed, offset;
  };
  std::vector<Restore> restores;
  const NamedGenerators generators = all_generators(op, path, model, extra_generators);
  for (const auto& [name, gen] : generators) {
    const std::string seed_key = "generator." + name + ".seed", offset_key = "generator." + name + ".offset";
    const auto seed = meta(seed_key), offset = meta(offset_key);
    if (seed == file.metadata.end() && offset == file.metadata.end()) {
      out.missing_generators.push_back(name);
    } else if (seed == file.metadata.end() || offset == file.metadata.end()) {
      fail(op, path, "generator '" + name + "' has only one of '" + seed_key + "' and '" + offset_key + "'");
    } else {
      restores.push_back(
          {gen, parse_decimal(op, path, seed_key, seed->second), parse_decimal(op, path, offset_key, offset->second)});
    }
  }
  for (const auto& [key, text] : file.metadata) {
    const std::string name = generator_name(key);
    const bool known =
        std::any_of(generators.begin(), generators.end(), [&](const auto& g) { return g.first == name; });
    auto& unexpected = out.unexpected_generators;
    if (!name.empty() && !known && std::find(unexpected.begin(), unexpected.end(), name) == unexpected.end()) {
      unexpected.push_back(name);
    }
  }
  if (strict && (!out.missing_generators.empty() || !out.unexpected_generators.empty())) {
    // A model of another depth lacks parameters and dropout streams alike: name the parameters
    // first, they say what differs (state_dict() copies, but only on this failing path).
    fail(op, path,
         parameter_mismatch(model.state_dict(), parameters) + "missing generator states [" + join(out.missing_generators) + "], unexpected generator states [" +
             join(out.unexpected_generators) + "]");
  }
  // Same exception type, with the file named: a mis-shaped or missing key is a problem of this file.
  try {
    out.parameters = model.load_state_dict(parameters, strict);
  } catch (const ShapeError& e) {
    throw ShapeError(std::string(op) + "('" + path.string() + "'): " + e.what());
  } catch (const ValueError& e) {
    fail(op, path, e.what());
  }
  for (const Restore& r : restores) r.gen->set_state(r.seed, r.offset);
  return out;
}

template <class T>
void save_npy(const fs::path& path, const xt::xarray<T>& tensor) {
  const std::string bytes = xt::dump_npy(tensor);
  write_file_atomic(path, bytes, "save_npy");
}

template <class T>
xt::xarray<T> load_npy(const fs::path& path) {
  constexpr const char* op = "load_npy";
  const std::string bytes = read_file(op, path);
  // xnpy trusts the prelude (magic, version, header length): check it here so a corrupt file is
  // an error, not undefined behaviour.
  constexpr std::string_view kMagic("\x93NUMPY", 6);
  if (bytes.size() < 10 || std::string_view(bytes).substr(0, 6) != kMagic)
    fail(op, path, "not a .npy file (bad magic)");
  const auto byte = [&](std::size_t i) { return static_cast<std::size_t>(static_cast<unsigned char>(bytes[i])); };
  std::size_t data_start;
  if (byte(6) == 1 && byte(7) == 0) {
    data_start = 10 + (byte(8) | byte(9) << 8);
  } else if (byte(6) == 2 && byte(7) == 0 && bytes.size() >= 12) {
    data_start = 12 + (byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24);
  } else {
    fail(op, path, "unsupported .npy version " + std::to_string(byte(6)) + "." + std::to_string(byte(7)));
  }
  if (data_start > bytes.size() || bytes[data_start - 1] != '\n') fail(op, path, "truncated or corrupt header");
  try {
    // The header's shape must match the data before xnpy allocates and reads by it: its own byte
    // count wraps for a shape like [2^62,4] and the array would claim more than it holds.
    std::string typestring;
    bool fortran_order = false;
    Shape shape;
    const std::size_t header_start = byte(6) == 1 ? 10 : 12;
    xt::detail::parse_header(bytes.substr(header_start, data_start - header_start), typestring, &fortran_order, shape);
    const std::size_t word = typestring == "<f4" ? 4 : typestring == "<f8" ? 8 : 0;
    if (word == 0) {
      fail(op, path, "dtype '" + typestring + "' is not little-endian float32 ('<f4') or float64 ('<f8')");
    }
    const std::size_t numel =
        checked_numel(shape, std::string(op) + "('" + path.string() + "')", "the header's shape");
    const std::size_t data_bytes = bytes.size() - data_start;
    if (numel > data_bytes / word) {
      std::size_t needed;
      const bool huge = __builtin_mul_overflow(numel, word, &needed);
      fail(op, path,
           "truncated: the header's shape " + format_shape(shape) + " needs " +
               (huge ? std::to_string(numel) + " x " + std::to_string(word) : std::to_string(needed)) +
               " data bytes but the file has " + std::to_string(data_bytes));
    }
    std::istringstream in(bytes);
    xt::detail::npy_file file = xt::detail::load_npy_file(in);
    // Assigning the (possibly column-major) adaptor to a row-major xarray converts layout and type.
    if (file.m_typestring == "<f4") return xt::xarray<T>(std::move(file).cast<float>());
    return xt::xarray<T>(std::move(file).cast<double>());
  } catch (const std::runtime_error& e) {
    fail(op, path, std::string("malformed header: ") + e.what());
  } catch (const std::bad_alloc&) {
    fail(op, path, "the header's shape is too large to allocate");
  }
}

#define TAPEGRAD_INSTANTIATE_CHECKPOINT(T)                                                                    \
  template void save_safetensors<T>(const fs::path&, const StateDict<T>&, const Metadata&);                   \
  template SafetensorsFile<T> load_safetensors<T>(const fs::path&);                                           \
  template SafetensorsFile<T> parse_safetensors<T>(std::string_view, const fs::path&);                       \
  template void save_checkpoint<T>(const fs::path&, Module<T>&, const StateDict<T>&, std::uint64_t,           \
                                   const NamedGenerators&, const Metadata&);                                  \
  template LoadedCheckpoint<T> load_checkpoint<T>(const fs::path&, Module<T>&, bool, const NamedGenerators&); \
  template void save_npy<T>(const fs::path&, const xt::xarray<T>&);                                           \
  template xt::xarray<T> load_npy<T>(const fs::path&);

TAPEGRAD_INSTANTIATE_CHECKPOINT(float)
TAPEGRAD_INSTANTIATE_CHECKPOINT(double)

}  // namespace tapegrad::nn
