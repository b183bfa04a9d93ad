#!/usr/bin/env python3
# tests/cuda_emu/run_nccl_fault_job.py — an injected NCCL fault ends a 2-rank job (docs/cuda-emulation.md, "The
# NCCL shim"): runs `mpirun -np 2 nccl_emulated_mpi_check KIND` with PTSIM_EMU_NCCL_FAULT=KIND:1:3 (rank 1's
# third all-reduce) and checks that the job exits non-zero, within a bound, with a rank's CommFailure message.
#   async-error  PTSIM_COMM_TIMEOUT_S=60: rank 1 sees ncclRemoteError at its next poll and calls MPI_Abort, which
#                ends rank 0 (waiting for rank 1's part) long before its deadline: under 30 s.
#   hang         PTSIM_COMM_TIMEOUT_S=2: rank 1's all-reduce never finishes, nor rank 0's (rank 1 sends
#                nothing); the first to reach the 2 s deadline reports it and aborts the job: 2 s to 30 s.
# Usage: run_nccl_fault_job.py MPIRUN CHECK_EXECUTABLE async-error|hang
import os
import subprocess
import sys
import time

EXPECTED = {
    'async-error': ('60', 'rank 1: communication failed: ncclAllReduce (enqueue) failed: remote process exited', 0.0),
    'hang': ('2', 'did not finish within 2.000 s', 2.0),
}
BOUND_S = 30.0


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in EXPECTED:
        print('usage: run_nccl_fault_job.py MPIRUN CHECK_EXECUTABLE async-error|hang', file=sys.stderr)
        return 2
    mpirun, check, kind = sys.argv[1:]
    timeout_s, text, at_least_s = EXPECTED[kind]
    env = dict(os.environ, PTSIM_EMU_NCCL_FAULT=kind + ':1:3', PTSIM_COMM_TIMEOUT_S=timeout_s)
    start = time.monotonic()
    try:
        job = subprocess.run([mpirun, '--allow-run-as-root', '--oversubscribe', '-np', '2', check, kind], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=2 * BOUND_S)
    except subprocess.TimeoutExpired:
        print(f'FAILED: the {kind} job still ran after {2 * BOUND_S:.0f} s (it must end itself)')
        return 1
    took = time.monotonic() - start
    print(job.stdout)
    problems = []
    if job.returncode == 0:
        problems.append('the job exited 0; a rank\'s failure must end it non-zero')
    if text not in job.stdout:
        problems.append(f'no rank printed "{text}"')
    if not at_least_s <= took <= BOUND_S:
        problems.append(f'it took {took:.1f} s; expected {at_least_s:.0f} s to {BOUND_S:.0f} s')
    for p in problems:
        print('FAILED:', p)
    if not problems:
        print(f'{kind}: the job ended with status {job.returncode} after {took:.1f} s, as expected')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
