// PyTorch's own sample inputs (OpInfo's reference_inputs, float64, and test_linalg's einsum
// equations; generate_samples.py) run through tapegrad: every output and every gradient of
// sum(out * G) must match PyTorch's within 1e-10 relative, or the sample must be listed in
// differences.txt with its reason. A listed sample that passes, and a line that matches no
// sample, fail too, so the list cannot go stale. docs/pytorch-samples.md says how to update it.
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "compare.h"
#include "differences.h"
#include "dispatch.h"
#include "run_sample.h"
#include "sample_file.h"

namespace tapegrad::pytorch_samples {
namespace {

struct Result {
  const Sample* sample;
  Outcome outcome;
  const Difference* listed;  // the first line of differences.txt matching its id, or null
};

struct Sweep {
  SampleFile file;
  std::vector<Difference> differences;
  std::vector<Result> results;
};

// Runs every sample once; the tests below read the results.
const Sweep& sweep() {
  static const Sweep s = [] {
    Sweep s;
    s.file = load_samples(PYTORCH_SAMPLES_DIR);
    s.differences = load_differences(DIFFERENCES_FILE);
    for (const Sample& sample : s.file.samples) {
      const auto row = dispatch_table().find(sample.op);
      Outcome outcome = row == dispatch_table().end() ? Outcome{false, "no op spec maps the PyTorch name " + sample.op}
                                                      : run_sample(sample, row->second);
      const Difference* listed = nullptr;
      for (const Difference& d : s.differences) {
        if (matches(d.pattern, sample.id)) {
          listed = &d;
          break;
        }
      }
      s.results.push_back({&sample, std::move(outcome), listed});
    }
    return s;
  }();
  return s;
}

// Per op: samples, passing, listed under each section of differences.txt, failing.
struct Counts {
  int samples = 0, pass = 0, failing = 0;
  std::map<std::string, int> listed;  // by section
};

std::string count_table(const Sweep& s, const std::map<std::string, Counts>& per_op) {
  const char* short_names[] = {"deliberate", "not yet", "no plan", "bug"};
  std::ostringstream out;
  auto row = [&](const std::string& name, const Counts& c) {
    out << std::left << std::setw(30) << name << std::right << std::setw(8) << c.samples << std::setw(6) << c.pass;
    for (const char* section : difference_sections) {
      const auto it = c.listed.find(section);
      out << std::setw(11) << (it == c.listed.end() ? 0 : it->second);
    }
    out << std::setw(8) << c.failing << "\n";
  };
  out << "PyTorch " << s.file.torch_version << " samples through tapegrad (differences.txt sections):\n"
      << std::left << std::setw(30) << "op" << std::right << std::setw(8) << "samples" << std::setw(6) << "pass";
  for (const char* name : short_names) out << std::setw(11) << name;
  out << std::setw(8) << "failing" << "\n";
  Counts total;
  for (const auto& [op, c] : per_op) {
    row(op, c);
    total.samples += c.samples, total.pass += c.pass, total.failing += c.failing;
    for (const auto& [section, n] : c.listed) total.listed[section] += n;
  }
  row("total", total);
  out << s.file.left_out.size() << " more samples left out by generate_samples.py (too large, other dtypes)\n";
  return out.str();
}

TEST(PyTorchSamples, MatchPyTorchOrAreListedAsDifferences) {
  const Sweep& s = sweep();
  std::map<std::string, Counts> per_op;
  std::vector<std::string> failures;
  for (const Result& r : s.results) {
    Counts& c = per_op[r.sample->op];
    ++c.samples;
    const std::string& id = r.sample->id;
    if (r.outcome.passed && !r.listed) {
      ++c.pass;
    } else if (r.outcome.passed) {
      ++c.failing;
      failures.push_back(id + ": listed as a difference (differences.txt:" + std::to_string(r.listed->line) + ", " +
                         r.listed->pattern + ") but passes: remove it");
    } else if (!r.listed) {
      ++c.failing;
      failures.push_back(id + ": " + r.outcome.why);
    } else {
      ++c.listed[r.listed->section];
    }
  }
  std::cout << count_table(s, per_op);

  std::string message;
  for (const std::string& f : failures) message += "  " + f + "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " samples neither match PyTorch nor are listed in "
                                << DIFFERENCES_FILE << " (or are listed but pass):\n" << message;
}

TEST(PyTorchSamples, EveryLineOfDifferencesMatchesASample) {
  const Sweep& s = sweep();
  for (const Difference& d : s.differences) {
    bool used = false;
    for (const Result& r : s.results) used = used || r.listed == &d;
    EXPECT_TRUE(used) << DIFFERENCES_FILE << ":" << d.line << ": '" << d.pattern
                      << "' matches no sample that needs it (none, or an earlier line takes them all): remove it";
  }
}

TEST(PyTorchSamples, EveryOpHasARow) {
  for (const Sample& sample : sweep().file.samples) {
    ASSERT_TRUE(dispatch_table().count(sample.op)) << "generate_samples.py's op " << sample.op
                                                   << " is mapped by no op spec";
  }
}

TEST(PyTorchSamples, PatternsMatchWholeIdsWithStars) {
  EXPECT_TRUE(matches("add#* [2,3] [3]", "add#12 [2,3] [3]"));
  EXPECT_TRUE(matches("div.*#* *rounding_mode=*", "div.trunc_rounding#4 [2] [2] rounding_mode=trunc"));
  EXPECT_FALSE(matches("add#1", "add#12"));
  EXPECT_FALSE(matches("add#*", "sub#1 add#1"));
}

TEST(PyTorchSamples, ComparisonIsRelativeToTheTensorAndMatchesNaN) {
  const xt::xarray<double> want = {1.0, -2e-3, std::nan(""), 0.0};
  EXPECT_FALSE(mismatch(xt::xarray<double>{1.0 + 1e-13, -2e-3 + 1e-13, std::nan(""), 1e-14}, want));
  EXPECT_TRUE(mismatch(xt::xarray<double>{1.0 + 1e-9, -2e-3, std::nan(""), 0.0}, want));
  EXPECT_TRUE(mismatch(xt::xarray<double>{1.0, -2e-3 + 1e-9, std::nan(""), 0.0}, want));
  EXPECT_TRUE(mismatch(xt::xarray<double>{1.0, -2e-3, std::nan(""), 1e-9}, want));
  EXPECT_TRUE(mismatch(xt::xarray<double>{1.0, -2e-3, 0.0, 0.0}, want));
  EXPECT_TRUE(mismatch(xt::xarray<double>{1.0, -2e-3}, want));
}

}  // namespace
}  // namespace tapegrad::pytorch_samples

// `--list-pytorch-names` prints the OpInfo names the dispatch table maps, one a line, for
// generate_samples.py to sample. Otherwise the PyTorchSamples tests run: the op-spec library this
// program links for its PyTorch calls also brings its ops' own tests, which test_higher_order runs.
int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--list-pytorch-names") {
    for (const auto& [name, row] : tapegrad::pytorch_samples::dispatch_table()) std::cout << name << "\n";
    return 0;
  }
  GTEST_FLAG_SET(filter, "PyTorchSamples.*");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
