# SPDX-License-Identifier: Apache-2.0
"""One rank of a data-parallel-like job for the dashboard's fixtures (run_dashboard_fixtures.sh):
torch_workload's net under the Trace engine with the job id the caller exports (GPUFL_JOB_ID),
on GPU rank % the GPUs present, a scope per step. The rank named slow does one more matrix
product a step, so the job has a straggler the job view must name.

Usage: GPUFL_JOB_ID=ID python3 job_workload.py LOG_PATH RANK STEPS SLOW_RANK
"""
import sys

import gpufl
import torch

import torch_workload


def main():
    log_path, rank, steps, slow = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.cuda.set_device(rank % torch.cuda.device_count())
    extra = torch.randn(4096, 4096, device="cuda")
    with gpufl.session("job_ranks", log_path=log_path,
                       profiling_engine=gpufl.ProfilingEngine.Trace) as s:
        w = torch_workload.Workload()
        for _ in range(steps):
            with gpufl.Scope("step"):
                w.step()
                if rank == slow:
                    extra @ extra  # the straggler's extra work
                w.x.sum().item()
        torch.cuda.synchronize()
    print(s.directory)


if __name__ == "__main__":
    main()
