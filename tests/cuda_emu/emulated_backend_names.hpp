// tests/cuda_emu/emulated_backend_names.hpp — the CUDA backend's entry points (runtime/exec/cuda/cuda_backend.hpp)
// renamed for the emulated build (docs/cuda-emulation.md, "The whole backend"). Force-included (g++ -include)
// into the backend's host files when the emulator compiles them and into the `*_emulated` test executables,
// so that there `runtime::make_cuda_backend` is the backend compiled by g++ over the emulator, and links
// beside the nvcc-built one that libptsim_runtime holds when CUDA is enabled. Everything else the host files
// define is in namespace ptsim::runtime::cuda, renamed here as the prelude renames it (cuda_emu_prelude.hpp),
// so a test that calls a launcher itself (runtime::cuda::launch_widen_16bit) calls the emulated one.
#pragma once
#define cuda ptsim_emulated_cuda
#define make_cuda_backend make_emulated_cuda_backend
#define cuda_device_count emulated_cuda_device_count
#define cuda_device_memory emulated_cuda_device_memory
#define use_local_rank_device emulated_use_local_rank_device
