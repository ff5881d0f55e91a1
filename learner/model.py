"""The built-in engineer: a small decoder-only transformer over token ids.

Pre-LN blocks, learned positions, causal self-attention written out by hand so the ONNX graph
(opset 17) holds only MatMul/Softmax/LayerNorm-level ops that onnxruntime-node runs on the CPU.
"""
import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelConfig:
    vocab_size: int
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 512
    max_len: int = 256
    dropout: float = 0.0
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    tie_embeddings: bool = True

    @staticmethod
    def from_dict(d):
        known = {k: d[k] for k in ModelConfig.__dataclass_fields__ if k in d}
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise ValueError(f"unknown model config keys: {', '.join(unknown)}")
        c = ModelConfig(**known)
        if c.vocab_size < 3:
            raise ValueError(f"config.vocab_size must be at least 3, got {c.vocab_size}")
        if c.d_model % c.n_heads != 0:
            raise ValueError(f"config.d_model ({c.d_model}) must be divisible by config.n_heads ({c.n_heads})")
        for k in ("pad_id", "bos_id", "eos_id"):
            v = getattr(c, k)
            if not 0 <= v < c.vocab_size:
                raise ValueError(f"config.{k} ({v}) must be in [0, vocab_size={c.vocab_size})")
        return c

    def to_dict(self):
        return asdict(self)


class Block(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.n_heads = c.n_heads
        self.scale = 1.0 / math.sqrt(c.d_model // c.n_heads)
        self.ln1 = nn.LayerNorm(c.d_model)
        self.qkv = nn.Linear(c.d_model, 3 * c.d_model)
        self.proj = nn.Linear(c.d_model, c.d_model)
        self.ln2 = nn.LayerNorm(c.d_model)
        self.fc1 = nn.Linear(c.d_model, c.d_ff)
        self.fc2 = nn.Linear(c.d_ff, c.d_model)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x, mask):
        b, t, d = x.shape
        h = self.n_heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.reshape(b, t, h, d // h).transpose(1, 2)
        k = k.reshape(b, t, h, d // h).transpose(1, 2)
        v = v.reshape(b, t, h, d // h).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        att = att + mask
        att = self.drop(torch.softmax(att, dim=-1))
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, t, d)
        x = x + self.drop(self.proj(y))
        x = x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)))))
        return x

    def decode(self, x, past_k, past_v, past_mask, self_mask):
        """New tokens x [B, T, D] after a cache of L positions: keys past_k [B, H, Dh, L] (stored
        transposed, so q·K needs no transpose), values past_v [B, H, L, Dh]; past_mask [B, 1, 1, L]
        hides the cache slots a row has not filled, self_mask [T, T] is causal over the new tokens.
        Returns x and the new tokens' keys [B, H, Dh, T] and values [B, H, T, Dh]."""
        b, t, d = x.shape
        h = self.n_heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.reshape(b, t, h, d // h).transpose(1, 2)
        kt = k.reshape(b, t, h, d // h).permute(0, 2, 3, 1)
        v = v.reshape(b, t, h, d // h).transpose(1, 2)
        s_past = torch.matmul(q, past_k) * self.scale + past_mask
        s_self = torch.matmul(q, kt) * self.scale + self_mask
        n_past = past_k.shape[3]
        att = torch.softmax(torch.cat([s_past, s_self], dim=-1), dim=-1)
        y = torch.matmul(att[..., :n_past], past_v) + torch.matmul(att[..., n_past:], v)
        y = y.transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x, kt, v


class Engineer(nn.Module):
    """input_ids [B, T] (int64) -> logits [B, T, V] (float32); decode() is the same model with a
    key/value cache (what the exported decode graph runs)."""

    def __init__(self, c: ModelConfig):
        super().__init__()
        self.config = c
        self.tok = nn.Embedding(c.vocab_size, c.d_model)
        self.pos = nn.Embedding(c.max_len, c.d_model)
        self.blocks = nn.ModuleList([Block(c) for _ in range(c.n_layers)])
        self.ln_f = nn.LayerNorm(c.d_model)
        self.head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_embeddings:
            self.head.weight = self.tok.weight
        # additive causal mask; a large finite negative keeps softmax free of NaN in every runtime
        causal = torch.triu(torch.full((c.max_len, c.max_len), -1e9), diagonal=1)
        self.register_buffer("causal", causal, persistent=False)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=0.02)

    def hidden(self, input_ids):
        """the final hidden states [B, T, D] (the logits are head(hidden))"""
        t = input_ids.shape[1]
        x = self.tok(input_ids) + self.pos.weight[:t].unsqueeze(0)
        mask = self.causal[:t, :t]
        for blk in self.blocks:
            x = blk(x, mask)
        return self.ln_f(x)

    def forward(self, input_ids):
        return self.head(self.hidden(input_ids))

    def decode(self, input_ids, pos, logit_pos, past_k, past_v):
        """Incremental decoding: input_ids [B, T] at positions pos[b] + 0..T-1, after each row's
        first pos[b] cached positions (past_k[i] [B, H, Dh, L], past_v[i] [B, H, L, Dh] per layer;
        slots at or past pos[b] are ignored). Returns logits [N, V] at the new tokens listed in
        logit_pos [N] (indices into the flattened [B * T] positions: row b, token j is b * T + j),
        and per layer the new tokens' keys [B, H, Dh, T] and values [B, H, T, Dh].
        A prefill is L = 0 (or any L with pos = 0); a decoding step is T = 1."""
        t = input_ids.shape[1]
        n_past = past_k[0].shape[3]
        positions = pos.unsqueeze(1) + torch.arange(t, device=input_ids.device).unsqueeze(0)
        x = self.tok(input_ids) + self.pos(positions)
        slots = torch.arange(n_past, device=input_ids.device).unsqueeze(0)
        past_mask = torch.where(slots < pos.unsqueeze(1), torch.zeros((), device=x.device), torch.full((), -1e9, device=x.device))
        past_mask = past_mask.unsqueeze(1).unsqueeze(1)
        self_mask = self.causal[:t, :t]
        ks, vs = [], []
        for blk, pk, pv in zip(self.blocks, past_k, past_v):
            x, k, v = blk.decode(x, pk, pv, past_mask, self_mask)
            ks.append(k)
            vs.append(v)
        h = self.ln_f(x)
        h = h.reshape(-1, h.shape[2]).index_select(0, logit_pos)
        return self.head(h), ks, vs

    def num_params(self):
        return sum(p.numel() for p in self.parameters())


class DecodeGraph(nn.Module):
    """The exported decode graph's signature: flat inputs input_ids, pos, logit_pos, past_k_0..,
    past_v_0..; flat outputs logits, k_0.., v_0.. (see Engineer.decode)."""

    def __init__(self, model: Engineer):
        super().__init__()
        self.model = model
        self.n = len(model.blocks)

    def forward(self, input_ids, pos, logit_pos, *past):
        logits, ks, vs = self.model.decode(input_ids, pos, logit_pos, list(past[: self.n]), list(past[self.n :]))
        return (logits, *ks, *vs)
