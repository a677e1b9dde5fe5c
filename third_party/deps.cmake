# External packages (Debian). CMake glue only; nothing is downloaded.
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_path(SLEEF_INCLUDE_DIR sleef.h REQUIRED)
find_library(SLEEF_LIBRARY sleef REQUIRED)
add_library(fw_sleef INTERFACE)
target_include_directories(fw_sleef SYSTEM INTERFACE ${SLEEF_INCLUDE_DIR})
target_link_libraries(fw_sleef INTERFACE ${SLEEF_LIBRARY})
