#include "examples/attention_study/json.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace tapegrad::attention_study {

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || c == '<' || c == '>' || c == '&') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

std::string json_array(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += items[i];
  }
  return out + "]";
}

std::string json_object(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string out = "{";
  // Appended piece by piece: `"," + a + ":" + b` draws a false -Wrestrict from gcc 12.
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i) out += ',';
    out += json_string(members[i].first);
    out += ':';
    out += members[i].second;
  }
  return out + "}";
}

std::string base64(std::span<const std::uint8_t> bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = std::uint32_t(bytes[i]) << 16;
    if (n > 1) v |= std::uint32_t(bytes[i + 1]) << 8;
    if (n > 2) v |= bytes[i + 2];
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::string base64_float32(std::span<const float> values) {
  static_assert(std::endian::native == std::endian::little, "the page reads little-endian float32");
  std::vector<std::uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return base64(bytes);
}

}  // namespace tapegrad::attention_study
