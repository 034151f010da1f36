# `cmake --install build --prefix P` installs what a program needs to use pipetwin's libraries
# from outside this tree (an accelerator plug-in, docs/accelerators.md): the headers of models/,
# schedule/ and sim/, their static libraries, and a CMake package:
#   find_package(pipetwin REQUIRED)          # with P in CMAKE_PREFIX_PATH
#   target_link_libraries(my_program PRIVATE pipetwin::sim)
# Only with SystemC (the simulator is what plug-ins extend).
if(NOT TARGET pipetwin_sim)
  return()
endif()
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(DIRECTORY models/include/ schedule/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)
# sim/'s engine registry, sweep and search live in pipetwin_engines, which is not installed.
install(DIRECTORY sim/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development
        PATTERN engines.hpp EXCLUDE PATTERN sweep.hpp EXCLUDE PATTERN search.hpp EXCLUDE)
set_target_properties(pipetwin_models PROPERTIES EXPORT_NAME models)
set_target_properties(pipetwin_schedule PROPERTIES EXPORT_NAME schedule)
set_target_properties(pipetwin_sim PROPERTIES EXPORT_NAME sim)
set_target_properties(pipetwin_systemc PROPERTIES EXPORT_NAME systemc)
set_target_properties(pipetwin_warnings PROPERTIES EXPORT_NAME warnings)
install(TARGETS pipetwin_models pipetwin_schedule pipetwin_sim pipetwin_systemc pipetwin_warnings
        EXPORT pipetwinTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
set(PIPETWIN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/pipetwin)
install(EXPORT pipetwinTargets NAMESPACE pipetwin:: DESTINATION ${PIPETWIN_CMAKE_DIR} COMPONENT development)
if(TARGET PkgConfig::SYSTEMC)
  set(PIPETWIN_SYSTEMC_FROM_PKG_CONFIG ON)
else()
  set(PIPETWIN_SYSTEMC_FROM_PKG_CONFIG OFF)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/pipetwinConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/pipetwinConfig.cmake INSTALL_DESTINATION ${PIPETWIN_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/pipetwinConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/pipetwinConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/pipetwinConfigVersion.cmake
        DESTINATION ${PIPETWIN_CMAKE_DIR} COMPONENT development)
