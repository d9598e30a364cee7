# SPDX-License-Identifier: Apache-2.0
"""A PyTorch training loop recorded by gpufl (Trace engine with CPU stacks) for the upload check
(run_upload_check.sh): torch_workload's net, a few steps, a .item() each step so that the loop
holds a synchronization the insights name.

Usage: python3 upload_workload.py LOG_PATH STEPS [--no-stacks]
"""
import sys

import gpufl
import torch

import torch_workload


def main():
    log_path, steps = sys.argv[1], int(sys.argv[2])
    stacks = "--no-stacks" not in sys.argv[3:]
    with gpufl.session("upload_check", log_path=log_path,
                       profiling_engine=gpufl.ProfilingEngine.Trace,
                       enable_stack_trace=stacks) as s:
        w = torch_workload.Workload()
        for _ in range(steps):
            with gpufl.Scope("step"):
                w.step()
                w.x.sum().item()  # a sync in the loop
        torch.cuda.synchronize()
    print(s.directory)


if __name__ == "__main__":
    main()
