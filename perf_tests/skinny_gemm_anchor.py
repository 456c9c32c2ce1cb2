# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# cuBLAS (through PyTorch) on the skinny GEMM of Im2colGemm's LeNet C3 chunk (fp32, TF32 off), both orientations.
import torch, time
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = 'cuda'
K, M = 196, 16
for cols in (342_000, 1_156_000, 11_560_000):
    W = torch.randn(M, K, device=dev)
    U = torch.randn(K, cols, device=dev)        # NCHW unrolled matrix: rows k, columns pixels
    Ut = torch.randn(cols, K, device=dev)       # NHWC unrolled matrix: rows pixels, k innermost
    def t(f, reps=20):
        f(); torch.cuda.synchronize()
        s = time.perf_counter()
        for _ in range(reps): f()
        torch.cuda.synchronize()
        return (time.perf_counter() - s) / reps * 1e3
    a = t(lambda: torch.mm(W, U))               # Y[M][cols] = W U
    b = t(lambda: torch.mm(Ut, W.t()))          # Y[cols][M] = Ut W^T
    gb = cols * K * 4 / 1e9  # GB of the unrolled matrix U
    print(f"cols={cols}: W@U {a:.3f} ms ({gb / (a / 1e3):.0f} GB/s of U read), Ut@W^T {b:.3f} ms ({gb / (b / 1e3):.0f} GB/s)")
