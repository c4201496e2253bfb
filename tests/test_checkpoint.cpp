#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "nn/copy_task/copy_task.h"
#include "nn/io/checkpoint.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "optim/adam.h"
#include "tests/support/reference.h"
#include "tests/support/tied_model.h"

namespace tapegrad {
namespace {

namespace fs = std::filesystem;
using nn::Dtype;
using nn::StateDict;
using tapegrad::testing::throws_with;

// A fresh directory per test (ctest runs tests in parallel processes), removed afterwards.
class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "tapegrad_ckpt_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
                       std::to_string(::getpid());
    std::replace(name.begin(), name.end(), '/', '_');  // typed tests are named "Suite/0"
    dir_ = fs::temp_directory_path() / name;
    fs::remove_all(dir_);
    fs::create_directory(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path file(const std::string& name) const { return dir_ / name; }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
};

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string u64_le(std::uint64_t value) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

// A safetensors file: header length (the header's own unless told), header, data.
std::string safetensors_bytes(const std::string& header, const std::string& data,
                              std::optional<std::uint64_t> header_len = std::nullopt) {
  return u64_le(header_len.value_or(header.size())) + header + data;
}

template <class T>
bool bit_equal(const xt::xarray<T>& a, const xt::xarray<T>& b) {
  // memcmp on an empty array's null data() would be undefined.
  return a.shape() == b.shape() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Normal values plus the ones a lossy writer would break: signed zero, infinities, a denormal,
// the extremes, a NaN.
template <class T>
StateDict<T> sample_tensors() {
  Generator gen(11);
  StateDict<T> out;
  xt::xarray<T> w = xt::xarray<T>::from_shape({4, 3});
  gen.fill_normal(w.data(), w.size());
  out["encoder.layers.0.ffn.weight"] = w;
  using limits = std::numeric_limits<T>;
  out["specials"] = xt::xarray<T>{T(-0.0),       limits::infinity(), -limits::infinity(), limits::denorm_min(),
                                  limits::max(), limits::lowest(),   limits::quiet_NaN(), T(1) / T(3)};
  out["scalar"] = xt::xarray<T>(T(2.5));  // 0-d: shape []
  out["empty"] = xt::xarray<T>::from_shape({0, 3});
  return out;
}

template <class T>
class SafetensorsRoundTrip : public CheckpointTest {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(SafetensorsRoundTrip, FloatTypes);

TYPED_TEST(SafetensorsRoundTrip, TensorsAndMetadataComeBackBitExact) {
  using T = TypeParam;
  const StateDict<T> tensors = sample_tensors<T>();
  const nn::Metadata metadata{{"step", "12"}, {"note", "héllo \"quoted\""}};
  const fs::path path = this->file("model.safetensors");
  nn::save_safetensors(path, tensors, metadata);

  const auto loaded = nn::load_safetensors<T>(path);
  EXPECT_EQ(loaded.metadata, metadata);
  ASSERT_EQ(loaded.tensors.size(), tensors.size());
  for (const auto& [name, value] : tensors) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(loaded.tensors.count(name));
    EXPECT_TRUE(bit_equal(loaded.tensors.at(name), value));
    EXPECT_EQ(loaded.dtypes.at(name), (std::is_same_v<T, float> ? Dtype::F32 : Dtype::F64));
  }
  EXPECT_EQ(loaded.tensors.at("scalar").dimension(), 0u);
  // The temp file is gone once the save succeeded.
  EXPECT_EQ(this->listing(), std::vector<std::string>{"model.safetensors"});
}

TEST_F(CheckpointTest, SafetensorsLayoutIsByteExact) {
  // Tensors are written in name order; the header is compact JSON padded with spaces to a
  // multiple of 8 (135 characters + 1 space = 136 = 0x88).
  StateDict<float> tensors;
  tensors["b"] = xt::xarray<float>{1.0f, -2.0f};
  tensors["a"] = xt::xarray<float>::from_shape({1, 1});
  tensors["a"].fill(0.5f);
  nn::save_safetensors(file("t.safetensors"), tensors, {{"k", "v"}});
  const std::string json = R"({"__metadata__":{"k":"v"},"a":{"data_offsets":[0,4],"dtype":"F32","shape":[1,1]},)"
                           R"("b":{"data_offsets":[4,12],"dtype":"F32","shape":[2]}} )";
  ASSERT_EQ(json.size(), 136u);
  const std::string expected = std::string("\x88\0\0\0\0\0\0\0", 8) + json +
                               std::string("\x00\x00\x00\x3f", 4) +  // 0.5f  = 0x3f000000
                               std::string("\x00\x00\x80\x3f", 4) +  // 1.0f  = 0x3f800000
                               std::string("\x00\x00\x00\xc0", 4);   // -2.0f = 0xc0000000
  EXPECT_EQ(read_bytes(file("t.safetensors")), expected);
}

TEST_F(CheckpointTest, SafetensorsLayoutOfFloat64IsByteExact) {
  // No metadata: no "__metadata__" entry. 55 characters + 1 space = 56 = 0x38.
  nn::save_safetensors(file("d.safetensors"), StateDict<double>{{"x", xt::xarray<double>{1.0, -0.5}}});
  const std::string json = R"({"x":{"data_offsets":[0,16],"dtype":"F64","shape":[2]}} )";
  ASSERT_EQ(json.size(), 56u);
  const std::string expected = std::string("\x38\0\0\0\0\0\0\0", 8) + json +
                               std::string("\0\0\0\0\0\0\xf0\x3f", 8) +  // 1.0  = 0x3ff0000000000000
                               std::string("\0\0\0\0\0\0\xe0\xbf", 8);   // -0.5 = 0xbfe0000000000000
  EXPECT_EQ(read_bytes(file("d.safetensors")), expected);
}

TEST_F(CheckpointTest, SafetensorsConvertsFloat64FilesToFloatAndReportsTheStoredDtype) {
  // A hand-written F64 file, as PyTorch writes a double tensor.
  write_bytes(file("d.safetensors"),
              safetensors_bytes(R"({"x":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})",
                                std::string("\0\0\0\0\0\0\xf0\x3f", 8) + std::string("\0\0\0\0\0\0\xe0\xbf", 8)));
  const auto loaded = nn::load_safetensors<float>(file("d.safetensors"));
  EXPECT_EQ(loaded.dtypes.at("x"), Dtype::F64);
  EXPECT_EQ(loaded.tensors.at("x"), (xt::xarray<float>{1.0f, -0.5f}));
}

TEST_F(CheckpointTest, SafetensorsRejectsATensorNamedMetadata) {
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        nn::save_safetensors(file("m.safetensors"), StateDict<float>{{"__metadata__", xt::xarray<float>{1.0f}}});
      },
      {"save_safetensors", "m.safetensors", "'__metadata__'"}));
}

struct MalformedCase {
  std::string label;
  std::string bytes;
  std::string problem;  // a fragment the error message must hold
};

std::vector<MalformedCase> malformed_cases() {
  const std::string good_header = R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})";
  const std::string data12(12, '\0');
  return {
      {"shorter than 8 bytes", std::string("\x10\0\0", 3), "fewer than the 8-byte header length"},
      {"huge header length", safetensors_bytes(good_header, data12, std::uint64_t(1) << 62),
       "larger than the whole file"},
      {"header cut short", safetensors_bytes(good_header, data12, good_header.size() + 16),
       "truncated: the header needs bytes [8,"},
      {"data cut short", safetensors_bytes(good_header, data12.substr(0, 8)),
       "truncated: the tensors need 12 data bytes but only 8"},
      {"malformed JSON", safetensors_bytes(R"({"a":{"dtype":"F32",)", data12), "malformed JSON header"},
      // Found by fuzz/fuzz_safetensors: the JSON library reports a number too large for a double
      // (1e400) as out_of_range, not parse_error, and it escaped the reader.
      {"number overflow", safetensors_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,1e400]}})", data12),
       "malformed JSON header: [json.exception.out_of_range.406] number overflow parsing '1e400'"},
      {"header not an object", safetensors_bytes("[1,2]", ""), "not an object"},
      {"entry not an object", safetensors_bytes(R"({"a":7})", ""), "tensor 'a' is not a JSON object"},
      {"unknown dtype", safetensors_bytes(R"({"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,6]}})", data12),
       "tensor 'a' has unknown dtype 'BF16'"},
      {"no dtype", safetensors_bytes(R"({"a":{"shape":[3],"data_offsets":[0,12]}})", data12), "no string \"dtype\""},
      {"negative shape", safetensors_bytes(R"({"a":{"dtype":"F32","shape":[-3],"data_offsets":[0,12]}})", data12),
       "shape entry that is not a non-negative integer: -3"},
      {"one offset", safetensors_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[12]}})", data12),
       "no \"data_offsets\" pair"},
      {"shape and offsets disagree",
       safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", data12),
       "tensor 'a' has shape [2,2] of F32 (16 bytes) but data_offsets [0,12] hold 12 bytes"},
      {"end before begin", safetensors_bytes(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", data12),
       "tensor 'a' has data_offsets [8,4] out of order"},
      {"overlap",
       safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                         data12),
       "tensors 'a' [0,8] and 'b' [4,12] overlap"},
      {"hole",
       safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                         data12),
       "hole in the data: bytes [4,8] belong to no tensor (before 'b')"},
      {"bytes after the last tensor", safetensors_bytes(good_header, data12 + "abcd"),
       "4 bytes after the last tensor's end offset 12"},
      {"non-string metadata", safetensors_bytes(R"({"__metadata__":{"step":3}})", ""),
       "__metadata__ 'step' is not a string but number"},
      {"metadata not an object", safetensors_bytes(R"({"__metadata__":"x"})", ""), "__metadata__ is not a JSON object"},
      // Claims of huge tensors are refused before anything is allocated.
      {"shape past 2^63 elements",
       safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,12]}})", data12),
       "the shape of tensor 'a' [4294967296,4294967296] has more elements than fit in memory"},
      // No element and no byte, but strides (products of the sizes after the zero) past 2^63:
      // every partial product is checked, not only the total.
      {"shape past 2^63 elements after an empty axis",
       safetensors_bytes(
           R"({"a":{"dtype":"F32","shape":[0,9223372036854775807,9223372036854775807],"data_offsets":[0,0]}})", ""),
       "the shape of tensor 'a' [0,9223372036854775807,9223372036854775807] has more elements than fit in memory"},
      {"shape too large to address",
       safetensors_bytes(R"({"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,12]}})", data12),
       "tensor 'a' has shape [2305843009213693952] too large to address"},
      // The JSON parser keeps the last of two equal keys: which one the writer meant is unknowable.
      {"tensor named twice",
       safetensors_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                         R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                         data12),
       "tensor 'a' appears twice in the header"},
      {"dtype given twice",
       safetensors_bytes(R"({"a":{"dtype":"F64","shape":[3],"data_offsets":[0,12],"dtype":"F32"}})", data12),
       "tensor 'a' has the key 'dtype' twice"},
      {"metadata twice", safetensors_bytes(R"({"__metadata__":{"k":"v"},"__metadata__":{"k":"w"}})", ""),
       "__metadata__ appears twice in the header"},
      {"metadata key twice", safetensors_bytes(R"({"__metadata__":{"k":"v","k":"w"}})", ""),
       "__metadata__ has the key 'k' twice"},
      {"huge tensor, few bytes",
       safetensors_bytes(R"({"a":{"dtype":"F64","shape":[1099511627776],"data_offsets":[0,8796093022208]}})", data12),
       "truncated: the tensors need 8796093022208 data bytes but only 12"},
  };
}

// A JSON value nested this deep: parsing it is iterative, so only a recursive walk could fail.
std::string nested_array(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST_F(CheckpointTest, SafetensorsRejectsEveryMalformedFile) {
  for (const MalformedCase& c : malformed_cases()) {
    SCOPED_TRACE(c.label);
    write_bytes(file("bad.safetensors"), c.bytes);
    EXPECT_TRUE(throws_with<ValueError>([&] { nn::load_safetensors<float>(file("bad.safetensors")); },
                                        {"load_safetensors", "bad.safetensors", c.problem}));
  }
}

TEST_F(CheckpointTest, SafetensorsParsesBytesInMemoryWithTheFileLoadersChecks) {
  nn::save_safetensors(file("ok.safetensors"), sample_tensors<float>(), {{"k", "v"}});
  const auto from_file = nn::load_safetensors<float>(file("ok.safetensors"));
  const auto from_bytes = nn::parse_safetensors<float>(read_bytes(file("ok.safetensors")), "in memory");
  EXPECT_EQ(from_bytes.metadata, from_file.metadata);
  EXPECT_EQ(from_bytes.dtypes, from_file.dtypes);
  ASSERT_EQ(from_bytes.tensors.size(), from_file.tensors.size());
  for (const auto& [name, value] : from_file.tensors) EXPECT_TRUE(bit_equal(from_bytes.tensors.at(name), value)) << name;
  for (const MalformedCase& c : malformed_cases()) {
    SCOPED_TRACE(c.label);
    EXPECT_TRUE(throws_with<ValueError>([&] { nn::parse_safetensors<double>(c.bytes, "in memory"); },
                                        {"load_safetensors('in memory')", c.problem}));
  }
}

// Found while preparing fuzz/fuzz_safetensors: the error message printed the offending JSON value
// with dump(), which recurses once per nesting level, so a header nesting a million arrays
// overflowed the stack (the fuzzer's inputs, 4 KB by default, nest too shallow to show it).
TEST_F(CheckpointTest, SafetensorsRejectsDeeplyNestedJsonWithoutOverflowingTheStack) {
  const std::string deep = nested_array(1'000'000);
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        nn::parse_safetensors<float>(
            safetensors_bytes(R"({"a":{"dtype":"F32","shape":[)" + deep + R"(],"data_offsets":[0,0]}})", ""), "deep");
      },
      {"tensor 'a' has a shape entry that is not a non-negative integer: array"}));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { nn::parse_safetensors<float>(safetensors_bytes(R"({"__metadata__":{"m":)" + deep + "}}", ""), "deep"); },
      {"__metadata__ 'm' is not a string but array"}));
}

TEST_F(CheckpointTest, SafetensorsRejectsAMissingFileOrADirectory) {
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::load_safetensors<float>(file("nope.safetensors")); },
                                      {"load_safetensors", "nope.safetensors", "no such file"}));
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::load_safetensors<float>(dir_); }, {"not a regular file"}));
}

// Lets this process open no more files than it has open now (open fails with EMFILE, root or
// not), for the lifetime of the guard.
class NoMoreFileDescriptors {
 public:
  NoMoreFileDescriptors() {
    getrlimit(RLIMIT_NOFILE, &old_);
    const int lowest_free = ::open("/dev/null", O_RDONLY);
    ::close(lowest_free);
    rlimit limit = old_;
    limit.rlim_cur = static_cast<rlim_t>(lowest_free);
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  ~NoMoreFileDescriptors() { setrlimit(RLIMIT_NOFILE, &old_); }

 private:
  rlimit old_;
};

TEST_F(CheckpointTest, FailedSaveLeavesThePreviousFileIntact_TempFileCannotBeCreated) {
  const fs::path path = file("ckpt.safetensors");
  nn::save_safetensors(path, sample_tensors<float>(), {{"step", "1"}});
  const std::string before = read_bytes(path);
  StateDict<float> other{{"x", xt::xarray<float>{1.0f}}};
  {
    NoMoreFileDescriptors limit;
    EXPECT_TRUE(throws_with<ValueError>(
        [&] { nn::save_safetensors(path, other); },
        {"save_safetensors", "ckpt.safetensors", "cannot create the temp file", "previous file is unchanged"}));
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"ckpt.safetensors"});
}

// A save replaces a file as writing it in place would look, where a bare rename would differ.
TEST_F(CheckpointTest, SaveWritesThroughALinkAndKeepsThePermissions) {
  const fs::path real = file("run3.safetensors"), link = file("latest.safetensors");
  nn::save_safetensors(real, sample_tensors<float>());
  fs::create_symlink(real.filename(), link);
  fs::permissions(real, fs::perms::owner_read | fs::perms::owner_write);  // a private checkpoint
  const StateDict<float> next{{"x", xt::xarray<float>{1.0f, 2.0f}}};
  nn::save_safetensors(link, next);
  EXPECT_TRUE(fs::is_symlink(link));  // still the link, now to the new contents
  EXPECT_TRUE(bit_equal(nn::load_safetensors<float>(real).tensors.at("x"), next.at("x")));
  EXPECT_EQ(fs::status(real).permissions(), fs::perms::owner_read | fs::perms::owner_write);  // still private
  EXPECT_EQ(listing(), (std::vector<std::string>{"latest.safetensors", "run3.safetensors"}));
}

TEST_F(CheckpointTest, SaveRefusesToReplaceAReadOnlyFile) {
  const fs::path path = file("kept.safetensors");
  nn::save_safetensors(path, sample_tensors<float>());
  const std::string before = read_bytes(path);
  fs::permissions(path, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  EXPECT_TRUE(throws_with<ValueError>(
      [&] { nn::save_safetensors(path, StateDict<float>{{"x", xt::xarray<float>{1.0f}}}); },
      {"save_safetensors('", "kept.safetensors'): the file is read-only (mode 0444)", "previous file is unchanged"}));
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"kept.safetensors"});
}

// A bare rename would put a regular file in the place of a device or a FIFO (as root, of /dev/null).
TEST_F(CheckpointTest, SaveRefusesToReplaceAnythingButARegularFile) {
  const fs::path fifo = file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::save_npy<double>(fifo, xt::zeros<double>({2})); },
                                      {"save_npy('", "pipe'): it is a FIFO, not a regular file"}));
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::save_npy<double>(dir_, xt::zeros<double>({2})); },
                                      {"it is a directory, not a regular file"}));
  EXPECT_EQ(listing(), std::vector<std::string>{"pipe"});
}

// Threads saving one path at once, while another thread loads it: every load sees one whole file
// that one of the writers wrote (their tensors differ in size and value, so half of one file or
// a mix of two cannot pass), no save fails, and no temp file is left behind.
TEST_F(CheckpointTest, ConcurrentSavesOfOnePathEachLandWhole) {
  constexpr int kWriters = 4, kRounds = 25;
  const fs::path path = file("shared.safetensors");
  std::vector<StateDict<float>> contents;
  for (int w = 0; w < kWriters; ++w) {
    xt::xarray<float> value = xt::xarray<float>::from_shape({std::size_t(w + 1) * 100});
    value.fill(static_cast<float>(w));
    contents.push_back({{"w", value}});
  }
  nn::save_safetensors(path, contents[0]);
  std::mutex failures_mutex;
  std::vector<std::string> failures;
  const auto record = [&](const std::string& what) {
    std::lock_guard lock(failures_mutex);
    failures.push_back(what);
  };
  std::atomic<int> writing{kWriters};
  std::atomic<int> loads{0};
  std::thread reader([&] {
    while (writing.load() > 0 || loads.load() == 0) {
      try {
        const xt::xarray<float> w = nn::load_safetensors<float>(path).tensors.at("w");
        const bool whole = std::any_of(contents.begin(), contents.end(),
                                       [&](const StateDict<float>& c) { return bit_equal(w, c.at("w")); });
        if (!whole) record("a load saw a tensor of " + std::to_string(w.size()) + " elements no writer wrote");
      } catch (const std::exception& e) {
        record(std::string("load: ") + e.what());
      }
      ++loads;
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int round = 0; round < kRounds; ++round) {
        try {
          nn::save_safetensors(path, contents[static_cast<std::size_t>(w)]);
        } catch (const std::exception& e) {
          record(std::string("save: ") + e.what());
        }
      }
      --writing;
    });
  }
  for (std::thread& t : writers) t.join();
  reader.join();
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures, the first: " << failures.front();
  EXPECT_EQ(listing(), std::vector<std::string>{"shared.safetensors"});  // no temp file left behind
}

// Limits the size of files this process may write (writes beyond it fail with EFBIG instead of
// raising SIGXFSZ), for the lifetime of the guard.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old_);
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_;
  void (*old_handler_)(int);
};

TEST_F(CheckpointTest, FailedSaveLeavesThePreviousFileIntact_WriteFailsHalfway) {
  const fs::path path = file("ckpt.safetensors");
  nn::save_safetensors(path, sample_tensors<float>(), {{"step", "1"}});
  const std::string before = read_bytes(path);
  StateDict<float> big{{"w", xt::xarray<float>::from_shape({64, 64})}};  // 16 KiB of data
  big["w"].fill(3.0f);
  {
    FileSizeLimit limit(4096);
    EXPECT_TRUE(
        throws_with<ValueError>([&] { nn::save_safetensors(path, big); },
                                {"save_safetensors", "ckpt.safetensors", "failed", "previous file is unchanged"}));
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"ckpt.safetensors"});  // the partial temp file is gone
  // Without the limit the same save goes through and replaces the file.
  nn::save_safetensors(path, big);
  EXPECT_TRUE(bit_equal(nn::load_safetensors<float>(path).tensors.at("w"), big.at("w")));
}

// ---- module checkpoints ----

// fc = Linear(3, 2) and a dropout stream: parameters "fc.weight" [2,3], "fc.bias" [2]; generator
// "drop.stream".
template <class T>
class Net : public nn::Module<T> {
 public:
  explicit Net(Generator& gen, std::size_t in = 3) {
    fc = this->register_module("fc", std::make_shared<nn::Linear<T>>(in, 2, gen));
    drop = this->register_module("drop", std::make_shared<nn::Dropout<T>>(gen, 0.1));
  }
  std::string type_name() const override { return "Net"; }
  std::shared_ptr<nn::Linear<T>> fc;
  std::shared_ptr<nn::Dropout<T>> drop;
};

Generator& stream_of(Net<float>& net) { return *net.named_generators().at(0).second; }

TEST_F(CheckpointTest, CheckpointRoundTripRestoresEverything) {
  Generator gen_a(1), gen_b(2);
  Net<float> a(gen_a), b(gen_b);
  stream_of(a).next_u64();  // the dropout stream has advanced
  Generator data(77);
  data.randint(0, 10);
  StateDict<float> optimizer_state{{"fc.weight.exp_avg", xt::xarray<float>{{1, 2, 3}, {4, 5, 6}}},
                                   {"fc.weight.step", xt::xarray<float>(5.0f)}};
  nn::save_checkpoint(file("c.safetensors"), a, optimizer_state, 42, {{"data", &data}});

  // The file itself: PyTorch names and layouts, prefixed optimiser state, decimal metadata.
  const auto raw = nn::load_safetensors<float>(file("c.safetensors"));
  EXPECT_EQ(raw.tensors.at("fc.weight").shape(), (xt::xarray<float>::shape_type{2, 3}));
  EXPECT_TRUE(raw.tensors.count("optimizer.fc.weight.exp_avg"));
  EXPECT_EQ(raw.metadata.at("step"), "42");
  EXPECT_EQ(raw.metadata.at("generator.drop.stream.seed"), std::to_string(stream_of(a).seed()));
  EXPECT_EQ(raw.metadata.at("generator.drop.stream.offset"), "1");
  EXPECT_EQ(raw.metadata.at("generator.data.seed"), "77");

  Generator restored_data(5);
  const auto loaded = nn::load_checkpoint(file("c.safetensors"), b, true, {{"data", &restored_data}});
  for (const auto& [name, value] : a.state_dict()) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(bit_equal(b.state_dict().at(name), value));
  }
  EXPECT_EQ(loaded.step, 42u);
  ASSERT_EQ(loaded.optimizer_state.size(), 2u);
  EXPECT_TRUE(bit_equal(loaded.optimizer_state.at("fc.weight.exp_avg"), optimizer_state.at("fc.weight.exp_avg")));
  EXPECT_EQ(loaded.optimizer_state.at("fc.weight.step")(), 5.0f);
  EXPECT_EQ(stream_of(b).seed(), stream_of(a).seed());
  EXPECT_EQ(stream_of(b).offset(), stream_of(a).offset());
  EXPECT_EQ(restored_data.seed(), data.seed());
  EXPECT_EQ(restored_data.offset(), data.offset());
  EXPECT_EQ(restored_data.next_u64(), data.next_u64());
  EXPECT_TRUE(loaded.missing_generators.empty());
  EXPECT_TRUE(loaded.parameters.missing_keys.empty());
}

// The caller's metadata travels in __metadata__ only: the tensors' bytes are those of a checkpoint
// without it, and the checkpoint's own keys cannot be overwritten through it.
TEST_F(CheckpointTest, CallerMetadataRoundTripsAndChangesNoTensorByte) {
  Generator gen_a(1), gen_b(2);
  Net<float> a(gen_a), b(gen_b);
  nn::save_checkpoint(file("plain.safetensors"), a, {}, 3);
  nn::save_checkpoint(file("noted.safetensors"), a, {}, 3, {}, {{"run.note", "seq 10"}});
  const auto plain = nn::load_safetensors<float>(file("plain.safetensors"));
  const auto noted = nn::load_safetensors<float>(file("noted.safetensors"));
  ASSERT_EQ(noted.tensors.size(), plain.tensors.size());
  for (const auto& [name, value] : plain.tensors) EXPECT_TRUE(bit_equal(noted.tensors.at(name), value)) << name;
  EXPECT_EQ(nn::load_checkpoint(file("noted.safetensors"), b).metadata, (nn::Metadata{{"run.note", "seq 10"}}));
  EXPECT_TRUE(nn::load_checkpoint(file("plain.safetensors"), b).metadata.empty());
  for (const char* reserved : {"step", "generator.drop.stream.seed"}) {
    EXPECT_TRUE(throws_with<ValueError>(
        [&] { nn::save_checkpoint(file("bad.safetensors"), a, {}, 3, {}, {{reserved, "1"}}); },
        {"save_checkpoint", "metadata key '" + std::string(reserved) + "'", "reserved"}));
  }
  EXPECT_FALSE(fs::exists(file("bad.safetensors")));
}

// One Adam step of a tied model on a fixed batch.
void train_step(testing::TiedLm<float>& lm, optim::Adam<float>& adam) {
  adam.zero_grad();
  {
    GradientTape tape;
    tape.backward(cross_entropy(lm.forward(IndexArray{0, 3, 4, 3}), IndexArray{3, 4, 0, 1}));
  }
  adam.step();
}

TEST_F(CheckpointTest, TiedModelComesBackTiedAndTrainsOnIdentically) {
  Generator gen_a(1), gen_b(2);
  testing::TiedLm<float> a(5, 3, gen_a), b(5, 3, gen_b);
  optim::Adam<float> adam_a(a.named_parameters(), {.lr = 0.01}), adam_b(b.named_parameters(), {.lr = 0.01});
  train_step(a, adam_a);
  train_step(a, adam_a);
  nn::save_checkpoint(file("tied.safetensors"), a, adam_a.state(), 2);

  // Every name is in the file (as PyTorch's state_dict); the optimiser state once, by the first name.
  const auto raw = nn::load_safetensors<float>(file("tied.safetensors"));
  EXPECT_TRUE(raw.tensors.count("embed.weight") && raw.tensors.count("generator.weight"));
  EXPECT_TRUE(raw.tensors.count("optimizer.embed.weight.exp_avg"));
  EXPECT_FALSE(raw.tensors.count("optimizer.generator.weight.exp_avg"));

  const auto loaded = nn::load_checkpoint(file("tied.safetensors"), b);
  adam_b.load_state(loaded.optimizer_state);
  const auto all = b.named_parameters(/*remove_duplicate=*/false);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_TRUE(all[0].second.same_node(all[1].second));
  for (int step = 0; step < 2; ++step) {
    train_step(a, adam_a);
    train_step(b, adam_b);
  }
  EXPECT_TRUE(bit_equal(b.embed->weight().value(), a.embed->weight().value()));
}

// Writes a checkpoint of `net` whose tensors are edited by `edit` (keys added, removed, reshaped).
template <class Edit>
void write_edited(const fs::path& path, Net<float>& net, Edit edit) {
  StateDict<float> tensors = net.state_dict();
  edit(tensors);
  nn::save_safetensors(path, tensors,
                       {{"step", "3"}, {"generator.drop.stream.seed", "9"}, {"generator.drop.stream.offset", "4"}});
}

TEST_F(CheckpointTest, StrictLoadRejectsMissingAndUnexpectedKeysAndChangesNothing) {
  Generator gen_a(1), gen_b(2);
  Net<float> a(gen_a), b(gen_b);
  write_edited(file("c.safetensors"), a, [](StateDict<float>& t) {
    t.erase("fc.bias");
    t["extra.weight"] = xt::xarray<float>{1.0f};
  });
  const auto before = b.state_dict();
  const std::uint64_t stream_seed = stream_of(b).seed();
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::load_checkpoint(file("c.safetensors"), b); },
                                      {"missing keys [fc.bias]", "unexpected keys [extra.weight]"}));
  EXPECT_TRUE(bit_equal(b.state_dict().at("fc.weight"), before.at("fc.weight")));
  EXPECT_EQ(stream_of(b).seed(), stream_seed);

  const auto loaded = nn::load_checkpoint(file("c.safetensors"), b, /*strict=*/false);
  EXPECT_EQ(loaded.parameters.missing_keys, std::vector<std::string>{"fc.bias"});
  EXPECT_EQ(loaded.parameters.unexpected_keys, std::vector<std::string>{"extra.weight"});
  EXPECT_TRUE(bit_equal(b.state_dict().at("fc.weight"), a.state_dict().at("fc.weight")));
  EXPECT_TRUE(bit_equal(b.state_dict().at("fc.bias"), before.at("fc.bias")));
  EXPECT_EQ(stream_of(b).seed(), 9u);
  EXPECT_EQ(stream_of(b).offset(), 4u);
  EXPECT_EQ(loaded.step, 3u);
}

TEST_F(CheckpointTest, MisShapedKeyThrowsShapeErrorStrictOrNot) {
  Generator gen_a(1), gen_b(2);
  Net<float> a(gen_a, /*in=*/4), b(gen_b);  // a's fc.weight is [2,4], b's [2,3]
  write_edited(file("c.safetensors"), a, [](StateDict<float>&) {});
  const auto before = b.state_dict();
  for (const bool strict : {true, false}) {
    SCOPED_TRACE(strict);
    EXPECT_TRUE(throws_with<ShapeError>([&] { nn::load_checkpoint(file("c.safetensors"), b, strict); },
                                        {"'fc.weight'", "[2,4]", "[2,3]"}));
    EXPECT_TRUE(bit_equal(b.state_dict().at("fc.bias"), before.at("fc.bias")));
  }
}

TEST_F(CheckpointTest, LoadRejectsAnotherDtype) {
  Generator gen_a(1), gen_b(2);
  Net<double> a(gen_a);
  Net<float> b(gen_b);
  nn::save_checkpoint(file("c.safetensors"), a);
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::load_checkpoint(file("c.safetensors"), b); },
                                      {"load_checkpoint", "c.safetensors", "is stored as F64 but the model is F32"}));
}

TEST_F(CheckpointTest, StrictLoadDemandsEveryGeneratorState) {
  Generator gen_a(1), gen_b(2), data(3);
  Net<float> a(gen_a), b(gen_b);
  // Parameters only, as a PyTorch export would be.
  nn::save_safetensors(file("params.safetensors"), a.state_dict());
  const std::uint64_t stream_seed = stream_of(b).seed();
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::load_checkpoint(file("params.safetensors"), b); },
                                      {"missing generator states [drop.stream]"}));
  const auto loaded = nn::load_checkpoint(file("params.safetensors"), b, /*strict=*/false, {{"data", &data}});
  EXPECT_EQ(loaded.missing_generators, (std::vector<std::string>{"drop.stream", "data"}));
  EXPECT_EQ(stream_of(b).seed(), stream_seed);
  EXPECT_TRUE(bit_equal(b.state_dict().at("fc.weight"), a.state_dict().at("fc.weight")));

  // A checkpoint with a generator the loading side does not have.
  nn::save_checkpoint(file("c.safetensors"), a, {}, 0, {{"data", &data}});
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::load_checkpoint(file("c.safetensors"), b); },
                                      {"unexpected generator states [data]"}));
  EXPECT_EQ(nn::load_checkpoint(file("c.safetensors"), b, false).unexpected_generators,
            std::vector<std::string>{"data"});
}

TEST_F(CheckpointTest, LoadRejectsMalformedGeneratorStatesAndStep) {
  Generator gen_a(1), gen_b(2);
  Net<float> a(gen_a), b(gen_b);
  const StateDict<float> params = a.state_dict();
  const std::vector<std::pair<nn::Metadata, std::string>> cases = {
      {{{"step", "12x"}, {"generator.drop.stream.seed", "1"}, {"generator.drop.stream.offset", "2"}},
       "__metadata__ 'step' = '12x' is not a decimal integer"},
      {{{"generator.drop.stream.seed", "-1"}, {"generator.drop.stream.offset", "2"}},
       "'generator.drop.stream.seed' = '-1' is not a decimal integer"},
      {{{"generator.drop.stream.seed", "1"}}, "generator 'drop.stream' has only one of"},
  };
  for (const auto& [metadata, problem] : cases) {
    SCOPED_TRACE(problem);
    nn::save_safetensors(file("c.safetensors"), params, metadata);
    EXPECT_TRUE(throws_with<ValueError>([&] { nn::load_checkpoint(file("c.safetensors"), b); },
                                        {"load_checkpoint", "c.safetensors", problem}));
  }
}

TEST_F(CheckpointTest, SaveRejectsCollidingNames) {
  Generator gen(1);
  Net<float> a(gen);
  Generator other(2);
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        nn::save_checkpoint(file("c.safetensors"), a, {}, 0, {{"drop.stream", &other}});
      },
      {"save_checkpoint", "generator name 'drop.stream' is used twice"}));

  // A child named "optimizer" would be read back as optimiser state.
  class Clash : public nn::Module<float> {
   public:
    explicit Clash(Generator& g) { this->register_module("optimizer", std::make_shared<nn::Linear<float>>(1, 1, g)); }
    std::string type_name() const override { return "Clash"; }
  } clash(gen);
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::save_checkpoint(file("c.safetensors"), clash); },
                                      {"save_checkpoint", "parameter 'optimizer.bias'"}));
  EXPECT_TRUE(listing().empty());
}

// ---- .npy ----

TYPED_TEST(SafetensorsRoundTrip, NpyComesBackBitExact) {
  using T = TypeParam;
  for (const auto& [name, value] : sample_tensors<T>()) {
    SCOPED_TRACE(name);
    nn::save_npy(this->file(name + ".npy"), value);
    EXPECT_TRUE(bit_equal(nn::load_npy<T>(this->file(name + ".npy")), value));
  }
}

// The .npy 1.0 layout NumPy writes: magic, version, LE header length, a Python dict literal
// padded with spaces and ended by '\n' to a multiple of 64 bytes, then the data.
std::string npy_bytes(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size() & 0xff) +
         static_cast<char>(header.size() >> 8) + header + data;
}

std::string doubles_le(std::initializer_list<double> values) {
  std::string out;
  for (double v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
  return out;
}

TEST_F(CheckpointTest, NpyLayoutIsNumpys) {
  nn::save_npy(file("x.npy"), xt::xarray<float>{{1.0f, -2.0f}});
  const std::string bytes = read_bytes(file("x.npy"));
  ASSERT_EQ(bytes.size(), 128u + 8);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(bytes.substr(8, 2), std::string("\x76\x00", 2));  // 118 header bytes after the first 10
  const std::string header = bytes.substr(10, 118);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'fortran_order': False"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (1, 2)"), std::string::npos) << header;
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(bytes.substr(128), std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8));
}

TEST_F(CheckpointTest, NpyReadsNumpyFloat64AndFortranOrder) {
  // np.asfortranarray([[1, 2, 3], [4, 5, 6]]) stores the columns one after the other.
  write_bytes(file("f.npy"),
              npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", doubles_le({1, 4, 2, 5, 3, 6})));
  EXPECT_EQ(nn::load_npy<float>(file("f.npy")), (xt::xarray<float>{{1, 2, 3}, {4, 5, 6}}));
  EXPECT_EQ(nn::load_npy<double>(file("f.npy")), (xt::xarray<double>{{1, 2, 3}, {4, 5, 6}}));
}

TEST_F(CheckpointTest, NpyRejectsMalformedFiles) {
  const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }";
  const std::string good = npy_bytes(dict, doubles_le({1, 2, 3}));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"PK\x03\x04 a zip file", "bad magic"},
      {std::string("\x93NUMPY\x03\x00\x00\x00", 10), "unsupported .npy version 3.0"},
      {good.substr(0, 40), "truncated or corrupt header"},
      {good.substr(0, good.size() - 8), "truncated: the header's shape [3] needs 24 data bytes but the file has 16"},
      {npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", doubles_le({1, 2, 3})), "dtype '<i8'"},
      {npy_bytes("{'descr': '<f8', 'shape': (3,), }", doubles_le({1, 2, 3})), "malformed header"},
  };
  for (const auto& [bytes, problem] : cases) {
    SCOPED_TRACE(problem);
    write_bytes(file("bad.npy"), bytes);
    EXPECT_TRUE(
        throws_with<ValueError>([&] { nn::load_npy<double>(file("bad.npy")); }, {"load_npy", "bad.npy", problem}));
  }
  EXPECT_TRUE(throws_with<ValueError>([&] { nn::load_npy<double>(file("none.npy")); },
                                      {"load_npy", "none.npy", "no such file"}));
}

TEST_F(CheckpointTest, FailedNpySaveLeavesThePreviousFileIntact) {
  nn::save_npy(file("x.npy"), xt::xarray<double>{1.0, 2.0});
  const std::string before = read_bytes(file("x.npy"));
  xt::xarray<double> big = xt::xarray<double>::from_shape({4096});
  big.fill(1.0);
  {
    FileSizeLimit limit(1024);
    EXPECT_TRUE(throws_with<ValueError>([&] { nn::save_npy(file("x.npy"), big); }, {"save_npy", "x.npy", "failed"}));
  }
  EXPECT_EQ(read_bytes(file("x.npy")), before);
  EXPECT_EQ(listing(), std::vector<std::string>{"x.npy"});
}

// ---- resuming the copy task ----

copy_task::Config tiny_config() {
  copy_task::Config c;
  c.batch = 16;
  c.batches_per_epoch = 3;
  c.d_model = 16;
  c.d_ff = 32;
  c.heads = 2;
  c.layers = 1;
  c.dropout = 0.1;
  c.warmup = 10;
  c.seed = 5;
  return c;
}

struct TrainingRun {
  std::vector<double> losses, learning_rates;
};

TrainingRun train(copy_task::Trainer& trainer, std::size_t epochs) {
  TrainingRun run;
  for (std::size_t e = 0; e < epochs; ++e) {
    const auto stats = trainer.run_epoch([&](std::size_t, double loss) { run.losses.push_back(loss); });
    run.learning_rates.push_back(stats.learning_rate);
  }
  return run;
}

TEST_F(CheckpointTest, ResumedCopyTaskTrainingMatchesTheUninterruptedRunBitForBit) {
  const copy_task::Config config = tiny_config();
  copy_task::Trainer uninterrupted(config);
  train(uninterrupted, 2);
  uninterrupted.save(file("copy.safetensors"));
  const TrainingRun expected = train(uninterrupted, 2);

  // Another seed, so every bit of state that matters has to come from the checkpoint.
  copy_task::Config other = config;
  other.seed = 99;
  copy_task::Trainer resumed(other);
  resumed.load(file("copy.safetensors"));
  EXPECT_EQ(resumed.steps(), 6u);
  const TrainingRun got = train(resumed, 2);
  ASSERT_EQ(got.losses.size(), 6u);
  for (std::size_t i = 0; i < got.losses.size(); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(got.losses[i]), std::bit_cast<std::uint64_t>(expected.losses[i]))
        << "step " << i << ": " << got.losses[i] << " vs " << expected.losses[i];
  }
  EXPECT_EQ(got.learning_rates, expected.learning_rates);
  EXPECT_EQ(resumed.steps(), uninterrupted.steps());

  // The comparison can fail: a run that starts from scratch does not reproduce those losses.
  copy_task::Trainer fresh(config);
  EXPECT_NE(train(fresh, 2).losses, expected.losses);
}

// A checkpoint records the sequence length it was trained at, and load returns it; a file written
// before it was recorded loads as before and says nothing.
TEST_F(CheckpointTest, TrainerRecordsTheSequenceLengthItTrainedAt) {
  copy_task::Trainer trained(tiny_config());
  trained.save(file("copy.safetensors"));
  auto raw = nn::load_safetensors<float>(file("copy.safetensors"));
  EXPECT_EQ(raw.metadata.at("copy_task.seq_len"), "10");
  copy_task::Config longer = tiny_config();
  longer.seq_len = 20;
  copy_task::Trainer other(longer);
  EXPECT_EQ(other.load(file("copy.safetensors")), std::optional<std::size_t>(10));

  raw.metadata.erase("copy_task.seq_len");
  nn::save_safetensors(file("old.safetensors"), raw.tensors, raw.metadata);
  EXPECT_EQ(other.load(file("old.safetensors")), std::nullopt);

  raw.metadata["copy_task.seq_len"] = "ten";
  nn::save_safetensors(file("bad.safetensors"), raw.tensors, raw.metadata);
  EXPECT_TRUE(throws_with<ValueError>([&] { other.load(file("bad.safetensors")); },
                                      {"copy_task::Trainer::load", "bad.safetensors", "'copy_task.seq_len' = 'ten'"}));
}

TEST_F(CheckpointTest, TrainerLoadRejectsACheckpointOfAnotherModel) {
  copy_task::Trainer small(tiny_config());
  small.save(file("copy.safetensors"));
  copy_task::Config wider = tiny_config();
  wider.d_model = 32;
  wider.d_ff = 64;
  copy_task::Trainer other(wider);
  EXPECT_THROW(other.load(file("copy.safetensors")), ShapeError);
}

}  // namespace
}  // namespace tapegrad
