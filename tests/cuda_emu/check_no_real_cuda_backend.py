#!/usr/bin/env python3
# tests/cuda_emu/check_no_real_cuda_backend.py — ptsim_emulated links the emulated CUDA backend only
# (docs/cuda-emulation.md, "`ptsim_emulated`"): `nm -C BINARY` must name no symbol of the real backend
# (make_cuda_backend, anything in ptsim::runtime::cuda::). One would mean an object of ptsim's own (a tools
# source or a libptsim_runtime member) calls the real backend, which finds no device here. Exit 0 when none is
# found, 1 naming the first few, 77 (skipped) when nm is not installed.
# Usage: check_no_real_cuda_backend.py BINARY
import shutil
import subprocess
import sys

REAL_BACKEND = ('make_cuda_backend', 'ptsim::runtime::cuda::')


def main():
    if len(sys.argv) != 2:
        print('usage: check_no_real_cuda_backend.py BINARY', file=sys.stderr)
        return 2
    nm = shutil.which('nm')
    if nm is None:
        print('SKIP: nm (binutils) is not installed, so the symbols of ptsim_emulated cannot be listed')
        return 77
    listed = subprocess.run([nm, '-C', sys.argv[1]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if listed.returncode != 0:
        print(f'FAILED: nm -C {sys.argv[1]} exited {listed.returncode}: {listed.stderr.strip()}')
        return 1
    real = [line for line in listed.stdout.splitlines() if any(name in line for name in REAL_BACKEND)]
    for line in real[:5]:
        print('FAILED: a real CUDA backend symbol:', line)
    if real:
        print(f'{len(real)} symbols of the real backend in {sys.argv[1]}: it must call only the emulated one')
        return 1
    print(f'{sys.argv[1]}: {len(listed.stdout.splitlines())} symbols, none of the real CUDA backend')
    return 0


if __name__ == '__main__':
    sys.exit(main())
