# The CUDA backend (kernels/cuda) builds wherever the toolkit is, GPU or not, so it never rots:
# HEARTH_CUDA=auto builds it when nvcc is found, on insists, off leaves it out. Never under the
# sanitizers: nvcc takes neither their flags nor the sanitizer build's clang as its host compiler.
set(HEARTH_CUDA "auto" CACHE STRING "The CUDA backend: auto (when nvcc is found), on or off")
set_property(CACHE HEARTH_CUDA PROPERTY STRINGS auto on off)
set(HEARTH_HAS_CUDA OFF)
if(HEARTH_CUDA STREQUAL "off" OR HEARTH_SANITIZE OR HEARTH_FUZZ)
  return()
endif()
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  if(HEARTH_CUDA STREQUAL "on")
    message(FATAL_ERROR "HEARTH_CUDA=on, but no CUDA compiler (nvcc) was found")
  endif()
  return()
endif()
# Targets name their own -gencode flags (kernels/cuda/CMakeLists.txt).
set(CMAKE_CUDA_ARCHITECTURES OFF)
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
# The kernels include only cuda_ops.hpp; CMake 3.25 knows no C++20 dialect for nvcc 13.
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(HEARTH_HAS_CUDA ON)
message(STATUS "Hearth: the CUDA backend builds (nvcc ${CMAKE_CUDA_COMPILER_VERSION})")
