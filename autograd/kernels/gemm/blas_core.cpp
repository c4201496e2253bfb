#include "autograd/kernels/gemm/blas_core.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include <cblas.h>

namespace tapegrad::kernels {

namespace {

// OpenBLAS 0.3.21's x86-64 core names (driver/others/dynamic.c) by the widest vector
// instructions their kernels use.
constexpr std::array<std::pair<std::string_view, SimdLevel>, 27> kCoreLevels{{
    {"Katmai", SimdLevel::kSse},         {"Coppermine", SimdLevel::kSse},    {"Northwood", SimdLevel::kSse},
    {"Prescott", SimdLevel::kSse},       {"Banias", SimdLevel::kSse},        {"Atom", SimdLevel::kSse},
    {"Core2", SimdLevel::kSse},          {"Penryn", SimdLevel::kSse},        {"Dunnington", SimdLevel::kSse},
    {"Nehalem", SimdLevel::kSse},        {"Athlon", SimdLevel::kSse},        {"Opteron", SimdLevel::kSse},
    {"Opteron(SSE3)", SimdLevel::kSse},  {"Barcelona", SimdLevel::kSse},     {"Nano", SimdLevel::kSse},
    {"Bobcat", SimdLevel::kSse},         {"Sandybridge", SimdLevel::kAvx},   {"Bulldozer", SimdLevel::kAvx},
    {"Piledriver", SimdLevel::kAvx},     {"Steamroller", SimdLevel::kAvx},   {"Excavator", SimdLevel::kAvx},
    {"Haswell", SimdLevel::kAvx2},       {"Zen", SimdLevel::kAvx2},          {"SkylakeX", SimdLevel::kAvx512},
    {"Cooperlake", SimdLevel::kAvx512},  {"SapphireRapids", SimdLevel::kAvx512}, {"Unknown", SimdLevel::kUnknown},
}};

// The core to name in OPENBLAS_CORETYPE for each level, and how the level is written.
std::string_view core_for(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512: return "SkylakeX";
    case SimdLevel::kAvx2: return "Haswell";
    case SimdLevel::kAvx: return "Sandybridge";
    default: return "Prescott";
  }
}
std::string_view name_of(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512: return "AVX-512";
    case SimdLevel::kAvx2: return "AVX2";
    case SimdLevel::kAvx: return "AVX";
    case SimdLevel::kSse: return "SSE";
    default: return "unknown";
  }
}

}  // namespace

SimdLevel openblas_core_level(std::string_view corename) {
  for (const auto& [name, level] : kCoreLevels)
    if (name == corename) return level;
  return SimdLevel::kUnknown;
}

SimdLevel cpu_simd_level() {
  // The set SkylakeX's kernels are built for; libgcc's checks include the operating system's
  // support for the wider registers (XGETBV).
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return SimdLevel::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return SimdLevel::kAvx2;
  if (__builtin_cpu_supports("avx")) return SimdLevel::kAvx;
  return SimdLevel::kSse;
}

std::string blas_kernel_warning(std::string_view corename, SimdLevel cpu, const char* coretype_env) {
  const SimdLevel kernels = openblas_core_level(corename);
  if (kernels == SimdLevel::kUnknown || cpu == SimdLevel::kUnknown || kernels >= cpu) return "";
  std::string message = "tapegrad: OpenBLAS runs its ";
  message.append(corename).append(" kernels (").append(name_of(kernels)).append(") on a CPU with ");
  message.append(name_of(cpu)).append(", so matrix products run at a fraction of their speed. Set OPENBLAS_CORETYPE=");
  message.append(core_for(cpu)).append(" in the environment before the program starts (OpenBLAS reads it when it loads); ");
  if (coretype_env != nullptr)
    message.append("it is set to '").append(coretype_env).append("' now.");
  else
    message.append("it is not set now: this OpenBLAS does not know the CPU.");
  return message;
}

void warn_once_if_blas_kernels_lag() {
  static const bool warned = [] {
    const std::string message =
        blas_kernel_warning(openblas_get_corename(), cpu_simd_level(), std::getenv("OPENBLAS_CORETYPE"));
    if (!message.empty()) std::fprintf(stderr, "%s\n", message.c_str());
    return true;
  }();
  (void)warned;
}

}  // namespace tapegrad::kernels
