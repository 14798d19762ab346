# Dependencies, found the way Debian 12 ships them (see shared facts). Later issues add CAF,
# oneDNN, oneTBB, hwloc and ZeroMQ here as the code starts to use them.
find_package(CLI11 CONFIG REQUIRED)
find_package(Threads REQUIRED)
if(HEARTH_BUILD_TESTS)
  find_package(Catch2 CONFIG REQUIRED)
endif()
