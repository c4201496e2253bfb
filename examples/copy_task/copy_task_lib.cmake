# copy_task_lib: the copy task's model, data and Trainer. One source list for every user: the
# examples, the tests and bench/ (which includes this file when the examples are not built).
add_library(copy_task_lib STATIC ${CMAKE_CURRENT_LIST_DIR}/copy_task.cpp ${CMAKE_CURRENT_LIST_DIR}/model_size.cpp)
target_link_libraries(copy_task_lib PUBLIC tapegrad::tapegrad)
tapegrad_share_precompiled_headers(copy_task_lib library)
