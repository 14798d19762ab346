# `cmake --install` (GNUInstallDirs, DESTDIR and CMAKE_INSTALL_PREFIX honoured) and `cpack -G DEB`:
# the binary, the systemd unit, a sample /etc/hearth/hearth.toml, the Python and C++ clients and
# the docs.
include(GNUInstallDirs)

set(HEARTH_INSTALL_PYTHONDIR "lib/python3/dist-packages" CACHE STRING
    "Where the Python client's package goes, under the prefix (Debian's python3 reads /usr/lib/python3/dist-packages)")
set(HEARTH_INSTALL_UNITDIR "lib/systemd/system" CACHE STRING "Where the systemd unit goes, under the prefix")

configure_file(cmake/HearthInstallConfigured.cmake.in HearthInstallConfigured.cmake @ONLY)

install(TARGETS hearth RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(SCRIPT ${PROJECT_BINARY_DIR}/HearthInstallConfigured.cmake)  # the unit and /etc/hearth/hearth.toml
install(DIRECTORY clients/python/hearth_client DESTINATION ${HEARTH_INSTALL_PYTHONDIR}
        PATTERN "__pycache__" EXCLUDE)
# The C++ client for other programs: its static libraries, headers (under include/hearth, as
# "clients/cpp/client.hpp") and hearth-client.pc, whose paths are relative to where it lies, so
# that they follow the prefix (and DESTDIR) given at install time.
install(TARGETS hearth_client hearth_common ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES clients/cpp/client.hpp clients/cpp/keys.hpp clients/cpp/replies.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hearth/clients/cpp)
install(FILES common/result.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hearth/common)
string(REGEX REPLACE "[^/]+" ".." HEARTH_PC_TO_PREFIX "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
configure_file(cmake/hearth-client.pc.in hearth-client.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hearth-client.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES clients/python/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME python-client.md)

# The Debian package: its library dependencies found by dpkg-shlibdeps from the binary, a system
# user and /var/lib/hearth/models made by postinst, nothing enabled or started.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hearth)
set(CPACK_PACKAGE_VENDOR "Hearth")
set(CPACK_PACKAGE_CONTACT "Hearth maintainers <hearth@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "one home server, one language model, many household services")
set(CPACK_PACKAGE_DESCRIPTION "Hearth serves a GGUF language model to a household's services over ZeroMQ \
and schedules their requests for goodput: time to first token and inter-token latency per tenant.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-zmq")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
