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


class Engineer(nn.Module):
    """input_ids [B, T] (int64) -> logits [B, T, V] (float32)."""

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

    def num_params(self):
        return sum(p.numel() for p in self.parameters())
