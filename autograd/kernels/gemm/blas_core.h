#pragma once
// Whether OpenBLAS runs the kernels this CPU deserves. OpenBLAS picks its kernels when it loads,
// from the CPU or from OPENBLAS_CORETYPE: 0.3.21 (Debian bookworm) runs generic SSE kernels on
// CPUs newer than it knows, and a preset OPENBLAS_CORETYPE for an older core (Haswell on an
// AVX-512 CPU) halves the rate of every matrix product. By the time tapegrad runs, the choice is
// made, so the remedy is a warning naming the variable to set.
#include <string>
#include <string_view>

namespace tapegrad::kernels {

// x86 vector instruction sets, in the order kernels and CPUs gain them.
enum class SimdLevel { kUnknown, kSse, kAvx, kAvx2, kAvx512 };

// The level of an OpenBLAS core name ("Haswell" -> kAvx2); kUnknown for a name it does not know.
SimdLevel openblas_core_level(std::string_view corename);

// What this CPU (and its operating system) can run, from the CPU's feature flags.
SimdLevel cpu_simd_level();

// The warning for kernels of `corename` on a CPU of level `cpu`, with OPENBLAS_CORETYPE set to
// `coretype_env` (nullptr: not set); "" when the kernels match the CPU, or either is unknown.
std::string blas_kernel_warning(std::string_view corename, SimdLevel cpu, const char* coretype_env);

// Prints blas_kernel_warning for the running OpenBLAS and CPU to stderr, once per process (gemm
// calls it before the first product).
void warn_once_if_blas_kernels_lag();

}  // namespace tapegrad::kernels
