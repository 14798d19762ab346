# Dependencies, found the way Debian 12 ships them.
find_package(CLI11 CONFIG REQUIRED)
find_package(Threads REQUIRED)
# oneDNN 2.6 (CPU runtime: OpenMP); its config needs OpenCL. Linked PRIVATE to hearth_kernels only.
find_package(dnnl CONFIG REQUIRED)
find_package(OpenMP REQUIRED)
# nlohmann-json (header-only) writes `hearth bench` reports and the wire protocol's JSON.
find_package(nlohmann_json CONFIG REQUIRED)
# ZeroMQ through cppzmq (header-only; the target links libzmq): the gateway and the clients only.
# (Debian's `cppzmq-static` target is broken; `cppzmq` is the shared one.)
find_package(cppzmq CONFIG REQUIRED)
# toml++ reads the configuration file (tenants); Debian ships it as a compiled library with a
# CMake config (the target defines TOML_HEADER_ONLY=0). Linked PRIVATE to hearth_tenants only.
find_package(tomlplusplus CONFIG REQUIRED)
# oneTBB runs a simulated sweep's independent searches at once (never the compute: OpenMP's,
# docs/threads.md). Its config needs libtbbbind-2-5 installed.
find_package(TBB CONFIG REQUIRED)
# CAF 0.17.6 ships neither a CMake config nor a .pc file: an imported target by hand.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
add_library(CAF::core UNKNOWN IMPORTED)
set_target_properties(CAF::core PROPERTIES IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
                                           INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
                                           INTERFACE_LINK_LIBRARIES Threads::Threads)
# CAF's middleman (libcaf_io): worker actors on other machines (`hearth worker`).
find_library(CAF_IO_LIBRARY caf_io REQUIRED)
add_library(CAF::io UNKNOWN IMPORTED)
set_target_properties(CAF::io PROPERTIES IMPORTED_LOCATION "${CAF_IO_LIBRARY}" INTERFACE_LINK_LIBRARIES CAF::core)
# hwloc pins workers to their cores (pkg-config).
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)
# sd_notify(3) for `hearth serve` under systemd (Type=notify, WatchdogSec).
pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
# cpp-httplib (pkg-config only; Debian's split header and library): the HTTP gateway, server/http.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# OpenSSL's libcrypto hashes HTTP keys (SHA-256); cpp-httplib links it already.
find_package(OpenSSL REQUIRED)
if(HEARTH_BUILD_TESTS)
  find_package(Catch2 CONFIG REQUIRED)
endif()
