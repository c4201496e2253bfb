# TAPEGRAD_SANITIZE: a list of sanitizers ("address;undefined") that the library, the examples and
# the tests are all compiled and linked with (tests/run-sanitizers builds this way). Empty: none.
set(TAPEGRAD_SANITIZE "" CACHE STRING "Sanitizers to build everything with, e.g. address;undefined")
if(TAPEGRAD_SANITIZE)
  list(JOIN TAPEGRAD_SANITIZE "," tapegrad_sanitizers)
  # Frame pointers give whole stack traces in the reports; no recovery, so that a report from
  # UBSan fails the program instead of scrolling past.
  add_compile_options(-fsanitize=${tapegrad_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${tapegrad_sanitizers})
endif()
