#pragma once
// A temporary directory for a test's files, removed at the end unless a test failed (then kept
// for inspection and its path printed).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace tapegrad::testing_support {

class TempDir {
 public:
  explicit TempDir(const std::string& stem = "tapegrad_test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (stem + ".XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    if (::testing::UnitTest::GetInstance()->Failed()) {
      std::printf("kept %s for inspection\n", path_.c_str());
    } else {
      std::error_code ignored;
      std::filesystem::remove_all(path_, ignored);
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace tapegrad::testing_support
