# `cmake --install` puts the libraries, the headers (under include/, laid out as in the source
# tree: #include "autograd/core/tensor.h") and tapegradConfig.cmake in place, so that another project
# can `find_package(tapegrad)` and link `tapegrad::tapegrad`.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TAPEGRAD_INSTALLED_TARGETS tapegrad tapegrad_autograd tapegrad_nn tapegrad_optim tapegrad_study)
set(TAPEGRAD_INSTALLED_LAYERS autograd nn optim study)
# tapegrad::tapegrad_distributed, when built (tapegradConfig.cmake then finds MPI too).
if(TAPEGRAD_DISTRIBUTED)
  list(APPEND TAPEGRAD_INSTALLED_TARGETS tapegrad_distributed)
  list(APPEND TAPEGRAD_INSTALLED_LAYERS distributed)
endif()
install(TARGETS ${TAPEGRAD_INSTALLED_TARGETS}
        EXPORT tapegradTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION include)
# Public headers only: the array kernels (autograd/kernels/) and every detail/ folder are the
# library's insides, and nn/copy_task/ is the examples' library, not the package's. No public
# header includes one of them (tests/check_layers.py checks it).
foreach(layer ${TAPEGRAD_INSTALLED_LAYERS})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/ DESTINATION include/${layer} FILES_MATCHING PATTERN "*.h"
          PATTERN kernels EXCLUDE PATTERN detail EXCLUDE PATTERN copy_task EXCLUDE)
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/tapegrad.h DESTINATION include)

set(TAPEGRAD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tapegrad)
install(EXPORT tapegradTargets NAMESPACE tapegrad:: DESTINATION ${TAPEGRAD_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tapegradConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/tapegradConfig.cmake INSTALL_DESTINATION ${TAPEGRAD_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tapegradConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tapegradConfig.cmake ${PROJECT_BINARY_DIR}/tapegradConfigVersion.cmake
        DESTINATION ${TAPEGRAD_CMAKE_DIR})
