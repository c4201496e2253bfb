# Memory over long training runs: nothing leaks, RSS stays flat.
find_package(CLI11 REQUIRED)
add_executable(rss_long_run ${CMAKE_CURRENT_LIST_DIR}/rss_long_run.cpp)
target_link_libraries(rss_long_run PRIVATE tapegrad_copy_task CLI11::CLI11)
tapegrad_compile_as_test_code(rss_long_run)

if("address" IN_LIST TAPEGRAD_SANITIZE)
  # LeakSanitizer over a 200-step training loop (10 epochs of 20 batches): any leak it finds when
  # the program exits makes the exit status non-zero. Memory that stays referenced while growing
  # is not a leak to LSan: the RSS test below, in the unsanitized build, covers that.
  add_test(NAME LeakSanitizer.CopyTask200Steps COMMAND copy_task --epochs 10)
  set_tests_properties(LeakSanitizer.CopyTask200Steps PROPERTIES TIMEOUT 900
                       ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:halt_on_error=1;${TAPEGRAD_TEST_ENVIRONMENT}")
elseif(NOT TAPEGRAD_SANITIZE)
  # Sanitizers' allocators keep freed memory in quarantine, so RSS is only meaningful unsanitized.
  # 5000 steps of the default copy task, RSS sampled every 100. Baseline: the largest sample up to
  # step 500 (Adam's buffers, the allocator's arenas and TBB's workers all exist by then); no later
  # sample may exceed it by more than 3 MiB. Measured: samples move within about 1.5 MiB of each
  # other (bench/LONG_RUN.md); 3 MiB fails any retention of 700 bytes a step or more.
  add_test(NAME LongRun.CopyTaskRssFlatOver5000Steps
           COMMAND rss_long_run --steps 5000 --sample-every 100 --warmup-steps 500 --tolerance-mib 3)
  # The same through a StepCapture (arena, large arrays mapped on their own, heap). Measured: 26.1
  # MiB at every sample, 5000 steps in about 35 s.
  add_test(NAME LongRun.CapturedCopyTaskRssFlatOver5000Steps
           COMMAND rss_long_run --steps 5000 --sample-every 100 --warmup-steps 500 --tolerance-mib 3 --capture)
  # The check itself: a process that keeps 64 KiB more per step (25 MiB over 400 steps) is caught.
  add_test(NAME LongRun.RetainedMemoryIsCaught
           COMMAND rss_long_run --steps 600 --sample-every 100 --warmup-steps 200 --tolerance-mib 3
                   --retain-per-step 65536)
  set_tests_properties(LongRun.RetainedMemoryIsCaught PROPERTIES PASS_REGULAR_EXPRESSION "RSS grew by")
  set_tests_properties(LongRun.CopyTaskRssFlatOver5000Steps LongRun.CapturedCopyTaskRssFlatOver5000Steps
                       LongRun.RetainedMemoryIsCaught PROPERTIES
                       TIMEOUT 1800 ENVIRONMENT "${TAPEGRAD_TEST_ENVIRONMENT}")
  # About 2 minutes on 2 idle cores (12 on a loaded machine): start it first so it overlaps the rest.
  set_tests_properties(LongRun.CopyTaskRssFlatOver5000Steps PROPERTIES COST 10000)
endif()
