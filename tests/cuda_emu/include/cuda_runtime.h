// tests/cuda_emu/include/cuda_runtime.h — the emulator's cuda_runtime.h: its runtime API (cuda_runtime_api.h)
// and, for kernel files, the device-side names (cuda_emu_prelude.hpp is force-included before them).
#pragma once
#include "cuda_runtime_api.h"
