# SPDX-License-Identifier: Apache-2.0
"""PyTorch's torch.cuda.nvtx.range under gpufl.init (docs/nvtx.md): one warm-up
training step outside any range, then STEPS steps each inside
torch.cuda.nvtx.range("train_step") with the forward pass inside a nested
range "forward". gpufl.init runs before the first NVTX call, so it points
NVTX_INJECTION64_PATH at the gpufl extension. Prints one JSON line for
nvtx_check.py: the session directory, the steps, and NVTX_INJECTION64_PATH.
Usage: python3 tests/gpu/nvtx_torch.py LOG_DIR [STEPS]"""
import json
import os
import sys

import gpufl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    log_dir = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    from torch_workload import Workload  # noqa: E402
    import torch
    import torch.nn.functional as F

    w = Workload()
    assert gpufl.init("nvtx_torch", log_path=log_dir, profiling_engine="trace")
    w.run(1)  # the warm-up step: outside every range
    for _ in range(steps):
        with torch.cuda.nvtx.range("train_step"):
            w.opt.zero_grad(set_to_none=True)
            with torch.cuda.nvtx.range("forward"):
                out = w.model(w.x)
            loss = F.cross_entropy(out, w.y)
            loss.backward()
            w.opt.step()
    torch.cuda.synchronize()
    gpufl.shutdown()
    print(json.dumps({"session": log_dir,
                      "steps": steps,
                      "nvtx_injection": os.environ.get("NVTX_INJECTION64_PATH")}))


if __name__ == "__main__":
    main()
