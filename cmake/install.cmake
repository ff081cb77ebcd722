# `cmake --install BUILD --prefix DIR`, laid out as cluster sites install software:
#   bin/phalanx, bin/phalanx-mpirun            the program and its launcher
#   lib/libphalanx_*.a, include/phalanx/...     the module libraries and their public headers
#   lib/cmake/phalanx/                          find_package(phalanx) gives phalanx:: targets
#   share/phalanx/configs, share/phalanx/launch the example configs, the launcher and Slurm scripts
#   share/modulefiles/phalanx/VERSION           `module use DIR/share/modulefiles; module load phalanx`
include(CMakePackageConfigHelpers)

# Every module library, in the names the package gives them (phalanx_train -> phalanx::train).
set(phalanx_installed_libraries phalanx_warnings)
foreach(module core config backend backend_cpu backend_cuda backend_without_cuda nn optim comm comm_nccl
               comm_without_nccl monitor report data train sweep benchmark cli)
  if(TARGET phalanx_${module})
    list(APPEND phalanx_installed_libraries phalanx_${module})
    set_target_properties(phalanx_${module} PROPERTIES EXPORT_NAME ${module})
  endif()
endforeach()
# The warning flags are the project's own (LINK_ONLY in the export: users' code is not affected).
set_target_properties(phalanx_warnings PROPERTIES EXPORT_NAME warnings)
set_target_properties(phalanx PROPERTIES EXPORT_NAME phalanx)

install(TARGETS phalanx ${phalanx_installed_libraries} EXPORT phalanxTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/phalanx DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT phalanxTargets NAMESPACE phalanx:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/phalanx)

# The package's config finds what the static libraries link, with the choices this build made.
set(PHALANX_PACKAGE_HDF5_PARALLEL ${HDF5_IS_PARALLEL})
set(PHALANX_PACKAGE_WITH_CUDA ${PHALANX_WITH_CUDA})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/phalanxConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/generated/phalanxConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/phalanx)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/generated/phalanxConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/generated/phalanxConfig.cmake
              ${PROJECT_BINARY_DIR}/generated/phalanxConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/phalanx)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/phalanx/configs)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/launch/phalanx-mpirun DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS ${PROJECT_SOURCE_DIR}/launch/phalanx-mpirun DESTINATION ${CMAKE_INSTALL_DATADIR}/phalanx/launch)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/launch/slurm DESTINATION ${CMAKE_INSTALL_DATADIR}/phalanx/launch
        USE_SOURCE_PERMISSIONS)
configure_file(${PROJECT_SOURCE_DIR}/cmake/phalanx.modulefile.in
               ${PROJECT_BINARY_DIR}/generated/modulefile/${PROJECT_VERSION} @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/generated/modulefile/${PROJECT_VERSION}
        DESTINATION ${CMAKE_INSTALL_DATADIR}/modulefiles/phalanx)
