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
# UBSan findings abort like ASan's instead of printing and going on, so libFuzzer records them.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined ${TAPEGRAD_UBSAN_EXCLUSIONS} -fno-sanitize-recover=all
                    -fno-omit-frame-pointer -g1)
add_link_options(-fsanitize=address,undefined)
