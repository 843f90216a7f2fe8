# MLIR's add_mlir_library would install into MLIR's own export set; parplan's
# libraries are built with DISABLE_INSTALL and installed into parplanTargets
# here instead, so that find_package(parplan) sees them.
function(parplan_install_dialect_library name)
  target_include_directories(${name} INTERFACE
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  install(TARGETS ${name} EXPORT parplanTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()
