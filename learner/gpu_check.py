#!/usr/bin/env python3
"""One GRPO step on CUDA against the same step on the CPU (run only where a GPU is available).

    /usr/bin/python3 learner/gpu_check.py [--vocab 718] [--batch 80] [--tol 1e-4] [--section all|engineer|hf]

Section engineer: builds the built-in engineer with a fixed seed, copies the weights to both
devices, computes the GRPO loss (learner/grpo.py) on the same synthetic batch (uneven lengths, two
groups), back-propagates, and compares the loss and every parameter's gradient.

Section hf (learner/hf.py through the learner server's ops): writes a random checkpoint of
Qwen2.5-0.5B's shape in a temporary directory, loads it on CUDA in bfloat16 with LoRA r=16, runs
3 GRPO steps on random token batches (8 samples, prompt 512 + completion 256 tokens) and prints
tokens/s and torch.cuda.max_memory_allocated(); then, for each of llama/qwen2/qwen3 at the tiny
shape in float32, the same logits and the same GRPO step on the CPU and on CUDA (max abs
difference printed; a mismatch beyond --hf-rtol of the values' scale fails).

Prints the timings; exits 1 when a difference is above its tolerance, 2 when no CUDA device is
visible (nothing is run then).
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
    ap.add_argument("--section", choices=("all", "engineer", "hf"), default="all")
    ap.add_argument("--hf-rtol", type=float, default=1e-3, help="hf CPU-vs-CUDA tolerance, relative to the largest |value|")
    ap.add_argument("--hf-steps", type=int, default=3)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device visible to torch; run this on a GPU machine", file=sys.stderr)
        return 2
    ok = True
    if a.section in ("all", "engineer"):
        ok = engineer_section(a) and ok
    if a.section in ("all", "hf"):
        ok = hf_section(a) and ok
    return 0 if ok else 1


def engineer_section(a):
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
    return ok


def _learner():
    """a learner server object in this process (its ops called directly; stdout stays ours)"""
    out = sys.stdout
    import server

    sys.stdout = out
    return server.Learner()


def hf_throughput(device="cuda", size="0.5b", batch=8, prompt_len=512, completion_len=256, steps=3, vocab=151936, lora_r=16):
    """GRPO steps of a random Hugging Face checkpoint (bfloat16 on CUDA, LoRA): tokens/s and peak memory"""
    import tempfile

    dev = torch.device(device)
    with tempfile.TemporaryDirectory(prefix="hr1-hf-gpu-") as d:
        lrn = _learner()
        t0 = time.perf_counter()
        w = lrn.op_hf_write_random({"dir": d, "arch": "qwen2", "size": size, "vocab_size": vocab, "bos_token_id": vocab - 3, "eos_token_id": vocab - 2, "seed": 0, "dtype": "bfloat16"})
        t1 = time.perf_counter()
        info = lrn.op_hf_load({"dir": d, "device": device, "dtype": "auto", "lora": {"r": lora_r, "alpha": 2 * lora_r}, "seed": 0, "max_len": prompt_len + completion_len})
        t2 = time.perf_counter()
        print(f"hf {size}: {w['params'] / 1e6:.1f}M params written in {t1 - t0:.1f} s, loaded on {info['device']} ({info['hf']['dtype']}, LoRA r={lora_r}: {info['trainable_params'] / 1e6:.2f}M trainable) in {t2 - t1:.1f} s")
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        g = torch.Generator().manual_seed(0)
        for i in range(steps):
            prompts = torch.randint(0, vocab, (batch, prompt_len), generator=g).tolist()
            completions = torch.randint(0, vocab, (batch, completion_len), generator=g).tolist()
            rewards = torch.rand(batch, generator=g).tolist()
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            r = lrn.op_grpo_step({"prompts": prompts, "completions": completions, "rewards": rewards, "group_ids": [j * 2 // batch for j in range(batch)], "config": {"lr": 1e-5}})
            if dev.type == "cuda":
                torch.cuda.synchronize()
            dt = time.perf_counter() - t
            it = r["iters"][0]
            print(f"  GRPO step {i + 1}: {dt:.2f} s, {batch * (prompt_len + completion_len) / dt:,.0f} tokens/s ({batch * completion_len / dt:,.0f} completion tokens/s), loss {it['loss']:.5f}, grad norm {it['grad_norm']:.4f}")
        if dev.type == "cuda":
            print(f"  max memory allocated: {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")


def hf_cpu_vs(device="cuda", rtol=1e-3):
    """the tiny hf models (float32) on the CPU and on `device`: the same logits, the same GRPO step"""
    import tempfile

    import numpy as np

    ok = True
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 300, (2, 24), generator=g).tolist()
    batch = {"prompts": [[1] + ids[0][:9], [1] + ids[1][:5]], "completions": [ids[0][9:20], ids[1][5:12]], "rewards": [1.0, 0.0], "group_ids": [0, 0], "config": {"lr": 1e-3}}
    # a behaviour policy other than the current one, so the ratios (and the loss) depend on the model
    batch["old_logprobs"] = [[-5.5 - 0.01 * j for j in range(len(c))] for c in batch["completions"]]
    for arch in ("llama", "qwen2", "qwen3"):
        with tempfile.TemporaryDirectory(prefix="hr1-hf-tiny-") as d:
            lrn = []
            for dev in ("cpu", device):
                x = _learner()
                if dev == "cpu":
                    x.op_hf_write_random({"dir": d, "arch": arch, "size": "tiny", "vocab_size": 300, "bos_token_id": 1, "eos_token_id": 2, "seed": 5, "tie_word_embeddings": arch != "llama"})
                x.op_hf_load({"dir": d, "device": dev, "dtype": "float32", "lora": {"r": 4, "alpha": 8}, "seed": 1})
                lrn.append(x)

            def logits(x):
                r = x.op_hf_logits({"ids": ids})
                return np.frombuffer(r["logits"], dtype=np.float32).astype(np.float64)

            def rel(u, v):
                return float(np.abs(u - v).max()), float(np.abs(u - v).max() / max(np.abs(u).max(), 1e-12))

            la, lb = logits(lrn[0]), logits(lrn[1])
            sa, sb = lrn[0].op_grpo_step(batch)["iters"][0], lrn[1].op_grpo_step(batch)["iters"][0]
            la2, lb2 = logits(lrn[0]), logits(lrn[1])
            d0, r0 = rel(la, lb)
            d1, r1 = rel(la2, lb2)
            dl = abs(sa["loss"] - sb["loss"])
            rl = dl / max(abs(sa["loss"]), 1e-6)
            good = r0 <= rtol and r1 <= rtol and rl <= rtol
            ok = ok and good
            print(f"hf tiny {arch} cpu vs {device}: logits max |diff| {d0:.2e} (rel {r0:.1e}); GRPO loss {sa['loss']:.7f} vs {sb['loss']:.7f} |diff| {dl:.2e}; logits after the step max |diff| {d1:.2e} (rel {r1:.1e}) {'OK' if good else 'MISMATCH'}")
    return ok


def hf_section(a):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"device: {torch.cuda.get_device_name(0)}; torch {torch.__version__}; hf section (learner/hf.py)")
    hf_throughput(steps=a.hf_steps)
    ok = hf_cpu_vs("cuda", a.hf_rtol)
    print("hf OK" if ok else "hf MISMATCH")
    return ok


if __name__ == "__main__":
    sys.exit(main())
