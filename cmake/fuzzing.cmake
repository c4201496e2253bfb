# TAPEGRAD_BUILD_FUZZERS: every target (the library the fuzzers link included) gets coverage
# instrumentation for libFuzzer plus AddressSanitizer and UndefinedBehaviorSanitizer, so a bad
# read anywhere in the library, not only in the fuzz driver, stops the run. Only the fuzz/
# executables link libFuzzer itself (-fsanitize=fuzzer, in fuzz/CMakeLists.txt).
if(NOT TAPEGRAD_BUILD_FUZZERS)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "TAPEGRAD_BUILD_FUZZERS needs clang (libFuzzer), e.g. -DCMAKE_CXX_COMPILER=clang++; "
                      "this is ${CMAKE_CXX_COMPILER_ID}")
endif()
add_compile_options(-fsanitize=fuzzer-no-link -g1)
# The sanitizers: TAPEGRAD_SANITIZE's when the build names them (tests/configure-sanitized names
# address and undefined); else ASan and UBSan with cmake/sanitizers.cmake's flags, set here. Not
# both: CMake drops a repeated option, so a second -fno-sanitize=... would vanish while a second
# -fsanitize=undefined turned its check back on. UBSan findings abort like ASan's instead of
# printing and going on, so libFuzzer records them.
if(NOT TAPEGRAD_SANITIZE)
  add_compile_options(-fsanitize=address,undefined ${TAPEGRAD_UBSAN_EXCLUSIONS} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
