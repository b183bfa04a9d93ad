// tests/cuda_emu/emulated_nccl_names.hpp — NcclCommunicator renamed for its build over the NCCL shim
// (docs/cuda-emulation.md, "The NCCL shim"). Force-included (g++ -include) into runtime/comm/nccl_communicator.cpp
// when the emulator compiles it (library ptsim_cuda_emu_nccl) and into the executables that use it, so there
// `NcclCommunicator` is the class compiled over the shim and links beside the real one that libptsim_runtime
// holds when NCCL is found. NcclSetup is a plain struct with no symbols of its own: it keeps its name.
#pragma once
#define NcclCommunicator EmulatedNcclCommunicator
