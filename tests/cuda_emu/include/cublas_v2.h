// tests/cuda_emu/include/cublas_v2.h — the emulator's cublas_v2.h: the cuBLAS API of cublas_api.h (the
// toolkit's cublas_v2.h only adds the _v2 names as macros, which C++-linkage functions do not need).
// Defines the toolkit header's guard so the real one is never read after this one.
#pragma once
#if defined(CUBLAS_V2_H_)
#error "the toolkit's cublas_v2.h was included before the emulator's: tests/cuda_emu/include must come first"
#endif
#define CUBLAS_V2_H_
#include "cublas_api.h"
