// libFuzzer target: the safetensors reader (nn::parse_safetensors, which load_safetensors calls)
// and, for inputs that parse, load_checkpoint into a small model (checkpoint_model.h).
//
// Property: every input either loads or throws a tapegrad::Error. Anything else is a finding:
// another exception escapes (libFuzzer reports it as a crash), AddressSanitizer or
// UndefinedBehaviorSanitizer stops on a bad read or overflow, -rss_limit_mb catches a file whose
// header makes the reader allocate far more than the file holds, -timeout catches a hang.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "fuzz/checkpoint_model.h"
#include "nn/io/checkpoint.h"

namespace {

using namespace tapegrad;

// The loaded tensors can hold no more elements than the input has data bytes for.
template <class T>
void check_sizes(const nn::SafetensorsFile<T>& file, std::size_t input_size) {
  std::size_t stored_bytes = 0;
  for (const auto& [name, value] : file.tensors) stored_bytes += value.size() * (file.dtypes.at(name) == nn::Dtype::F32 ? 4 : 8);
  if (stored_bytes > input_size) {
    std::fprintf(stderr, "fuzz_safetensors: %zu tensor bytes loaded from a %zu-byte input\n", stored_bytes, input_size);
    std::abort();
  }
}

// load_checkpoint reads a path: inputs that parse are written to this process's own file, removed
// when the fuzzer exits normally.
struct ScratchFile {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("tapegrad_fuzz_checkpoint_" + std::to_string(::getpid()) + ".safetensors");
  ~ScratchFile() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
};

const std::filesystem::path& scratch_file() {
  static const ScratchFile file;
  return file.path;
}

template <class T>
void load_into_model(bool strict) {
  auto model = fuzz::checkpoint_model<T>();
  Generator data(7);
  try {
    nn::load_checkpoint<T>(scratch_file(), *model, strict, {{"data", &data}});
  } catch (const Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    check_sizes(nn::parse_safetensors<float>(bytes, "fuzz input"), size);
  } catch (const Error&) {
    return 0;
  }
  // A file that parses as float parses as double too: the checks do not depend on T.
  check_sizes(nn::parse_safetensors<double>(bytes, "fuzz input"), size);
  {
    std::ofstream out(scratch_file(), std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  for (bool strict : {true, false}) {
    load_into_model<float>(strict);
    load_into_model<double>(strict);
  }
  return 0;
}
