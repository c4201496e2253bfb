#include "examples/copy_task/model_size.h"

#include <unistd.h>

#include <cstdio>
#include <iterator>

#include "autograd/errors.h"

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
  std::size_t unit = 0;
  for (; bytes >= 1000 && unit + 1 < std::size(units); ++unit) bytes /= 1000;
  char text[48];
  std::snprintf(text, sizeof text, "%.1f %s", bytes, units[unit]);
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
  const double needed = training_state_bytes(config);
  if (needed <= available) return;
  throw ValueError(describe_model(config) + " needs " + format_bytes(needed) +
                   " for its parameters, their gradients and Adam's moments (4 floats each); this machine has " +
                   format_bytes(available) + " of memory");
}

void check_fits_in_memory(const Config& config) {
  const double pages = static_cast<double>(::sysconf(_SC_PHYS_PAGES)), page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  check_fits_in_memory(config, pages * page);
}

}  // namespace tapegrad::copy_task
