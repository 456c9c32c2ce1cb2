# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cuDNN (PyTorch) fp32 strict on the ResNet 3x3 layers, NCHW and NHWC, bias off.
import torch, statistics
import torch.nn.functional as F
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
def bench(fn, reps=30):
    for _ in range(5): fn()
    torch.cuda.synchronize(); ts = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    return statistics.median(ts)
print(torch.cuda.get_device_name(), "cudnn", torch.backends.cudnn.version())
for cl in (False, True):
    for (N, C, HW) in ((64, 64, 56), (64, 128, 28), (64, 256, 14), (32, 512, 7)):
        x = torch.randn(N, C, HW, HW, device="cuda"); w = torch.randn(C, C, 3, 3, device="cuda")
        if cl: x = x.to(memory_format=torch.channels_last); w = w.to(memory_format=torch.channels_last)
        ms = bench(lambda: F.conv2d(x, w, padding=1))
        print(f"cudnn {'NHWC' if cl else 'NCHW'} C{C} {HW}x{HW} N{N}: {ms:.4f} ms  {2*N*HW*HW*C*C*9/ms/1e9:.1f} TFLOP/s")
A = torch.randn(8192, 8192, device="cuda"); B = torch.randn(8192, 8192, device="cuda")
ms = bench(lambda: A @ B, reps=10)
print(f"sgemm 8192^3 strict fp32: {ms:.3f} ms  {2*8192**3/ms/1e9:.1f} TFLOP/s")
