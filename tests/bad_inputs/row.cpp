#include "tests/bad_inputs/row.h"

#include <cxxabi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <typeinfo>

namespace tapegrad::bad_inputs {

std::map<std::string, RowFunction>& rows() {
  static std::map<std::string, RowFunction> all;
  return all;
}

bool register_row(const char* id, RowFunction fn) { return rows().emplace(id, std::move(fn)).second; }

std::string type_name(const std::exception& e) {
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status), std::free);
  std::string name = status == 0 ? demangled.get() : typeid(e).name();
  const std::string prefix = "tapegrad::";
  if (name.rfind(prefix, 0) == 0) name.erase(0, prefix.size());
  return name;
}

void exit_with(const ::testing::AssertionResult& result) {
  if (!result) std::fprintf(stderr, "%s\n", result.message());
  std::fflush(stderr);
  std::_Exit(result ? 0 : 1);
}

std::filesystem::path scratch(const std::string& name) {
  namespace fs = std::filesystem;
  struct Folder {
    fs::path path = fs::temp_directory_path() / ("tapegrad-bad-inputs-" + std::to_string(::getpid()));
    Folder() { fs::create_directories(path); }
    ~Folder() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  };
  static const Folder folder;
  return folder.path / name;
}

std::filesystem::path write_scratch(const std::string& name, const std::string& bytes) {
  const auto path = scratch(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace tapegrad::bad_inputs
