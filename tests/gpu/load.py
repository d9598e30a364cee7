# SPDX-License-Identifier: Apache-2.0
"""GPU load for the NVML check: idle, a matrix-product phase, idle again.

Usage: python3 load.py IDLE_S BUSY_S IDLE_S
"""
import sys
import time

import torch


def main():
    idle1, busy, idle2 = (float(a) for a in sys.argv[1:4])
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    time.sleep(idle1)
    end = time.time() + busy
    n = 0
    while time.time() < end:
        for _ in range(20):
            a @ b
        torch.cuda.synchronize()
        n += 20
    time.sleep(idle2)
    print(f"load: {n} bf16 8192^3 matrix products in {busy:.0f} s")


if __name__ == "__main__":
    main()
