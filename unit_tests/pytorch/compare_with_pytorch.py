# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""PyTorch as a second, independent reference for kcnn (issue 23).

    python3 compare_with_pytorch.py RUNNER [--cases 400] [--seed 1] [--workdir DIR]

Draws random problems (every operation: conv2d_forward with each algorithm, with and
without the fused pooling; pool2d_forward; both backward convolutions; pool2d_backward;
activation_backward; both layouts; stride, padding, dilation; every activation; float
and double), writes their inputs for kcnn_case_runner (RUNNER, see case_runner.cpp), runs
it once, and compares each output with PyTorch's in float64 on the same (rounded) inputs.

An output element passes when |kcnn - torch| <= 2 (K + 2) u S + 8 u max(1, |torch|), with
u the unit roundoff of the case's type, K the number of terms summed into it and S the
sum of their magnitudes (the same operation on |inputs|): the bound of a sum of K rounded
products. Prints the cases compared per operation, the largest error relative to that
bound and to the output's magnitude, and exits 1 on any failure or refusal.
"""
import argparse
import os
import random
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

ALGOS = ["Auto", "Reference", "Tiled", "Im2colGemm", "ImplicitGemm"]
OPS = ["conv", "conv_pool", "pool", "conv_bwd_data", "conv_bwd_weights", "pool_bwd", "act_bwd"]
ACTS = [lambda t: t, torch.relu, torch.sigmoid, torch.tanh]


def out_extent(n, k, s, p, d=1):
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def draw_case(rng, i):
    """A random valid problem as the runner's key=value dictionary."""
    op = rng.choice(OPS)
    c = dict(id=i, op="conv" if op == "conv_pool" else op, dtype=rng.choice(["f32", "f64"]),
             layout=rng.choice(["NCHW", "NHWC"]))
    while True:
        c.update(N=rng.randint(1, 4), C=rng.randint(1, 9), H=rng.randint(1, 20),
                 W=rng.randint(1, 20), M=rng.randint(1, 9), R=rng.randint(1, 5),
                 S=rng.randint(1, 5), sh=rng.randint(1, 3), sw=rng.randint(1, 3),
                 ph=rng.randint(0, 2), pw=rng.randint(0, 2), dh=rng.randint(1, 2),
                 dw=rng.randint(1, 2), act=rng.randint(0, 3), bias=rng.randint(0, 1))
        if op in ("pool", "pool_bwd", "act_bwd"):
            c.update(R=1, S=1, sh=1, sw=1, ph=0, pw=0, dh=1, dw=1, M=c["C"])
        c["P"] = out_extent(c["H"], c["R"], c["sh"], c["ph"], c["dh"])
        c["Q"] = out_extent(c["W"], c["S"], c["sw"], c["pw"], c["dw"])
        if c["P"] < 1 or c["Q"] < 1:
            continue
        if op in ("conv_pool", "pool", "pool_bwd"):
            wh, ww = rng.randint(1, 4), rng.randint(1, 4)
            c.update(pool=1, pmode=rng.randint(0, 1), pwh=wh, pww=ww, psh=rng.randint(1, 3),
                     psw=rng.randint(1, 3), pph=rng.randint(0, wh // 2), ppw=rng.randint(0, ww // 2),
                     pinc=rng.randint(0, 1), pact=rng.randint(0, 3) if op != "pool_bwd" else 0)
            src_h, src_w = (c["P"], c["Q"]) if op == "conv_pool" else (c["H"], c["W"])
            c["PP"] = out_extent(src_h, wh, c["psh"], c["pph"])
            c["QQ"] = out_extent(src_w, ww, c["psw"], c["ppw"])
            if c["PP"] < 1 or c["QQ"] < 1:
                continue
        if op == "conv" or op == "conv_pool":
            # TensorCoreGemm: double on GPUs (DMMA); float needs a TF32 mode, not compared here.
            gpu_f64 = c["dtype"] == "f64" and torch.cuda.is_available()
            c["algo"] = rng.choice(ALGOS + (["TensorCoreGemm"] if gpu_f64 else []))
        if op in ("conv_bwd_data", "conv_bwd_weights", "pool_bwd"):
            c["act"] = 0
        if op == "act_bwd":
            c["act"] = rng.randint(0, 3)
        return c


def to_layout(t, nhwc):
    """An NCHW tensor in the case's storage order."""
    return t.permute(0, 2, 3, 1).contiguous() if nhwc else t.contiguous()


def from_layout(t, nhwc):
    return t.permute(0, 3, 1, 2).contiguous() if nhwc else t


class Problem:
    def __init__(self, c, workdir, device):
        self.c, self.device = c, device
        self.nhwc = c["layout"] == "NHWC"
        self.dtype = np.float32 if c["dtype"] == "f32" else np.float64
        self.prefix = os.path.join(workdir, f"{c['id']}_")
        self.inputs = {}

    def make(self, name, shape, low=-1.0, high=1.0):
        """Random NCHW input (rounded to the case's type), written in the layout's order."""
        t = torch.empty(shape, dtype=torch.float64).uniform_(low, high)
        t = t.to(torch.float32 if self.dtype == np.float32 else torch.float64).to(torch.float64)
        stored = to_layout(t, self.nhwc) if len(shape) == 4 else t
        stored.numpy().astype(self.dtype).tofile(self.prefix + name + ".bin")
        self.inputs[name] = t.to(self.device)
        return self.inputs[name]

    def read(self, name, shape_nchw):
        n, ch, h, w = shape_nchw
        stored = (n, h, w, ch) if self.nhwc else (n, ch, h, w)
        a = np.fromfile(self.prefix + name + ".bin", dtype=self.dtype)
        t = torch.from_numpy(a.astype(np.float64)).reshape(stored)
        return from_layout(t, self.nhwc).to(self.device)


def conv_args(c):
    return dict(stride=(c["sh"], c["sw"]), padding=(c["ph"], c["pw"]),
                dilation=(c["dh"], c["dw"]))


def pool_fn(c, t):
    k, s, p = (c["pwh"], c["pww"]), (c["psh"], c["psw"]), (c["pph"], c["ppw"])
    if c["pmode"] == 0:
        return F.max_pool2d(t, k, s, p)
    return F.avg_pool2d(t, k, s, p, count_include_pad=bool(c["pinc"]))


def magnitude_pool(c, t):
    """A pooling's error scale: the largest magnitude in each window."""
    k, s, p = (c["pwh"], c["pww"]), (c["psh"], c["psw"]), (c["pph"], c["ppw"])
    return F.max_pool2d(t.abs(), k, s, p)


def prepare(pb):
    """Writes the inputs; returns (want, scale, K) per output name (NCHW tensors)."""
    c = pb.c
    N, C, H, W, M, R, S = (c[k] for k in "N C H W M R S".split())
    act = ACTS[c["act"]]
    if c["op"] == "conv":
        x, w = pb.make("x", (N, C, H, W)), pb.make("w", (M, C, R, S))
        b = pb.make("b", (M,)) if c["bias"] else None
        z = F.conv2d(x, w, b, **conv_args(c))
        scale = F.conv2d(x.abs(), w.abs(), b.abs() if b is not None else None, **conv_args(c))
        y, K = act(z), C * R * S
        if c.get("pool"):
            return {"out": (ACTS[c["pact"]](pool_fn(c, y)), magnitude_pool(c, scale),
                            K + c["pwh"] * c["pww"])}
        return {"out": (y, scale, K)}
    if c["op"] == "pool":
        x = pb.make("x", (N, C, H, W))
        b = pb.make("b", (C,)) if c["bias"] else None
        y = pool_fn(c, x)
        if b is not None:
            y = y + b.view(1, -1, 1, 1)
        return {"out": (ACTS[c["pact"]](y), magnitude_pool(c, x) + 1, c["pwh"] * c["pww"])}
    if c["op"] == "conv_bwd_data":
        dy, w = pb.make("dy", (N, M, c["P"], c["Q"])), pb.make("w", (M, C, R, S))
        want = torch.nn.grad.conv2d_input((N, C, H, W), w, dy, **conv_args(c))
        scale = torch.nn.grad.conv2d_input((N, C, H, W), w.abs(), dy.abs(), **conv_args(c))
        return {"out": (want, scale, M * R * S)}
    if c["op"] == "conv_bwd_weights":
        x, dy = pb.make("x", (N, C, H, W)), pb.make("dy", (N, M, c["P"], c["Q"]))
        want = torch.nn.grad.conv2d_weight(x, (M, C, R, S), dy, **conv_args(c))
        scale = torch.nn.grad.conv2d_weight(x.abs(), (M, C, R, S), dy.abs(), **conv_args(c))
        K = N * c["P"] * c["Q"]
        outs = {"out": (want, scale, K)}
        if c["bias"]:
            outs["db"] = (dy.sum(dim=(0, 2, 3)).view(1, M, 1, 1),
                          dy.abs().sum(dim=(0, 2, 3)).view(1, M, 1, 1), K)
        return outs
    if c["op"] == "pool_bwd":
        x = pb.make("x", (N, C, H, W))
        dy = pb.make("dy", (N, C, c["PP"], c["QQ"]))
        xg = x.clone().requires_grad_(True)
        (want,) = torch.autograd.grad(pool_fn(c, xg), xg, dy)
        xa = x.clone().requires_grad_(True)
        (scale,) = torch.autograd.grad(pool_fn(c, xa), xa, dy.abs())
        return {"out": (want, scale.abs(), c["pwh"] * c["pww"])}
    if c["op"] == "act_bwd":
        # y is an activation's output: in its range, so the formulas hold.
        z = pb.make("z", (N, C, H, W), -3.0, 3.0)
        y = ACTS[c["act"]](z)
        y = y.to(torch.float32 if pb.dtype == np.float32 else torch.float64).to(torch.float64)
        to_layout(y.cpu(), pb.nhwc).numpy().astype(pb.dtype).tofile(pb.prefix + "y.bin")
        dy = pb.make("dy", (N, C, H, W))
        want = {0: dy, 1: torch.where(y > 0, dy, torch.zeros_like(dy)), 2: dy * y * (1 - y),
                3: dy * (1 - y * y)}[c["act"]]
        return {"out": (want, dy.abs() * (1 + y.abs()) ** 2, 4)}
    raise ValueError(c["op"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runner")
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", default="pytorch_cases")
    args = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)
    torch.backends.cudnn.allow_tf32 = False  # float64 anyway; be explicit
    rng = random.Random(args.seed)
    os.makedirs(args.workdir, exist_ok=True)
    problems, expected = [], []
    with open(os.path.join(args.workdir, "cases.txt"), "w") as f:
        for i in range(args.cases):
            c = draw_case(rng, i)
            pb = Problem(c, args.workdir, device)
            expected.append(prepare(pb))
            problems.append(pb)
            f.write(" ".join(f"{k}={v}" for k, v in c.items()) + "\n")
    run = subprocess.run([args.runner, args.workdir], capture_output=True, text=True)
    print(run.stdout.strip(), run.stderr.strip()[-2000:])
    if run.returncode != 0:
        sys.exit(f"compare_with_pytorch: the runner failed (exit {run.returncode})")
    stats, failures = {}, []
    worst_bound, worst_rel = 0.0, 0.0
    for pb, outs in zip(problems, expected):
        c = pb.c
        key = c["op"] + ("+pool" if c.get("pool") and c["op"] == "conv" else "")
        stats[key] = stats.get(key, 0) + 1
        err_file = pb.prefix + "error.txt"
        if os.path.exists(err_file):
            failures.append(f"case {c['id']} ({key}) refused: {open(err_file).read().strip()}")
            continue
        u = 2.0 ** -24 if pb.dtype == np.float32 else 2.0 ** -53
        for name, (want, scale, K) in outs.items():
            got = pb.read(name, tuple(want.shape)).cpu()
            want, scale = want.cpu(), scale.cpu()
            bound = 2 * (K + 2) * u * scale + 8 * u * torch.clamp(want.abs(), min=1.0)
            diff = (got - want).abs()
            ratio = float((diff / bound).max()) if diff.numel() else 0.0
            rel = float(diff.max() / max(float(want.abs().max()), 1e-300)) if diff.numel() else 0.0
            worst_bound, worst_rel = max(worst_bound, ratio), max(worst_rel, rel)
            if not ratio <= 1.0:  # also NaN
                failures.append(f"case {c['id']} ({key} {name}): error {ratio:.3g} x the bound; "
                                + " ".join(f"{k}={v}" for k, v in c.items()))
    print("pytorch comparison: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.items())))
    print(f"pytorch comparison: {len(problems)} cases, {len(failures)} failures; largest error "
          f"{worst_bound:.3g} x the bound, {worst_rel:.3g} of the output's magnitude "
          f"(torch {torch.__version__}, {device} float64)")
    for f in failures[:20]:
        print("  " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
