# Catch2 for the test executables: its implementation compiled once (hearth_catch) and the suite's
# main (hearth_test_main). Included by tests/CMakeLists.txt, and by tests/cuda/CMakeLists.txt when
# the CUDA tests build alone (HEARTH_GPU_CHECK).
add_library(hearth_catch STATIC ${CMAKE_CURRENT_LIST_DIR}/catch_impl.cpp)
target_link_libraries(hearth_catch PUBLIC Catch2::Catch2)
# Catch2's own implementation is not ours to check, and instrumenting it took 47 of the
# sanitizer build's CPU seconds (17 without).
if(HEARTH_SANITIZE)
  target_compile_options(hearth_catch PRIVATE -fno-sanitize=all)
endif()
add_library(hearth_test_main STATIC ${CMAKE_CURRENT_LIST_DIR}/test_main.cpp)
target_link_libraries(hearth_test_main PUBLIC hearth_catch)
target_compile_definitions(hearth_test_main PRIVATE HEARTH_TEST_KERNEL_CACHE="${CMAKE_BINARY_DIR}/kernel-plans.tsv")
