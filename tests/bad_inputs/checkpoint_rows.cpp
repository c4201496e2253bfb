// Rows of docs/bad-inputs.md, section "checkpoint": safetensors, training checkpoints and .npy
// files (nn/io/checkpoint.h): missing, truncated and corrupt files, mismatched models.
#include <filesystem>
#include <fstream>

#include "nn/io/checkpoint.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

namespace fs = std::filesystem;
using namespace tapegrad::nn;

// A safetensors file: the 8-byte little-endian header length, the JSON header, then `data`.
fs::path safetensors_with(const std::string& name, const std::string& header, const std::string& data = "") {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return write_scratch(name, bytes + header + data);
}

// A valid checkpoint of Linear(3, 2) (plus a dropout stream when with_dropout) and its path.
struct Model : Module<float> {
  explicit Model(std::size_t in, bool with_dropout = false) {
    linear = register_module("fc", std::make_shared<Linear<float>>(in, 2, gen_f));
    if (with_dropout) register_module("drop", std::make_shared<Dropout<float>>(gen_f, 0.1));
  }
  std::string type_name() const override { return "Model"; }
  Generator gen_f{0};
  std::shared_ptr<Linear<float>> linear;
};
fs::path checkpoint_of(const std::string& name, std::size_t in, bool with_dropout = false) {
  Model model(in, with_dropout);
  const fs::path path = scratch(name);
  save_checkpoint(path, model, {}, 7);
  return path;
}
template <class M>
void load_into(const fs::path& path, M&& model, bool strict = true) {
  load_checkpoint(path, model, strict);
}

// A version 1.0 .npy file with the given header dict, padded as numpy pads it, then `data`.
fs::path npy_with(const std::string& name, std::string header, const std::string& data) {
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  const std::string length{static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  return write_scratch(name, std::string("\x93NUMPY\x01\x00", 8) + length + header + data);
}

// A file only its owner may read (the row runs twice in one process: the first run's is removed).
fs::path read_only_file(const std::string& name) {
  const fs::path path = scratch(name);
  fs::remove(path);
  const fs::path written = write_scratch(name, "kept");
  fs::permissions(written, fs::perms::owner_read);
  return written;
}

const std::string kFc = R"("fc.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})";

// ---- load_safetensors -----------------------------------------------------------------------
BAD_INPUT_ROW(Checkpoint, safetensors_missing_file, ValueError,
              (load_safetensors<float>(scratch("absent.safetensors"))), "load_safetensors", "absent.safetensors",
              "no such file")
BAD_INPUT_ROW(Checkpoint, safetensors_directory, ValueError, (load_safetensors<float>("/")),
              "load_safetensors", "not a regular file")
BAD_INPUT_ROW(Checkpoint, safetensors_shorter_than_8_bytes, ValueError,
              (load_safetensors<float>(write_scratch("short.safetensors", "abc"))), "load_safetensors",
              "short.safetensors", "truncated: 3 bytes")
BAD_INPUT_ROW(Checkpoint, safetensors_header_longer_than_file, ValueError,
              (load_safetensors<float>(write_scratch("long.safetensors", std::string("\xff\0\0\0\0\0\0\0{}", 10)))),
              "load_safetensors", "long.safetensors", "255")
BAD_INPUT_ROW(Checkpoint, safetensors_header_not_json, ValueError,
              (load_safetensors<float>(safetensors_with("json.safetensors", "{not json"))), "load_safetensors",
              "json.safetensors", "malformed JSON header")
BAD_INPUT_ROW(Checkpoint, safetensors_header_not_object, ValueError,
              (load_safetensors<float>(safetensors_with("array.safetensors", "[1,2]"))), "load_safetensors",
              "array.safetensors", "array, not an object")
BAD_INPUT_ROW(Checkpoint, safetensors_unknown_dtype, ValueError,
              (load_safetensors<float>(safetensors_with(
                  "dtype.safetensors", R"({"x":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})", "ab"))),
              "load_safetensors", "dtype.safetensors", "tensor 'x'", "I8")
BAD_INPUT_ROW(Checkpoint, safetensors_offsets_do_not_fit_shape, ValueError,
              (load_safetensors<float>(safetensors_with("size.safetensors",
                                                        R"({"x":{"dtype":"F32","shape":[4,3],"data_offsets":[0,40]}})",
                                                        std::string(40, '\0')))),
              "load_safetensors", "size.safetensors", "tensor 'x'", "[4,3]", "48 bytes", "40")
BAD_INPUT_ROW(Checkpoint, safetensors_data_truncated, ValueError,
              (load_safetensors<float>(safetensors_with("cut.safetensors", "{" + kFc + "}", std::string(10, '\0')))),
              "load_safetensors", "cut.safetensors", "24", "10")
BAD_INPUT_ROW(Checkpoint, safetensors_negative_shape, ValueError,
              (load_safetensors<float>(safetensors_with("neg.safetensors",
                                                        R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
                                                        std::string(4, '\0')))),
              "load_safetensors", "neg.safetensors", "tensor 'x'", "shape")
BAD_INPUT_ROW(Checkpoint, safetensors_metadata_not_strings, ValueError,
              (load_safetensors<float>(safetensors_with("meta.safetensors", R"({"__metadata__":{"step":7}})"))),
              "load_safetensors", "meta.safetensors", "__metadata__", "step")
BAD_INPUT_ROW(Checkpoint, safetensors_tensor_named_twice, ValueError,
              (load_safetensors<float>(safetensors_with("twice.safetensors",
                                                        R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                                        R"("x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                                        std::string(4, '\0')))),
              "load_safetensors", "twice.safetensors", "tensor 'x' appears twice in the header")
// A row of the section "trust: shape arithmetic that overflows": no byte, but strides past 2^64.
BAD_INPUT_CRASH_ROW(
    Checkpoint, safetensors_shape_wraps_over_empty_axis, ValueError,
    (load_safetensors<float>(safetensors_with(
        "strides.safetensors",
        R"({"x":{"dtype":"F32","shape":[0,9223372036854775807,9223372036854775807],"data_offsets":[0,0]}})"))),
    "load_safetensors", "strides.safetensors", "the shape of tensor 'x'",
    "[0,9223372036854775807,9223372036854775807]", "2^63")
BAD_INPUT_ROW(Checkpoint, save_safetensors_reserved_name, ValueError,
              (save_safetensors<float>(scratch("reserved.safetensors"), {{"__metadata__", xt::zeros<float>({1})}})),
              "save_safetensors", "reserved.safetensors", "'__metadata__'")
BAD_INPUT_ROW(Checkpoint, save_safetensors_read_only_file, ValueError,
              (save_safetensors<float>(read_only_file("read_only.safetensors"), {{"x", xt::zeros<float>({1})}})),
              "save_safetensors", "read_only.safetensors", "the file is read-only (mode 0400)")
BAD_INPUT_ROW(Checkpoint, save_safetensors_missing_directory, ValueError,
              (save_safetensors<float>(scratch("no/such/dir/x.safetensors"), {{"x", xt::zeros<float>({1})}})),
              "save_safetensors", "no/such/dir/x.safetensors", "No such file or directory")

// ---- load_checkpoint / save_checkpoint --------------------------------------------------------
BAD_INPUT_ROW(Checkpoint, load_checkpoint_other_model_shape, ShapeError,
              (load_into(checkpoint_of("wide.safetensors", 4), Model(3))), "load_checkpoint", "wide.safetensors",
              "load_state_dict", "'fc.weight'", "[2,4]", "[2,3]")
BAD_INPUT_ROW(Checkpoint, load_checkpoint_missing_parameters, ValueError,
              (load_into(safetensors_with("empty.safetensors", "{}"), Model(3))), "load_checkpoint",
              "empty.safetensors", "load_state_dict", "missing keys", "fc.weight")
BAD_INPUT_ROW(Checkpoint, load_checkpoint_missing_generator_state, ValueError,
              (load_into(checkpoint_of("nodrop.safetensors", 3), Model(3, true))), "load_checkpoint",
              "nodrop.safetensors", "drop")
BAD_INPUT_ROW(Checkpoint, load_checkpoint_other_dtype, ValueError,
              (load_into(safetensors_with("f64.safetensors",
                                          R"({"fc.weight":{"dtype":"F64","shape":[2,3],"data_offsets":[0,48]},)"
                                          R"("fc.bias":{"dtype":"F64","shape":[2],"data_offsets":[48,64]}})",
                                          std::string(64, '\0')),
                         Model(3))),
              "load_checkpoint", "f64.safetensors", "F64")
BAD_INPUT_ROW(Checkpoint, load_checkpoint_step_not_decimal, ValueError,
              (load_into(safetensors_with("step.safetensors", R"({"__metadata__":{"step":"seven"}})"), Model(3),
                         false)),
              "load_checkpoint", "step.safetensors", "'step' = 'seven'", "decimal")
BAD_INPUT_ROW(Checkpoint, save_checkpoint_extra_generator_name_taken, ValueError, ([] {
                Model m(3, true);
                Generator g;
                save_checkpoint<float>(scratch("dup.safetensors"), m, {}, 0, {{"drop.stream", &g}});
              }()),
              "save_checkpoint", "dup.safetensors", "'drop.stream'", "twice")
BAD_INPUT_ROW(Checkpoint, save_checkpoint_null_extra_generator, ValueError, ([] {
                Model m(3);
                save_checkpoint<float>(scratch("null.safetensors"), m, {}, 0, {{"data", nullptr}});
              }()),
              "save_checkpoint", "null.safetensors", "'data'", "null")

// ---- .npy ---------------------------------------------------------------------------------
BAD_INPUT_ROW(Checkpoint, npy_missing_file, ValueError, (load_npy<double>(scratch("absent.npy"))), "load_npy",
              "absent.npy", "no such file")
BAD_INPUT_ROW(Checkpoint, npy_bad_magic, ValueError,
              (load_npy<double>(write_scratch("magic.npy", "PK\x03\x04 not numpy"))), "load_npy", "magic.npy",
              "bad magic")
BAD_INPUT_ROW(Checkpoint, npy_integer_dtype, ValueError,
              (load_npy<double>(npy_with("int.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }",
                                         std::string(16, '\0')))),
              "load_npy", "int.npy", "'<i8'", "'<f4'")
BAD_INPUT_ROW(Checkpoint, npy_truncated_data, ValueError, ([] {
                const auto p = scratch("cut.npy");
                save_npy<double>(p, xt::zeros<double>({4}));
                fs::resize_file(p, fs::file_size(p) - 8);
                load_npy<double>(p);
              }()),
              "load_npy", "cut.npy", "truncated", "32 data bytes", "24")
BAD_INPUT_ROW(Checkpoint, npy_save_missing_directory, ValueError,
              (save_npy<double>(scratch("no/such/dir/x.npy"), xt::zeros<double>({2}))), "save_npy", "x.npy",
              "No such file or directory")

}  // namespace
}  // namespace tapegrad::bad_inputs
