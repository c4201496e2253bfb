#pragma once
// Command-line flags of the example programs (CLI11), shared so that every program rejects a bad
// value the same way: with a message naming the flag, never by clamping, wrapping or aborting.
//
// CLI11 2.1 converts "-1" and "99999999999999999999" into a std::size_t as 2^64 - 1 and lets
// "nan" through its Range checks, so the numeric checks here parse the text themselves, before
// CLI11 converts it. What a message echoes of the user's text is capped (shorten,
// quoted_value), so a 300-digit value is not printed back whole.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace tapegrad::examples {

inline constexpr std::uint64_t kNoLimit = std::numeric_limits<std::uint64_t>::max();

// text itself when short, else its start, "..." and its length: what messages echo of user input.
std::string shorten(std::string_view text);

// text with its control characters escaped (a tab as \t, a newline as \n, others as \x01), so
// that an echo shows every character and a message stays one line.
std::string visible(std::string_view text);

// How a refused value is echoed: exactly as given, between single quotes (so that a space that
// made it invalid shows), visible() and cut as shorten() cuts: ' 1' or '111...' (300 characters).
std::string quoted_value(std::string_view text);

// Decimal digits only (no sign, exponent or hex) giving a value in [min, max]. The message says
// "must be <wanted>, got '<text>'"; wanted defaults to "a positive integer" (min 1, no upper
// limit), "a non-negative integer" (min 0) or "an integer from <min> to <max>".
CLI::Validator integer_in(std::uint64_t min, std::uint64_t max, std::string wanted = "");
inline CLI::Validator positive_integer() { return integer_in(1, kNoLimit); }

// A finite number in [min, max] (CLI::Range lets "nan" through), or above 0.
CLI::Validator number_in(double min, double max);
CLI::Validator positive_number();

// A switch with a default: --<name> turns it on, --no-<name> off (they exclude each other), and
// the help marks the default one "(the default)". CLI11's own "--<name>,!--no-<name>" prints as
// "--<name>,--no-<name>{false}", which reads as a default of off whatever value holds.
void add_switch(CLI::App& app, const std::string& name, bool& value, const std::string& description);

// Has app print its parse errors as "<program>: <message>" with every long word shortened
// (CLI11's own messages, such as "not expected: <value>", echo the user's text too).
void use_short_messages(CLI::App& app, const std::string& program);

}  // namespace tapegrad::examples
