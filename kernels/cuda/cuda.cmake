# Decides RUNNEL_CUDA (docs/gpu.md). On by default when a CUDA compiler works
# (nvcc from PATH or /usr/local/cuda); off, with one line saying why, when
# none does. Everything builds and tests without it: the GPU device and its
# kernels are then absent and `:devices` says the build has no CUDA.
include(CheckLanguage)
# Through CUDACXX, so that check_language tries it (it trusts a set
# CMAKE_CUDA_COMPILER without trying).
if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX}
   AND EXISTS /usr/local/cuda/bin/nvcc)
  set(ENV{CUDACXX} /usr/local/cuda/bin/nvcc)
endif()
if(NOT DEFINED RUNNEL_CUDA OR RUNNEL_CUDA)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(_runnel_cuda_default ON)
  else()
    set(_runnel_cuda_default OFF)
    set(_runnel_cuda_why "no working CUDA compiler (nvcc) was found")
  endif()
else()
  set(_runnel_cuda_default OFF)
  set(_runnel_cuda_why "RUNNEL_CUDA=OFF was given")
endif()
if(_runnel_cuda_default)
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND OR NOT EXISTS "${CUDAToolkit_INCLUDE_DIRS}/cublasLt.h")
    set(_runnel_cuda_default OFF)
    set(_runnel_cuda_why "nvcc works but the CUDA toolkit's cuBLASLt was not found")
  elseif(NOT EXISTS "${CUDAToolkit_INCLUDE_DIRS}/cudnn.h")
    # The convolutions include cudnn.h (the library itself is loaded at
    # run time, kernels/cuda/cudnn.cc).
    set(_runnel_cuda_default OFF)
    set(_runnel_cuda_why "nvcc works but cuDNN's cudnn.h is not beside CUDA's headers")
  endif()
endif()
option(RUNNEL_CUDA "Build the GPU device and its CUDA kernels (kernels/cuda)"
       ${_runnel_cuda_default})
if(RUNNEL_CUDA AND NOT _runnel_cuda_default)
  message(FATAL_ERROR "RUNNEL_CUDA=ON, but ${_runnel_cuda_why}")
endif()
if(RUNNEL_CUDA)
  # Hopper only (H100, H200: sm_90), with its PTX so that a later GPU can
  # compile it at load. Each architecture added costs CI a full nvcc pass.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  # C++17 for the .cu files: CMake 3.25 knows no C++20 flag for nvcc, and
  # they need none (no Abseil or runtime headers reach them).
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  if(CCACHE)
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${CCACHE})
  endif()
  enable_language(CUDA)
  message(STATUS "RUNNEL_CUDA: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, sm_${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "RUNNEL_CUDA: off (${_runnel_cuda_why}); building without the GPU device")
endif()
