# What `cmake --install BUILD [--prefix PREFIX]` puts where, and the Debian package
# made from the same rules (`cpack -G DEB`). Every destination is relative to the
# prefix and every installed file finds the others relative to itself (the command
# and the Lua module through an $ORIGIN rpath, the Python package through a relative
# link, the .pc and CMake files through their own location), so a prefix can be
# chosen at install time and moved afterwards.
include(CMakePackageConfigHelpers)

# tutti_relative(OUT FROM TO): the path from one install folder to another, both
# relative to the prefix, e.g. bin -> lib gives "../lib" (no trailing slash).
function(tutti_relative out from to)
  file(RELATIVE_PATH path /prefix/${from} /prefix/${to})
  string(REGEX REPLACE "/$" "" path "${path}")
  set(${out} "${path}" PARENT_SCOPE)
endfunction()

set(TUTTI_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tutti CACHE STRING
    "Where tuttiConfig.cmake goes, relative to the prefix")
set(TUTTI_INSTALL_LUADIR ${CMAKE_INSTALL_LIBDIR}/lua/5.4 CACHE STRING
    "Where the Lua module goes, relative to the prefix (lua5.4 looks in PREFIX/lib/lua/5.4 for /usr and /usr/local)")

# The library, its header and the C++ wrapper's headers; tutti::tutti and tutti::cpp.
install(TARGETS tutti tutti_cpp EXPORT tuttiTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/capi/include/tutti.h ${PROJECT_SOURCE_DIR}/capi/include/tutti_float16.h
        ${PROJECT_SOURCE_DIR}/capi/include/tutti_float8.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/bindings/cpp/include/tutti DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT tuttiTargets NAMESPACE tutti:: DESTINATION ${TUTTI_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tuttiConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/cmake/tuttiConfig.cmake
                              INSTALL_DESTINATION ${TUTTI_INSTALL_CMAKEDIR})
# 0.x keeps one SONAME (libtutti.so.0), so every 0.y satisfies a request for 0.x.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/tuttiConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/tuttiConfig.cmake ${CMAKE_BINARY_DIR}/cmake/tuttiConfigVersion.cmake
        DESTINATION ${TUTTI_INSTALL_CMAKEDIR})

# tutti.pc: its prefix is found from the file's own place (pkg-config's pcfiledir).
tutti_relative(TUTTI_PC_TO_PREFIX ${CMAKE_INSTALL_LIBDIR}/pkgconfig .)
configure_file(${PROJECT_SOURCE_DIR}/cmake/tutti.pc.in ${CMAKE_BINARY_DIR}/cmake/tutti.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/tutti.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The tutti command, finding libtutti in PREFIX/LIBDIR.
tutti_relative(bin_to_lib ${CMAKE_INSTALL_BINDIR} ${CMAKE_INSTALL_LIBDIR})
set_target_properties(tutti_cli PROPERTIES INSTALL_RPATH "$ORIGIN/${bin_to_lib}")
install(TARGETS tutti_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TUTTI_BUILD_BENCH)
  set_target_properties(tutti_bench PROPERTIES INSTALL_RPATH "$ORIGIN/${bin_to_lib}")
  install(TARGETS tutti_bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# The Lua module, where lua5.4's default package.cpath looks.
if(TUTTI_BUILD_LUA_ENABLED)
  tutti_relative(lua_to_lib ${TUTTI_INSTALL_LUADIR} ${CMAKE_INSTALL_LIBDIR})
  set_target_properties(tutti_lua_module PROPERTIES INSTALL_RPATH "$ORIGIN/${lua_to_lib}")
  install(TARGETS tutti_lua_module LIBRARY DESTINATION ${TUTTI_INSTALL_LUADIR})
endif()

# The Python package, where Debian's python3 looks (PREFIX/lib/python3.X/dist-packages
# is on its path for /usr and /usr/local), with a relative link to libtutti.so.0 beside
# it, as in the build tree (bindings/python/tutti/_capi.py looks there second).
if(TUTTI_BUILD_PYTHON_ENABLED)
  execute_process(COMMAND ${TUTTI_PYTHON} -c "import sys; print('%d.%d' % sys.version_info[:2])"
                  OUTPUT_VARIABLE python_version OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(TUTTI_INSTALL_PYTHONDIR lib/python${python_version}/dist-packages CACHE STRING
      "Where the Python package goes, relative to the prefix")
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/bindings/python/tutti DESTINATION ${TUTTI_INSTALL_PYTHONDIR}
          FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
  tutti_relative(package_to_lib ${TUTTI_INSTALL_PYTHONDIR}/tutti ${CMAKE_INSTALL_LIBDIR})
  install(CODE "
    set(package \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${TUTTI_INSTALL_PYTHONDIR}/tutti\")
    message(STATUS \"Installing: \${package}/libtutti.so.0 -> ${package_to_lib}/libtutti.so.0\")
    file(CREATE_LINK ${package_to_lib}/libtutti.so.0 \${package}/libtutti.so.0 SYMBOLIC)")
endif()

# The examples and the README, as documentation.
if(TUTTI_BUILD_EXAMPLES)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
          PATTERN CMakeLists.txt EXCLUDE)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Debian's place for a package's license.
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)

# cpack -G DEB: tutti_VERSION_ARCH.deb, everything above under /usr, stripped. dpkg-shlibdeps
# finds what the binaries link (libuv1, libucx0, liblua5.4-0, ...); the
# interpreters the Python package and the Lua module run in are named by hand.
set(CPACK_PACKAGE_NAME tutti)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "collective communication between processes, on CPUs and NVIDIA GPUs")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "the tutti developers <tutti@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR}/lib)
# libuv's symbols would let dpkg-shlibdeps accept 1.20; tutti is built and tested
# against 1.44 and later only (CMakeLists.txt asks for it).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libuv1 (>= 1.44), python3 (>= 3.9)")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "lua5.4, python3-numpy")
# Opened at run time, by ranks under mpirun or srun that were given no rendezvous
# address (runtime/rendezvous/pmix_exchange.h), so dpkg-shlibdeps does not see it.
if(PMIX_FOUND)
  string(APPEND CPACK_DEBIAN_PACKAGE_RECOMMENDS ", libpmix2")
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch")
set(CPACK_GENERATOR DEB)
include(CPack)
