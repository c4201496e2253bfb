# TAPEGRAD_SANITIZE: a list of sanitizers ("address;undefined") that the library, the examples and
# the tests are all compiled and linked with (tests/run-sanitizers builds this way). Empty: none.
set(TAPEGRAD_SANITIZE "" CACHE STRING "Sanitizers to build everything with, e.g. address;undefined")
# UBSan's checks left out, after "undefined" turns them on. float-cast-overflow: on AVX2,
# xsimd 8's double exp converts its scaled argument to int64 with a scalar cast, which
# for -inf, NaN or a huge input is out of range; x86 gives the "integer indefinite" value there and
# xsimd's own selects then return 0, inf or NaN, so the results are right, but clang's UBSan
# reports every masked softmax row. gcc's -fsanitize=undefined does not include this check.
set(TAPEGRAD_UBSAN_EXCLUSIONS -fno-sanitize=float-cast-overflow)
if(TAPEGRAD_SANITIZE)
  list(JOIN TAPEGRAD_SANITIZE "," tapegrad_sanitizers)
  # Frame pointers give whole stack traces in the reports; no recovery, so that a report from
  # UBSan fails the program instead of scrolling past.
  add_compile_options(-fsanitize=${tapegrad_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${tapegrad_sanitizers})
  if("undefined" IN_LIST TAPEGRAD_SANITIZE)
    add_compile_options(${TAPEGRAD_UBSAN_EXCLUSIONS})
  endif()
endif()
