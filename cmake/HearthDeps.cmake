# Dependencies, found the way Debian 12 ships them (see shared facts). Later issues add CAF,
# hwloc and ZeroMQ here as the code starts to use them.
find_package(CLI11 CONFIG REQUIRED)
find_package(Threads REQUIRED)
# oneDNN 2.6 (CPU runtime: OpenMP); its config needs OpenCL. Linked PRIVATE to hearth_kernels only.
find_package(dnnl CONFIG REQUIRED)
find_package(OpenMP REQUIRED)
# nlohmann-json (header-only) writes `hearth bench` reports; linked to the CLI only.
find_package(nlohmann_json CONFIG REQUIRED)
if(HEARTH_BUILD_TESTS)
  find_package(Catch2 CONFIG REQUIRED)
endif()
