# External packages (Debian). CMake glue only; nothing is downloaded.
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_path(SLEEF_INCLUDE_DIR sleef.h REQUIRED)
find_library(SLEEF_LIBRARY sleef REQUIRED)
add_library(fw_sleef INTERFACE)
target_include_directories(fw_sleef SYSTEM INTERFACE ${SLEEF_INCLUDE_DIR})
target_link_libraries(fw_sleef INTERFACE ${SLEEF_LIBRARY})
# oneDNN (libdnnl-dev), optional: the float32 convolution kernels (core/ops/conv_dnnl.cpp).
# Without it fw_dnnl is empty and convolutions keep the im2col + Eigen GEMM path.
find_package(dnnl CONFIG QUIET)
add_library(fw_dnnl INTERFACE)
if(dnnl_FOUND)
  target_link_libraries(fw_dnnl INTERFACE DNNL::dnnl)
  target_compile_definitions(fw_dnnl INTERFACE FW_HAVE_DNNL)
  message(STATUS "fw: oneDNN ${dnnl_VERSION} found, float32 convolutions use it")
endif()
# FFTW3 (libfftw3-dev): single and double precision FFTs behind core/ops/fft.cpp. Its headers
# stay out of fw's public headers.
find_path(FFTW3_INCLUDE_DIR fftw3.h REQUIRED)
find_library(FFTW3F_LIBRARY fftw3f REQUIRED)
find_library(FFTW3_LIBRARY fftw3 REQUIRED)
add_library(fw_fftw INTERFACE)
target_include_directories(fw_fftw SYSTEM INTERFACE ${FFTW3_INCLUDE_DIR})
target_link_libraries(fw_fftw INTERFACE ${FFTW3F_LIBRARY} ${FFTW3_LIBRARY})
# libsndfile (libsndfile1-dev) for fw::audio::load/save/info; libpng for fw-audio plot.
find_package(PkgConfig REQUIRED)
pkg_check_modules(SNDFILE REQUIRED IMPORTED_TARGET sndfile)
find_package(PNG REQUIRED)
