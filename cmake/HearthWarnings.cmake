# Warnings are errors for every target of ours; sanitizers apply to the whole build so that
# static libraries and tests agree on instrumentation.
# (C++ only: CUDA sources get nvcc's own, kernels/cuda/CMakeLists.txt.)
add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Werror;-Wshadow;-Wnon-virtual-dtor;-Wold-style-cast>"
                    "$<$<COMPILE_LANGUAGE:CXX>:-Wcast-align;-Woverloaded-virtual;-Wimplicit-fallthrough>"
                    # kernels/simd.hpp's vector values never cross a real call (all inlined into
                    # the target clones), so GCC's notes on their parameter ABI are noise.
                    "$<$<COMPILE_LANGUAGE:CXX>:-Wno-psabi>")

if(HEARTH_SANITIZE)
  set(_hearth_san_flags -fsanitize=${HEARTH_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_compile_options(${_hearth_san_flags})
  add_link_options(${_hearth_san_flags})
  # The AddressSanitizer build (CI's) links with lld, as position-dependent executables: its
  # binaries are large (hearth 110 MB), and GNU ld took 28 s of two cores to link them all where
  # lld takes 10; without PIE a process starts with no relative relocations to apply (850
  # thousand in hearth: 0.19 -> 0.14 CPU-seconds a start; the suite starts ~700 of them).
  if(HEARTH_SANITIZE MATCHES "address")
    add_link_options(-fuse-ld=lld -no-pie)
  endif()
  # ThreadSanitizer's instrumentation defeats GCC 12's flow analysis: it reports variables read
  # only behind a has_value() check as maybe-uninitialized (gguf_reader.cpp at -O1).
  if(HEARTH_SANITIZE MATCHES "thread")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
endif()

# hearth_optimise_when_sanitized(TARGET): under sanitizers, TARGET builds at -O1 (see CMakeLists.txt).
function(hearth_optimise_when_sanitized target)
  if(HEARTH_SANITIZE)
    target_compile_options(${target} PRIVATE -O1)
  endif()
endfunction()

if(HEARTH_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "HEARTH_FUZZ needs clang: configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  # Coverage instrumentation for every library the harnesses link; the harnesses add the driver.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
