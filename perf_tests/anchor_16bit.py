# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The 16-bit ResNet 3x3 anchor (issue 19): cuDNN through PyTorch on the GPU that runs
kcnn_perf, in the same device call. bfloat16 and float16, NCHW and NHWC (channels_last),
the convolution alone and conv + bias + ReLU as PyTorch runs it (three calls); median of
50 CUDA-event timings after 5 warm-ups, cudnn.benchmark on. Also the 16-bit GEMM peak."""
import statistics

import torch
import torch.nn.functional as F

torch.backends.cudnn.benchmark = True


def bench(fn, reps=50, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


print(torch.__version__, torch.cuda.get_device_name(), "cudnn", torch.backends.cudnn.version())
for dt in (torch.bfloat16, torch.float16):
    a = torch.randn(8192, 8192, device="cuda", dtype=dt)
    b = torch.randn(8192, 8192, device="cuda", dtype=dt)
    print(f"gemm 8192^3 {str(dt)[6:]} {2 * 8192**3 / bench(lambda: a @ b, reps=10) / 1e9:.1f} TFLOP/s")
    del a, b
for n, c, h, m in [(64, 64, 56, 64), (64, 128, 28, 128), (64, 256, 14, 256), (32, 512, 7, 512)]:
    for dt in (torch.bfloat16, torch.float16):
        for layout in ("NCHW", "NHWC"):
            fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
            x = torch.randn(n, c, h, h, device="cuda", dtype=dt).to(memory_format=fmt)
            w = torch.randn(m, c, 3, 3, device="cuda", dtype=dt).to(memory_format=fmt)
            bias = torch.randn(m, device="cuda", dtype=dt)
            conv = bench(lambda: F.conv2d(x, w, padding=1))
            fused = bench(lambda: F.relu(F.conv2d(x, w, bias, padding=1)))
            flop = 2.0 * n * m * h * h * c * 9
            print(f"resnet3x3 c{c}_{h} {str(dt)[6:]:8s} {layout} conv {conv:.4f} ms "
                  f"({flop / conv / 1e9:.1f} TFLOP/s) conv+bias+relu {fused:.4f} ms", flush=True)
