// examples/cli: the flag checks, output-path checks and outer error handling that copy_task and
// attention_study share (their rows in docs/bad-inputs.md run the programs themselves).
#include <unistd.h>

#include <filesystem>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "examples/cli/flags.h"
#include "examples/cli/output_path.h"
#include "examples/cli/program.h"

namespace tapegrad::examples {
namespace {

namespace fs = std::filesystem;

// What the validator says about text: "" when it accepts it.
std::string verdict(const CLI::Validator& check, std::string text) { return check(text); }

TEST(ExampleCli, IntegersAreDecimalDigitsInRangeNeverWrappedOrClamped) {
  const CLI::Validator positive = positive_integer();
  for (const char* ok : {"1", "007", "18446744073709551615"}) EXPECT_EQ(verdict(positive, ok), "") << ok;
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"0", "must be a positive integer, got '0'"},
      {"-1", "must be a positive integer, got '-1'"},
      {"+1", "got '+1'"},
      {"0x10", "got '0x10'"},
      {"1e3", "got '1e3'"},
      {"2.5", "got '2.5'"},
      {"", "got ''"},
      {"18446744073709551616", "got '18446744073709551616' (more than 2^64 - 1)"},
      // The characters that make a value invalid are echoed, visibly.
      {" 1", "got ' 1'"},
      {"1 ", "got '1 '"},
      {"1\t", "got '1\\t'"},
      {"\n1", "got '\\n1'"},
      {"1\x01", "got '1\\x01'"},
  };
  for (const auto& [text, message] : refused) {
    const std::string said = verdict(positive, text);
    EXPECT_NE(said.find(message), std::string::npos) << "'" << text << "' gives \"" << said << "\"";
  }
  EXPECT_EQ(verdict(integer_in(0, kNoLimit), "0"), "");
  EXPECT_NE(verdict(integer_in(2, 64), "65").find("must be an integer from 2 to 64, got '65'"), std::string::npos);
}

TEST(ExampleCli, NumbersMustBeFiniteAndInRange) {
  EXPECT_EQ(verdict(number_in(0, 1), "0.5"), "");
  for (const char* bad : {"nan", "inf", "-0.1", "1.5", "1e400", "abc"})
    EXPECT_NE(verdict(number_in(0, 1), bad), "") << bad;
  EXPECT_NE(verdict(positive_number(), "0").find("must be a positive number, got '0'"), std::string::npos);
  EXPECT_NE(verdict(positive_number(), "1 ").find("must be a positive number, got '1 '"), std::string::npos);
}

TEST(ExampleCli, EchoesOfLongValuesAreShortened) {
  const std::string forty(40, '9');
  EXPECT_EQ(shorten(forty), forty);
  EXPECT_EQ(shorten(forty + "9"), std::string(24, '9') + "... (41 characters)");
  EXPECT_EQ(quoted_value(forty), "'" + forty + "'");
  EXPECT_EQ(quoted_value(forty + "9"), "'" + std::string(24, '9') + "...' (41 characters)");
}

// What a program with one option `--n` (a positive integer) prints for `args`, and its exit status.
std::pair<std::string, int> parse_failure(std::vector<std::string> args) {
  CLI::App app;
  use_short_messages(app, "prog");
  std::size_t n = 0;
  app.add_option("--n", n)->check(positive_integer());
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  int status = 0;
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    status = app.exit(e);
  }
  return {::testing::internal::GetCapturedStderr(), status};
}

TEST(ExampleCli, ParseErrorsNameTheProgramAndShortenEveryLongWord) {
  const std::string long_value(300, '7');
  const auto [printed, status] = parse_failure({"--n", long_value, long_value});
  EXPECT_NE(status, 0);
  EXPECT_EQ(
      printed.rfind("prog: --n: must be a positive integer, got '777777777777777777777777...' (300 characters)", 0), 0u)
      << printed;
  EXPECT_EQ(printed.find(long_value), std::string::npos) << printed;
}

// The printed message keeps what made the value invalid (it once collapsed every run of
// whitespace, so that --n ' 1' was refused with "got 1").
TEST(ExampleCli, ParseErrorsEchoTheRefusedValueExactly) {
  for (const auto& [value, echo] : std::vector<std::pair<std::string, std::string>>{
           {" 1", "' 1'"}, {"1  ", "'1  '"}, {"1\t", "'1\\t'"}, {"1\n2", "'1\\n2'"}}) {
    const auto [printed, status] = parse_failure({"--n", value});
    EXPECT_NE(status, 0);
    EXPECT_EQ(printed, "prog: --n: must be a positive integer, got " + echo + "\nRun with --help for more information.\n");
  }
}

TEST(ExampleCli, FailuresAreOneLineWithAnExitStatusAndOutOfMemoryNamesWhatRan) {
  const auto run = [](auto body, int& status) {
    ::testing::internal::CaptureStderr();
    status = run_guarded("prog", "training a model of 5 parameters", body);
    return ::testing::internal::GetCapturedStderr();
  };
  int status = -1;
  EXPECT_EQ(run([]() -> int { throw std::bad_alloc(); }, status),
            "prog: out of memory (std::bad_alloc) training a model of 5 parameters\n");
  EXPECT_EQ(status, 1);
  EXPECT_EQ(run([]() -> int { throw UsageError("--a 1 contradicts --b 2"); }, status), "prog: --a 1 contradicts --b 2\n");
  EXPECT_EQ(status, 2);
  EXPECT_EQ(run([]() -> int { throw std::runtime_error("diverged"); }, status), "prog: diverged\n");
  EXPECT_EQ(status, 1);
  EXPECT_EQ(run([] { return 7; }, status), "");
  EXPECT_EQ(status, 7);
}

// The help shows which of --x and --no-x is the default, and each sets the value.
TEST(ExampleCli, SwitchHelpShowsTheTrueDefault) {
  for (const bool initially : {true, false}) {
    bool value = initially;
    CLI::App app{"switch"};
    add_switch(app, "snapshots", value, "save snapshots");
    const std::string help = app.help();
    EXPECT_EQ(help.find('{'), std::string::npos) << help;
    const std::string default_line = initially ? "--snapshots (the default)" : "--no-snapshots (the default)";
    EXPECT_NE(help.find(default_line), std::string::npos) << help;
    EXPECT_EQ(help.find(initially ? "--no-snapshots (the default)" : "--snapshots (the default)"), std::string::npos)
        << help;
    app.parse(std::vector<std::string>{});
    EXPECT_EQ(value, initially);
    app.parse(std::vector<std::string>{initially ? "--no-snapshots" : "--snapshots"});
    EXPECT_EQ(value, !initially);
    EXPECT_THROW(app.parse(std::vector<std::string>{"--no-snapshots", "--snapshots"}), CLI::ExcludesError);
  }
}

TEST(ExampleCli, OutputPathsAreCheckedWithoutLeavingFilesBehind) {
  const fs::path dir = fs::temp_directory_path() / ("example_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  EXPECT_NO_THROW(check_output_file("--checkpoint", dir / "ck.safetensors"));
  EXPECT_NO_THROW(check_output_directory("--out", dir / "not" / "yet" / "there"));
  EXPECT_FALSE(fs::exists(dir / "not"));  // checked, not created
  EXPECT_TRUE(fs::is_empty(dir));         // the probe files are gone
  EXPECT_THROW(check_output_file("--checkpoint", dir), UsageError);
  EXPECT_THROW(check_output_file("--checkpoint", dir / "missing" / "ck.safetensors"), UsageError);
  EXPECT_THROW(check_output_file("--checkpoint", ""), UsageError);
  EXPECT_THROW(check_output_directory("--out", ""), UsageError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tapegrad::examples
