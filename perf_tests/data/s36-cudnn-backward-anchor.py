# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cuDNN (PyTorch) fp32 strict on the ResNet 3x3 layers, NCHW and NHWC: the forward
# convolution and its backward data (aten.convolution_backward, dx only), bias off.
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
        fmt = torch.channels_last if cl else torch.contiguous_format
        x = torch.randn(N, C, HW, HW, device="cuda").to(memory_format=fmt)
        w = torch.randn(C, C, 3, 3, device="cuda").to(memory_format=fmt)
        dy = torch.randn(N, C, HW, HW, device="cuda").to(memory_format=fmt)
        fwd = bench(lambda: F.conv2d(x, w, padding=1))
        bwd = bench(lambda: torch.ops.aten.convolution_backward(
            dy, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, False, False]))
        print(f"cudnn {'NHWC' if cl else 'NCHW'} C{C} {HW}x{HW} N{N}: forward {fwd:.4f} ms, "
              f"backward data {bwd:.4f} ms")
