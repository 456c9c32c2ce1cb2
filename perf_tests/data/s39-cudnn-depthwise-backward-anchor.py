# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Session 39 anchor (RESULTS.md, "depthwise backward"): cuDNN through PyTorch on the depthwise layers,
forward / backward data / backward weights, NCHW and channels_last, fp32 strict; copy BW."""
import statistics, torch
import torch.nn.functional as F
dev = "cuda"
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False

def bench(fn, reps=30, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)

print(torch.__version__, torch.cuda.get_device_name(), "cudnn", torch.backends.cudnn.version(), flush=True)
a = torch.empty(2**28, device=dev); b = torch.empty_like(a)
copy = 2 * a.numel() * 4 / bench(lambda: b.copy_(a)) / 1e6
print(f"torch copy {copy:.0f} GB/s", flush=True)
del a, b
for name, B, C, H, K, S, P in (("c128_56", 64, 128, 56, 3, 1, 1), ("c256_28", 64, 256, 28, 3, 1, 1),
                               ("c512_14", 64, 512, 14, 3, 1, 1), ("c128_56_s2", 64, 128, 56, 3, 2, 1),
                               ("c256_28_k5", 64, 256, 28, 5, 1, 2), ("c128_56_k7", 64, 128, 56, 7, 1, 3)):
    for cl in (False, True):
        x = torch.randn(B, C, H, H, device=dev); w = torch.randn(C, 1, K, K, device=dev)
        Ho = (H + 2 * P - K) // S + 1
        dy = torch.randn(B, C, Ho, Ho, device=dev)
        if cl:
            x, w, dy = (t.to(memory_format=torch.channels_last) for t in (x, w, dy))
        nbytes = 4.0 * (x.numel() + dy.numel())
        for what, fn in (("forward", lambda: F.conv2d(x, w, stride=S, padding=P, groups=C)),
                         ("backward_data", lambda: torch.nn.grad.conv2d_input(x.shape, w, dy, stride=S, padding=P, groups=C)),
                         ("backward_weights", lambda: torch.nn.grad.conv2d_weight(x, w.shape, dy, stride=S, padding=P, groups=C))):
            ms = bench(fn)
            gbs = nbytes / ms / 1e6
            print(f"cuDNN {name:12s} {'NHWC' if cl else 'NCHW'} {what:16s} {ms:8.4f} ms {gbs:7.0f} GB/s", flush=True)
