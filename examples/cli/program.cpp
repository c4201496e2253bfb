#include "examples/cli/program.h"

#include <cstdio>
#include <new>

namespace tapegrad::examples {

int run_guarded(const std::string& program, const std::string& running, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return 2;
  } catch (const std::bad_alloc& e) {
    std::fprintf(stderr, "%s: out of memory (%s) %s\n", program.c_str(), e.what(), running.c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return 1;
  }
}

}  // namespace tapegrad::examples
