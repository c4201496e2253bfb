#include "examples/cli/flags.h"

#include <charconv>
#include <cmath>
#include <sstream>

namespace tapegrad::examples {

namespace {

// Longer echoes are cut to their first kKeep characters: enough to recognise the value.
constexpr std::size_t kMaxEcho = 40, kKeep = 24;

std::string describe_integers(std::uint64_t min, std::uint64_t max) {
  if (max == kNoLimit && min <= 1) return min == 1 ? "a positive integer" : "a non-negative integer";
  return "an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

// A check that the flag's value parses as a finite number for which ok() holds.
template <class Ok>
CLI::Validator number_that(const std::string& wanted, Ok ok) {
  return CLI::Validator(
      [=](std::string& text) {
        double value = 0.0;
        if (CLI::detail::lexical_cast(text, value) && std::isfinite(value) && ok(value)) return std::string();
        return "must be " + wanted + ", got " + quoted_value(text);
      },
      wanted);
}

}  // namespace

std::string shorten(std::string_view text) {
  if (text.size() <= kMaxEcho) return std::string(text);
  return std::string(text.substr(0, kKeep)) + "... (" + std::to_string(text.size()) + " characters)";
}

std::string visible(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      constexpr const char* kHex = "0123456789abcdef";
      out += std::string("\\x") + kHex[byte >> 4] + kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

std::string quoted_value(std::string_view text) {
  if (text.size() <= kMaxEcho) return "'" + visible(text) + "'";
  return "'" + visible(text.substr(0, kKeep)) + "...' (" + std::to_string(text.size()) + " characters)";
}

CLI::Validator integer_in(std::uint64_t min, std::uint64_t max, std::string wanted) {
  if (wanted.empty()) wanted = describe_integers(min, max);
  return CLI::Validator(
      [=](std::string& text) {
        std::uint64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        const bool digits = !text.empty() && end == text.data() + text.size();
        if (digits && error == std::errc() && value >= min && value <= max) return std::string();
        // Without an upper limit in `wanted`, say why a long number is refused.
        const bool too_long = digits && error == std::errc::result_out_of_range && max == kNoLimit;
        const std::string why = too_long ? " (more than 2^64 - 1)" : "";
        return "must be " + wanted + ", got " + quoted_value(text) + why;
      },
      wanted);
}

CLI::Validator number_in(double min, double max) {
  std::ostringstream wanted;
  wanted << "a number from " << min << " to " << max;
  return number_that(wanted.str(), [=](double v) { return v >= min && v <= max; });
}

CLI::Validator positive_number() {
  return number_that("a positive number", [](double v) { return v > 0.0; });
}

void add_switch(CLI::App& app, const std::string& name, bool& value, const std::string& description) {
  CLI::Option* on = app.add_flag_callback("--" + name, [&value] { value = true; }, description);
  CLI::Option* off = app.add_flag_callback("--no-" + name, [&value] { value = false; }, "the opposite of --" + name);
  on->excludes(off);
  (value ? on : off)->option_text("(the default)");
}

void use_short_messages(CLI::App& app, const std::string& program) {
  app.failure_message([program](const CLI::App*, const CLI::Error& e) {
    // Split at single spaces only: a run of spaces, or any other whitespace, may be part of the
    // value that was refused, and is kept (made visible) rather than collapsed.
    std::istringstream words(visible(e.what()));
    std::string message = program + ":", word;
    while (std::getline(words, word, ' ')) message += " " + shorten(word);
    return message + "\nRun with --help for more information.\n";
  });
}

}  // namespace tapegrad::examples
