# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Session 47 (issue 24): PyTorch's LeNet-5 training step on the GPU, the anchor of
# `lenet5 train`'s epoch time; the same network, loss and optimizer as
# ../shared/anchors/cudnn_anchor_wave2.py's LeNet rows (fp32 strict, batches already on
# the GPU), plus the epoch it implies (60,000 / B steps). Median of CUDA-event timings.
import statistics
import torch
import torch.nn.functional as F

dev = "cuda"
torch.manual_seed(0)
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False


def bench(fn, reps=50, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)


net = torch.nn.Sequential(
    torch.nn.Conv2d(1, 4, 7), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(4, 16, 7), torch.nn.ReLU(), torch.nn.MaxPool2d(4),
    torch.nn.Flatten(), torch.nn.Linear(16 * 8 * 8, 32), torch.nn.ReLU(),
    torch.nn.Linear(32, 10)).to(dev)
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
print(torch.__version__, "cuDNN", torch.backends.cudnn.version(), torch.cuda.get_device_name())
for B in (64, 1000):
    xb = torch.randn(B, 1, 86, 86, device=dev)
    yb = torch.randint(0, 10, (B,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        opt.step()
    ms = bench(step)
    print(f"pytorch lenet5 train step B={B} {ms:8.3f} ms {B / ms * 1e3:10.0f} images/s "
          f"epoch(60k) {60000 // B * ms / 1e3:7.3f} s", flush=True)
# Backward data / weights of the 64-channel 56x56 ResNet layer (issue 24's cuDNN rows).
x = torch.randn(64, 64, 56, 56, device=dev, requires_grad=True)
w = torch.randn(64, 64, 3, 3, device=dev, requires_grad=True)
dy = torch.randn(64, 64, 56, 56, device=dev)
print(f"cudnn resnet 64ch 56x56 N=64 backward data "
      f"{bench(lambda: torch.nn.grad.conv2d_input(x.shape, w, dy, padding=1)):8.3f} ms", flush=True)
print(f"cudnn resnet 64ch 56x56 N=64 backward weights "
      f"{bench(lambda: torch.nn.grad.conv2d_weight(x, w.shape, dy, padding=1)):8.3f} ms", flush=True)
