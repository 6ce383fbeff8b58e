# cmake --install: the tools (tools/CMakeLists.txt), the Python package
# (python/CMakeLists.txt), and here the libraries, their headers and the
# CMake package that find_package(HeterPS) reads.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set(HETERPS_INSTALLED_LIBRARIES
  HeterPSAtomicFile HeterPSFlags HeterPSONNXTensor HeterPSPlan HeterPSSchedule
  HeterPSRuntimeDevices HeterPSRuntimeCore HeterPSRuntimeData
  HeterPSRuntimeCPU HeterPSRuntimeExec HeterPSRuntimePipeline
  HeterPSRuntimeMPI HeterPSRuntimeTrain HeterPSRuntimeSession
  HeterPSPSProto HeterPSPSProtocol HeterPSPSShard HeterPSPSServer
  HeterPSPSClient HeterPSPSLocal
  HeterPSDialect HeterPSImportONNX HeterPSTransforms HeterPSTargetPlan
  HeterPSCompiler)
if(HETERPS_HAVE_CUDA)
  list(APPEND HETERPS_INSTALLED_LIBRARIES HeterPSRuntimeCUDA)
endif()
set(HETERPS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/HeterPS)

foreach(library ${HETERPS_INSTALLED_LIBRARIES})
  # HeterPS::RuntimeSession rather than HeterPS::HeterPSRuntimeSession.
  string(REGEX REPLACE "^HeterPS" "" name ${library})
  set_target_properties(${library} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(${library} INTERFACE
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endforeach()
install(TARGETS ${HETERPS_INSTALLED_LIBRARIES} EXPORT HeterPSTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The headers, the generated ones (ODS, protobuf, Version.h) beside them,
# and the .td files for projects that extend the dialect.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/heterps
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/heterps
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.inc"
  PATTERN "CMakeFiles" EXCLUDE)

install(EXPORT HeterPSTargets NAMESPACE HeterPS::
  DESTINATION ${HETERPS_CMAKE_DIR})
if(NOT HETERPS_HAVE_CUDA)
  set(HETERPS_HAVE_CUDA OFF)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/HeterPSConfig.cmake.in
  ${PROJECT_BINARY_DIR}/HeterPSConfig.cmake
  INSTALL_DESTINATION ${HETERPS_CMAKE_DIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/HeterPSConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/HeterPSConfig.cmake
  ${PROJECT_BINARY_DIR}/HeterPSConfigVersion.cmake
  DESTINATION ${HETERPS_CMAKE_DIR})
