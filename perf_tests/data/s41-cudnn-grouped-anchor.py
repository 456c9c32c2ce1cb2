# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Session 41 anchor (RESULTS.md, "grouped layers"): cuDNN through PyTorch, fp32 strict
(no TF32), the layers s41-grouped-driver.cpp times: 3x3 pad 1 at N=64, C=M=256 28x28,
128 56x56, 512 14x14, 1024 7x7 with 32 groups and 256 28x28 with 64 groups, with bias
(and with ReLU, a second kernel), NCHW and channels_last; the fp32 GEMM rate (8192^3,
cuBLAS) and a copy of x's size, for the floors. Median of CUDA-event timings."""
import statistics
import torch
import torch.nn.functional as F

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.benchmark = True


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
a = torch.randn(8192, 8192, device="cuda")
gemm_ms = bench(lambda: a @ a, reps=10)
print(f"fp32 GEMM 8192^3: {gemm_ms:.3f} ms, {2 * 8192**3 / gemm_ms / 1e9:.1f} TFLOP/s")
for layout in ("NCHW", "NHWC"):
    for (C, H, groups) in [(256, 28, 32), (128, 56, 32), (512, 14, 32), (1024, 7, 32),
                           (256, 28, 64)]:
        N = 64
        x = torch.randn(N, C, H, H, device="cuda")
        w = torch.randn(C, C // groups, 3, 3, device="cuda")
        b = torch.randn(C, device="cuda")
        if layout == "NHWC":
            x = x.to(memory_format=torch.channels_last)
            w = w.to(memory_format=torch.channels_last)
        copy = torch.empty_like(x)
        copy_ms = bench(lambda: copy.copy_(x))
        conv_ms = bench(lambda: F.conv2d(x, w, b, padding=1, groups=groups))
        relu_ms = bench(lambda: F.relu(F.conv2d(x, w, b, padding=1, groups=groups)))
        print(f"cudnn {layout} N={N} C=M={C} {H}x{H} groups={groups}: conv+bias {conv_ms:.4f} ms, "
              f"+relu {relu_ms:.4f} ms; copy of x {copy_ms:.4f} ms "
              f"({2 * x.numel() * 4 / copy_ms / 1e6:.0f} GB/s)", flush=True)
