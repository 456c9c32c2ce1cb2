# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Session 37 anchor (RESULTS.md, "Depthwise and grouped convolutions"): cuDNN through
PyTorch, fp32 strict (no TF32), the calls s37-depthwise-driver.cpp times: depthwise 3x3
pad 1 at N=64 (C=128 56x56, 256 28x28, 512 14x14) and the grouped layer (C=M=256 28x28,
32 groups), with bias and ReLU as kcnn's calls, NCHW and channels_last; and a copy of
x's size for the copy bandwidth. Median of CUDA-event timings."""
import statistics
import torch
import torch.nn.functional as F

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.benchmark = True
dev = "cuda"


def bench(fn, reps=20, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


print(f"torch {torch.__version__} cudnn {torch.backends.cudnn.version()}")
for layout in ("NCHW", "NHWC"):
    for (C, H, groups) in [(128, 56, 128), (256, 28, 256), (512, 14, 512), (256, 28, 32)]:
        N = 64
        x = torch.randn(N, C, H, H, device=dev)
        w = torch.randn(C, C // groups, 3, 3, device=dev)
        b = torch.randn(C, device=dev)
        if layout == "NHWC":
            x = x.to(memory_format=torch.channels_last)
            w = w.to(memory_format=torch.channels_last)
        copy = torch.empty_like(x)
        copy_ms = bench(lambda: copy.copy_(x))
        copy_gbs = 2 * x.numel() * 4 / copy_ms / 1e6
        ms = bench(lambda: F.relu(F.conv2d(x, w, b, padding=1, groups=groups)))
        conv_ms = bench(lambda: F.conv2d(x, w, b, padding=1, groups=groups))
        gbs = 4 * (2 * x.numel() + w.numel() + C) / conv_ms / 1e6
        print(f"{layout} C={C} {H}x{H} groups={groups} N={N}: copy {copy_ms:.4f} ms "
              f"({copy_gbs:.0f} GB/s); conv+bias {conv_ms:.4f} ms ({gbs:.0f} GB/s, "
              f"{100 * gbs / copy_gbs:.0f}% of copy); conv+bias+relu {ms:.4f} ms", flush=True)
