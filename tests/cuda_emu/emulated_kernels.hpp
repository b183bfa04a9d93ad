// tests/cuda_emu/emulated_kernels.hpp — the launch functions of the emulated kernel files, for the tests:
// the CUDA backend's own headers read with `cuda` renamed as the prelude renames it (cuda_emu_prelude.hpp),
// so `emu::launch_layernorm_forward` is the g++-compiled kernel under the emulator, never the nvcc one.
#pragma once
#include <cuda_runtime_api.h>  // the emulator's (tests/cuda_emu/include)

// headers the kernels' headers share with the CPU backend, read first so the rename does not reach them
#include "runtime/exec/attention_problem.hpp"
#include "runtime/exec/cpu_backend.hpp"
#include "runtime/exec/cpu_fused_dropout.hpp"
#include "runtime/exec/math/attention_math.hpp"
#include "runtime/exec/math/column_sum_math.hpp"
#include "runtime/exec/math/row_storage.hpp"
#include "runtime/exec/math/scaled_read.hpp"
#include "runtime/exec/optimizer_plan.hpp"
#include "runtime/optim/loss_scale_state.hpp"
#include "runtime/optim/optimizer_math.hpp"
#include "runtime/optim/step_scalars.hpp"

#define cuda ptsim_emulated_cuda
#include "runtime/exec/cuda/attention_args.hpp"
#include "runtime/exec/cuda/attention_tc.hpp"
#include "runtime/exec/cuda/attention.hpp"
#include "runtime/exec/cuda/convert_16bit.hpp"
#include "runtime/exec/cuda/device_error.hpp"
#include "runtime/exec/cuda/elementwise.hpp"
#include "runtime/exec/cuda/fused_dropout.hpp"
#include "runtime/exec/cuda/gather.hpp"
#include "runtime/exec/cuda/gemm_finish.hpp"
#include "runtime/exec/cuda/optimizer.hpp"
#include "runtime/exec/cuda/rows.hpp"
#include "runtime/exec/cuda/vector_ops.hpp"
#undef cuda

namespace emu = ptsim::runtime::ptsim_emulated_cuda;
