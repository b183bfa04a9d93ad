#!/usr/bin/env python3
# tests/cuda_emu/run_nccl_fault_job.py — an injected NCCL fault ends a 2-rank job (docs/cuda-emulation.md, "The
# NCCL shim"): runs `mpirun -np 2 nccl_emulated_mpi_check KIND` with PTSIM_EMU_NCCL_FAULT=KIND:1:3 (rank 1's
# third all-reduce) and checks that the job exits non-zero, within a bound, with a rank's CommFailure message.
#   async-error  PTSIM_COMM_TIMEOUT_S=60: rank 1 sees ncclRemoteError at its next poll and calls MPI_Abort, which
#                ends rank 0 (waiting for rank 1's part) long before its deadline: under 30 s.
#   hang         PTSIM_COMM_TIMEOUT_S=2: rank 1's all-reduce never finishes, nor rank 0's (rank 1 sends
#                nothing); the first to reach the 2 s deadline reports it and aborts the job: 2 s to 30 s.
# The lower bound is the failing rank's own: it prints how long its failing all-reduce ran ("rank R: the failing
# all-reduce ran S s"), so a deadline that fires early fails here however long mpirun took to start. On a
# timeout the whole job's process group is ended (TERM, then KILL), so no rank is left busy-polling.
# Usage: run_nccl_fault_job.py CHECK_EXECUTABLE async-error|hang MPIRUN [MPIRUN_ARGS...] (meson passes its
# mpirun arguments, -np 2 among them)
import os
import re
import signal
import subprocess
import sys
import time

EXPECTED = {
    'async-error': ('60', 'rank 1: communication failed: ncclAllReduce (enqueue) failed: remote process exited', 0.0),
    'hang': ('2', 'did not finish within 2.000 s', 2.0),
}
BOUND_S = 30.0
RAN = re.compile(r'rank (\d+): the failing all-reduce ran ([0-9.]+) s')


def end_job(job):
    """TERM to mpirun's whole process group, then KILL if it is still there after 5 s."""
    for sig, grace_s in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(job.pid, sig)
        except ProcessLookupError:
            return
        try:
            job.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            pass


def run_job(command, env):
    """(exit status, output, seconds), or None when it outlived 2 * BOUND_S and was ended."""
    start = time.monotonic()
    job = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    try:
        output, _ = job.communicate(timeout=2 * BOUND_S)
    except subprocess.TimeoutExpired:
        end_job(job)
        return None
    return job.returncode, output, time.monotonic() - start


def problems_of(kind, status, output, took):
    timeout_s, text, at_least_s = EXPECTED[kind]
    problems = []
    if status == 0:
        problems.append('the job exited 0; a rank\'s failure must end it non-zero')
    if text not in output:
        problems.append(f'no rank printed "{text}"')
    if took > BOUND_S:
        problems.append(f'the job took {took:.1f} s; expected at most {BOUND_S:.0f} s')
    ran = [float(m.group(2)) for m in RAN.finditer(output)]
    if not ran:
        problems.append('no rank printed how long its failing all-reduce ran')
    elif not at_least_s <= max(ran) <= BOUND_S:
        problems.append(f'the failing all-reduce ran {max(ran):.3f} s; expected {at_least_s:.1f} s to {BOUND_S:.0f} s')
    return problems


def main():
    if len(sys.argv) < 4 or sys.argv[2] not in EXPECTED:
        print('usage: run_nccl_fault_job.py CHECK_EXECUTABLE async-error|hang MPIRUN [MPIRUN_ARGS...]',
              file=sys.stderr)
        return 2
    check, kind, mpirun = sys.argv[1:4]
    env = dict(os.environ, PTSIM_EMU_NCCL_FAULT=kind + ':1:3', PTSIM_COMM_TIMEOUT_S=EXPECTED[kind][0])
    result = run_job([mpirun] + sys.argv[4:] + [check, kind], env)
    if result is None:
        print(f'FAILED: the {kind} job still ran after {2 * BOUND_S:.0f} s (it must end itself); its processes '
              'were ended')
        return 1
    status, output, took = result
    print(output)
    problems = problems_of(kind, status, output, took)
    for p in problems:
        print('FAILED:', p)
    if not problems:
        print(f'{kind}: the job ended with status {status} after {took:.1f} s, as expected')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
