"""GRPO math as pure functions (verl semantics, see docs/LEARNER.md).

Mirrored by grpo.ts; test/integration/learner/grpo-crosscheck.test.ts checks that both agree.
Every function takes tensors and returns tensors; nothing here touches a model or an optimizer.
"""
import torch

ADV_EPS = 1e-6
RATIO_CLAMP = 20.0
KL_CLAMP = 10.0


def group_advantages(rewards, group_ids, std_floor=0.0):
    """A_i = (r_i - mean_g) / (max(std_g, std_floor) + 1e-6), unbiased std; a group of one or of equal rewards gives 0.

    verl gives a singleton group r/(1+eps); DESIGN.md asks for 0 (no baseline, no signal).
    std_floor > 0 keeps differences far below the reward's noise level (one task of a batch) from
    being blown up to unit advantages (0.047 vs 0.05 otherwise reads as +-1).
    """
    rewards = rewards.to(torch.float64)
    adv = torch.zeros_like(rewards)
    groups = {}
    for i, g in enumerate(group_ids):
        groups.setdefault(g, []).append(i)
    for idx in groups.values():
        if len(idx) < 2:
            continue
        r = rewards[idx]
        if bool(torch.all(r == r[0])):
            continue
        mean = r.mean()
        std = torch.clamp(r.std(unbiased=True), min=float(std_floor))
        adv[idx] = (r - mean) / (std + ADV_EPS)
    return adv


def ratio(logp, old_logp):
    """exp(clamp(logp - old_logp, -20, 20))."""
    return torch.exp(torch.clamp(logp - old_logp, -RATIO_CLAMP, RATIO_CLAMP))


def policy_loss_per_token(logp, old_logp, adv, eps_low, eps_high, clip_c):
    """Per-token clipped surrogate with dual clip. adv broadcasts over tokens.

    Returns (loss, ratio, clipped, dual_clipped) where clipped/dual_clipped are 0/1 masks.
    """
    r = ratio(logp, old_logp)
    l1 = -adv * r
    l2 = -adv * torch.clamp(r, 1.0 - eps_low, 1.0 + eps_high)
    clip1 = torch.maximum(l1, l2)
    l3 = -adv * clip_c
    clip2 = torch.minimum(l3, clip1)
    loss = torch.where(adv < 0, clip2, clip1)
    clipped = (l2 > l1).to(logp.dtype)
    dual = ((clip1 > l3) & (adv < 0)).to(logp.dtype)
    return loss, r, clipped, dual


def k3_kl(logp, ref_logp):
    """k3 estimator of KL(pi || ref) per token: exp(ref - logp) - (ref - logp) - 1, clamped to [-10, 10]."""
    d = ref_logp - logp
    return torch.clamp(torch.exp(d) - d - 1.0, -KL_CLAMP, KL_CLAMP)


def token_mean(x, mask, total_tokens=None):
    """Sum of x over valid tokens / number of valid tokens of the global batch."""
    n = mask.sum() if total_tokens is None else total_tokens
    return (x * mask).sum() / max(float(n), 1.0)


def grpo_math(logprobs, old_logprobs, rewards, group_ids, eps_low=0.2, eps_high=0.2, clip_c=3.0, kl_coef=0.0, ref_logprobs=None, std_floor=0.0):
    """The whole objective on ragged per-token lists, in float64. Used by the cross-check test."""
    n = len(logprobs)
    t = max((len(x) for x in logprobs), default=0)
    f64 = torch.float64

    def pad(rows):
        out = torch.zeros((n, t), dtype=f64)
        for i, row in enumerate(rows):
            if len(row):
                out[i, : len(row)] = torch.tensor(row, dtype=f64)
        return out

    mask = torch.zeros((n, t), dtype=f64)
    for i, row in enumerate(logprobs):
        mask[i, : len(row)] = 1.0
    lp, old = pad(logprobs), pad(old_logprobs)
    adv = group_advantages(torch.tensor(rewards, dtype=f64), group_ids, std_floor)
    loss_tok, r, clipped, dual = policy_loss_per_token(lp, old, adv[:, None], eps_low, eps_high, clip_c)
    pg = token_mean(loss_tok, mask)
    out = {
        "advantages": adv.tolist(),
        "ratio": [r[i, : len(row)].tolist() for i, row in enumerate(logprobs)],
        "per_token_loss": [loss_tok[i, : len(row)].tolist() for i, row in enumerate(logprobs)],
        "pg_loss": float(pg),
        "clip_frac": float(token_mean(clipped, mask)),
        "dual_clip_frac": float(token_mean(dual, mask)),
        "kl": 0.0,
        "loss": float(pg),
    }
    if ref_logprobs is not None:
        kl = token_mean(k3_kl(lp, pad(ref_logprobs)), mask)
        out["kl"] = float(kl)
        out["loss"] = float(pg + kl_coef * kl)
    return out
