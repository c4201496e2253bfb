#include "nn/copy_task/model_size.h"

#include <unistd.h>

#include <cstdio>
#include <iterator>

#include "autograd/base/errors.h"

namespace tapegrad::copy_task {

namespace {

// 43243 -> "43,243"; past 2^53 (where a double stops counting exactly) "1.2e+18".
std::string format_count(double n) {
  if (n >= 9007199254740992.0) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2g", n);
    return text;
  }
  std::string digits = std::to_string(static_cast<unsigned long long>(n)), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// 1.2e10 -> "12.0 GB"
std::string format_bytes(double bytes) {
  static const char* const units[] = {"bytes", "kB", "MB", "GB", "TB", "PB", "EB"};
  char text[48];
  double scaled = bytes;
  std::size_t unit = 0;
  for (; scaled >= 1000 && unit + 1 < std::size(units); ++unit) scaled /= 1000;
  if (scaled >= 1000) {
    std::snprintf(text, sizeof text, "%.2g bytes", bytes);  // past exabytes: a sizing typo
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", scaled, units[unit]);
  }
  return text;
}

}  // namespace

double parameter_count(const Config& c) {
  const double d = static_cast<double>(c.d_model), ff = static_cast<double>(c.d_ff),
               vocab = static_cast<double>(c.vocab), layers = static_cast<double>(c.layers);
  const double attention = 4 * d * d + d;      // W_q, W_k, W_v (d_model x d_model over the heads), output Linear
  const double ffn = 2 * d * ff + ff + d;      // two Linears
  const double layer_norm = 2 * d;
  const double encoder_layer = attention + ffn + 2 * layer_norm;
  const double decoder_layer = 2 * attention + ffn + 3 * layer_norm;
  const double embeddings = 2 * vocab * d;     // source and target
  const double generator = d * vocab + vocab;  // Linear to the vocabulary
  return layers * (encoder_layer + decoder_layer) + embeddings + generator;
}

double training_state_bytes(const Config& config) { return 4 * sizeof(float) * parameter_count(config); }

double activation_bytes_lower_bound(const Config& c) {
  const double batch = static_cast<double>(c.batch), src = static_cast<double>(c.seq_len), tgt = src - 1,
               ff = static_cast<double>(c.d_ff), heads = static_cast<double>(c.heads);
  // Per layer and sequence: the FFN's hidden activation (linear_2's input, kept for its weight
  // gradient) and each attention map (kept by the softmax and by A V); the decoder reads tgt_in.
  const double encoder_layer = src * ff + heads * src * src;
  const double decoder_layer = tgt * ff + heads * tgt * tgt + heads * tgt * src;
  return sizeof(float) * batch * static_cast<double>(c.layers) * (encoder_layer + decoder_layer);
}

std::string describe_model(const Config& c) {
  return "a model of " + format_count(parameter_count(c)) + " parameters (N=" + std::to_string(c.layers) +
         ", d_model " + std::to_string(c.d_model) + ", d_ff " + std::to_string(c.d_ff) + ", heads " +
         std::to_string(c.heads) + ")";
}

std::string describe_run(const Config& c) {
  return describe_model(c) + " on batches of " + std::to_string(c.batch) + " sequences of " +
         std::to_string(c.seq_len) + " tokens";
}

void check_fits_in_memory(const Config& config, double available) {
  const double state = training_state_bytes(config), activations = activation_bytes_lower_bound(config);
  if (state + activations <= available) return;
  throw ValueError(describe_run(config) + " needs at least " + format_bytes(state + activations) + " (" +
                   format_bytes(state) + " for the parameters, their gradients and Adam's moments, " +
                   format_bytes(activations) + " for one batch's activations kept for the backward pass); this " +
                   "machine has " + format_bytes(available) + " of memory");
}

void check_fits_in_memory(const Config& config) {
  const double pages = static_cast<double>(::sysconf(_SC_PHYS_PAGES)), page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  check_fits_in_memory(config, pages * page);
}

}  // namespace tapegrad::copy_task
