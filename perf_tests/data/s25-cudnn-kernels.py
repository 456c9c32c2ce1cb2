# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Session 25: the kernels cuDNN (through PyTorch, cudnn.benchmark) runs for the bf16 NHWC ResNet 3x3 layers, for ncu --profile-from-start off."""
import torch, torch.nn.functional as F
torch.backends.cudnn.benchmark = True
cases = [(64, 64, 56, 64), (64, 128, 28, 128), (64, 256, 14, 256), (32, 512, 7, 512)]
ts = []
for n, c, h, m in cases:
    x = torch.randn(n, c, h, h, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    w = torch.randn(m, c, 3, 3, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    for _ in range(5): F.conv2d(x, w, padding=1)
    ts.append((x, w))
torch.cuda.synchronize()
torch.cuda.profiler.start()
for x, w in ts:
    F.conv2d(x, w, padding=1)
torch.cuda.synchronize()
torch.cuda.profiler.stop()
