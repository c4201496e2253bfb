#pragma once
// The few JSON pieces the page's data need. Strings escape '<', '>' and '&' as \u00XX as well,
// so the JSON can sit inside an HTML <script> block. Arrays of numbers travel as base64 of
// their little-endian bytes (float32 is 4 bytes a value; decimal text would be 10-12).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tapegrad::attention_study {

std::string json_string(std::string_view text);
// %.6g; null for NaN and infinities (JSON has no such numbers).
std::string json_number(double value);
// [a, b, c] of already-encoded JSON values.
std::string json_array(const std::vector<std::string>& items);
// {"key": value, ...} of already-encoded JSON values, in the given order.
std::string json_object(const std::vector<std::pair<std::string, std::string>>& members);
// RFC 4648 base64 with padding, as JavaScript's atob reads it.
std::string base64(std::span<const std::uint8_t> bytes);
std::string base64_float32(std::span<const float> values);

}  // namespace tapegrad::attention_study
