#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An ordinary PyTorch training script for the zero-code checks
(run_zero_code_checks.sh): a small transformer encoder trained on fixed random
tokens, each step inside torch.cuda.nvtx.range("step") with nested ranges
"forward", "backward" and "optimizer". It knows nothing of gpufl, except that
--gpufl-init starts gpufl's Trace engine in-process (the comparison of
`gpufl trace` against in-process init). Kernel choice is made deterministic
(TF32 off, deterministic algorithms) so that two processes launch the same
kernels.

Usage: train_nvtx.py [--steps N] [--warmup N] [--gpufl-init] [--raise-usr2]
Prints one JSON line: steps, milliseconds per synchronized step.
"""
import argparse
import json
import os
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--gpufl-init", action="store_true")
    ap.add_argument("--raise-usr2", action="store_true",
                    help="raise SIGUSR2 at the end (a flight-recorder snapshot's trigger)")
    a = ap.parse_args()
    if a.gpufl_init:
        import gpufl
        gpufl.init("train_nvtx", profiling_engine=gpufl.ProfilingEngine.Trace)
    torch.manual_seed(7)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)
    dev = torch.device("cuda")
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048,
                                       dropout=0.0, batch_first=True)
    model = nn.Sequential(nn.Embedding(4096, 512), nn.TransformerEncoder(layer, num_layers=4),
                          nn.Linear(512, 4096)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, 4096, (32, 128), device=dev)
    target = torch.randint(0, 4096, (32, 128), device=dev)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        with torch.cuda.nvtx.range("step"):
            with torch.cuda.nvtx.range("forward"):
                logits = model(tokens)
                loss = loss_fn(logits.view(-1, 4096), target.view(-1))
            with torch.cuda.nvtx.range("backward"):
                opt.zero_grad(set_to_none=True)
                loss.backward()
            with torch.cuda.nvtx.range("optimizer"):
                opt.step()
        torch.cuda.synchronize()

    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    ms = (time.perf_counter() - t0) * 1000 / a.steps
    print(json.dumps({"steps": a.steps, "ms_per_step": round(ms, 4)}), flush=True)
    if a.raise_usr2:
        import signal
        os.kill(os.getpid(), signal.SIGUSR2)
        time.sleep(2)  # the snapshot is written by a thread of gpufl's
    if a.gpufl_init:
        import gpufl
        gpufl.shutdown()


if __name__ == "__main__":
    main()
