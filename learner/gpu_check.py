#!/usr/bin/env python3
"""One GRPO step on CUDA against the same step on the CPU (run only where a GPU is available).

    /usr/bin/python3 learner/gpu_check.py [--vocab 718] [--batch 80] [--tol 1e-4]

Builds the engineer with a fixed seed, copies the weights to both devices, computes the GRPO loss
(learner/grpo.py) on the same synthetic batch (uneven lengths, two groups), back-propagates,
and compares the loss and every parameter's gradient. Prints both timings; exits 1 when a
difference is above the tolerance, 2 when no CUDA device is visible.
"""
import argparse
import copy
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch  # noqa: E402

from grpo import group_advantages, policy_loss_per_token, token_mean  # noqa: E402
from model import Engineer, ModelConfig  # noqa: E402


def step(model, ids, mask, old, adv, device):
    model = model.to(device)
    model.zero_grad(set_to_none=True)
    ids, mask, old, adv = ids.to(device), mask.to(device), old.to(device), adv.to(device)
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    logits = model(ids[:, :-1]).float()
    logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    loss_tok, _, _, _ = policy_loss_per_token(logp, old, adv[:, None], 0.2, 0.28, 3.0)
    loss = token_mean(loss_tok, mask)
    loss.backward()
    if device.type == "cuda":
        torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1000
    grads = {n: p.grad.detach().to("cpu", torch.float64) for n, p in model.named_parameters() if p.grad is not None}
    return float(loss), grads, ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", type=int, default=718)
    ap.add_argument("--batch", type=int, default=80)
    ap.add_argument("--len", type=int, default=200)
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device visible to torch; run this on a GPU machine", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cfg = ModelConfig(vocab_size=a.vocab, max_len=max(256, a.len + 1))
    base = Engineer(cfg)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, a.vocab, (a.batch, a.len), generator=g)
    lengths = torch.randint(a.len // 4, a.len, (a.batch,), generator=g)
    mask = (torch.arange(a.len - 1)[None, :] < lengths[:, None]).float()
    old = -torch.rand((a.batch, a.len - 1), generator=g) * 3
    rewards = torch.rand(a.batch, generator=g)
    adv = group_advantages(rewards, [i % 2 for i in range(a.batch)]).float()
    cpu_loss, cpu_g, cpu_ms = step(copy.deepcopy(base), ids, mask, old, adv, torch.device("cpu"))
    step(copy.deepcopy(base), ids, mask, old, adv, torch.device("cuda"))  # warm-up
    gpu_loss, gpu_g, gpu_ms = step(copy.deepcopy(base), ids, mask, old, adv, torch.device("cuda"))
    worst = max((float((cpu_g[n] - gpu_g[n]).abs().max()) for n in cpu_g), default=0.0)
    dl = abs(cpu_loss - gpu_loss)
    print(f"device: {torch.cuda.get_device_name(0)}; torch {torch.__version__}")
    print(f"loss cpu {cpu_loss:.8f} cuda {gpu_loss:.8f} |diff| {dl:.2e}")
    print(f"max |grad diff| over {len(cpu_g)} tensors: {worst:.2e} (tolerance {a.tol:g})")
    print(f"one GRPO forward+backward, batch {a.batch} x {a.len}: cpu {cpu_ms:.1f} ms, cuda {gpu_ms:.1f} ms ({cpu_ms / max(gpu_ms, 1e-9):.1f}x)")
    ok = dl <= a.tol and worst <= a.tol
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
