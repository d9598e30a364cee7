#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs a Python script unchanged under torch.profiler, the reference of the
zero-code checks: CPU and CUDA activities from before the script's first line
to its end, and every torch.cuda.nvtx range the script opens mirrored as a
torch.profiler record_function of the same name, so that the chrome trace
says which kernels each NVTX range launched.

Usage: profile_script.py TRACE.json SCRIPT [ARGS...]
"""
import runpy
import sys

import torch
import torch.cuda.nvtx as nvtx


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: profile_script.py TRACE.json SCRIPT [ARGS...]")
    trace, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    stack = []
    push, pop = nvtx.range_push, nvtx.range_pop

    def mirrored_push(msg):
        rf = torch.autograd.profiler.record_function(msg)
        rf.__enter__()
        stack.append(rf)
        return push(msg)

    def mirrored_pop():
        if stack:
            stack.pop().__exit__(None, None, None)
        return pop()

    nvtx.range_push, nvtx.range_pop = mirrored_push, mirrored_pop
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    sys.argv = [script] + args
    with torch.profiler.profile(activities=acts) as prof:
        runpy.run_path(script, run_name="__main__")
        torch.cuda.synchronize()
    prof.export_chrome_trace(trace)


if __name__ == "__main__":
    main()
