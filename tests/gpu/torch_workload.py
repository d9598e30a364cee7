# SPDX-License-Identifier: Apache-2.0
"""The deterministic PyTorch CUDA workload of the torch.profiler comparison
(compare_torch.py): a small convolutional net with an MLP head, one training
step (forward, cross-entropy, backward, SGD with momentum) per iteration, on
fixed random data from a fixed seed.

Kernel choice must not vary between processes: cuDNN autotuning is off (its
heuristics pick the algorithms), TF32 is off, and deterministic algorithms are
asked for (warn only). Sizes are chosen so that most kernels run for tens of
microseconds or more on an H100 (fp32 convolutions of a 256-image batch,
4096-wide linear layers).
"""
import os

# cuBLAS needs this before its first use to run deterministically.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class Net(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, padding=1)
        self.conv2 = nn.Conv2d(64, 128, 3, stride=2, padding=1)
        self.conv3 = nn.Conv2d(128, 256, 3, stride=2, padding=1)
        self.fc1 = nn.Linear(256 * 4 * 4, 4096)
        self.fc2 = nn.Linear(4096, 4096)
        self.fc3 = nn.Linear(4096, classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.relu(self.conv3(x))
        x = F.avg_pool2d(x, 4).flatten(1)  # 16x16 -> 4x4
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class Workload:
    """Model, optimizer and data on the GPU; step() is one training step."""

    def __init__(self, batch=256, image=64, seed=1234):
        torch.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.use_deterministic_algorithms(True, warn_only=True)
        self.model = Net().cuda()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        g = torch.Generator(device="cuda")
        g.manual_seed(seed)
        self.x = torch.randn(batch, 3, image, image, device="cuda", generator=g)
        self.y = torch.randint(0, 1000, (batch,), device="cuda", generator=g)

    def step(self):
        self.opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        self.opt.step()

    def run(self, iters):
        """iters steps, then waits for the GPU."""
        for _ in range(iters):
            self.step()
        torch.cuda.synchronize()


def device_name():
    return torch.cuda.get_device_name(0)
