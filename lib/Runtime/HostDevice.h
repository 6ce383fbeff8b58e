//===- HostDevice.h - Functions for both the host and the GPU ---*- C++ -*-===//
//
// HETERPS_HD marks a function that nvcc compiles for the device and the
// host, and a host compiler for the host alone: the arithmetic the GPU
// kernels share with the CPU column and with the unit tests that hold it
// against the CPU column on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_HOSTDEVICE_H
#define HETERPS_LIB_RUNTIME_HOSTDEVICE_H

#ifdef __CUDACC__
#define HETERPS_HD __host__ __device__
#else
#define HETERPS_HD
#endif

#endif // HETERPS_LIB_RUNTIME_HOSTDEVICE_H
