"""Hugging Face-layout decoder-only engineers (Llama, Qwen2, Qwen3) in plain torch, with LoRA.

The architectures as `transformers` defines them (modeling_llama.py, modeling_qwen2.py,
modeling_qwen3.py), read from a model directory's `config.json` and safetensors weights under
the very parameter names Hugging Face uses, so a checkpoint from the Hub loads as it is and what
this module writes loads in `transformers` (and a LoRA adapter in PEFT):

- RMSNorm computed in float32 and cast back before the weight multiplies it;
- rotary positions, rotate-half convention: inv_freq = 1 / theta^(arange(0, d, 2) / d), cos and
  sin of cat(freqs, freqs), optionally scaled (rope_scaling linear, dynamic NTK, llama3, yarn);
- grouped-query attention (each key/value head repeated for its query heads), causal, softmax in
  float32; `scaled_dot_product_attention` where torch has it (2.x), written out otherwise (1.13);
- SwiGLU MLP down(silu(gate(x)) * up(x)); q/k/v biases for qwen2 (and llama's attention_bias);
  qwen3's q_norm/k_norm (RMSNorm over head_dim, per head, before RoPE).

The model answers what learner/server.py asks of its built-in engineer: hidden(ids) -> final-normed
hidden states [B, T, H], head(h) -> logits, num_params(); prefill()/decode_step() run it with a
key/value cache for sampling. Torch 1.13 on the CPU and 2.x on CUDA.
"""
import contextlib
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from safetensors_io import CheckpointReader, SafetensorsError

ARCHITECTURES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}
ROPE_TYPES = ("default", "linear", "dynamic", "llama3", "yarn")
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
DEFAULT_LORA = {"r": 16, "alpha": 32, "dropout": 0.0, "targets": list(LORA_TARGETS)}
DEFAULT_MAX_LEN = 4096
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
HAS_SDPA = hasattr(F, "scaled_dot_product_attention")

# what transformers' config classes default to where config.json is silent
_DEFAULTS = {
    "llama": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 2048, "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False, "bos_token_id": 1, "eos_token_id": 2},
    "qwen2": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 32768, "tie_word_embeddings": False, "attention_bias": True, "mlp_bias": False, "bos_token_id": None, "eos_token_id": None},
    "qwen3": {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 32768, "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False, "bos_token_id": None, "eos_token_id": None, "head_dim": 128},
}
# the config.json fields hf_write_random's overrides may set
CONFIG_FIELDS = (
    "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "rms_norm_eps", "rope_theta", "rope_scaling", "max_position_embeddings", "tie_word_embeddings", "vocab_size",
    "attention_bias", "mlp_bias", "bos_token_id", "eos_token_id", "pad_token_id",
)


class HFConfigError(ValueError):
    """A config.json that this module cannot build a model from; names the file and the field."""


# -- config ----------------------------------------------------------------------------------
class HFConfig:
    """A Hugging Face config.json, checked, plus the learner's view of it (vocab_size, max_len,
    pad_id, bos_id, eos_id: what learner/server.py's batch() reads)."""

    def __init__(self, raw, where="config.json", max_len=None):
        if not isinstance(raw, dict):
            raise HFConfigError(f"{where} is not a JSON object")
        self.raw = dict(raw)
        mt = raw.get("model_type")
        if mt not in ARCHITECTURES:
            raise HFConfigError(f"{where}: model_type {mt!r} is not supported (one of {', '.join(ARCHITECTURES)})")
        self.model_type = mt
        d = {**_DEFAULTS[mt], **{k: v for k, v in raw.items() if v is not None or k in ("pad_token_id", "rope_scaling", "bos_token_id", "eos_token_id")}}

        def need_int(k, lo=1):
            v = d.get(k)
            if not isinstance(v, int) or isinstance(v, bool) or v < lo:
                raise HFConfigError(f"{where}: {k} must be an integer >= {lo}, got {v!r}")
            return v

        def num(k):
            v = d.get(k)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
                raise HFConfigError(f"{where}: {k} must be a positive number, got {v!r}")
            return float(v)

        self.hidden_size = need_int("hidden_size")
        self.intermediate_size = need_int("intermediate_size")
        self.num_hidden_layers = need_int("num_hidden_layers")
        self.num_attention_heads = need_int("num_attention_heads")
        self.num_key_value_heads = need_int("num_key_value_heads") if d.get("num_key_value_heads") is not None else self.num_attention_heads
        self.vocab_size = need_int("vocab_size", 2)
        self.head_dim = need_int("head_dim") if d.get("head_dim") is not None else None
        if self.head_dim is None:
            if self.hidden_size % self.num_attention_heads:
                raise HFConfigError(f"{where}: hidden_size {self.hidden_size} is not divisible by num_attention_heads {self.num_attention_heads} (and no head_dim)")
            self.head_dim = self.hidden_size // self.num_attention_heads
        if self.head_dim % 2:
            raise HFConfigError(f"{where}: head_dim {self.head_dim} must be even for rotary positions")
        if self.num_attention_heads % self.num_key_value_heads:
            raise HFConfigError(f"{where}: num_attention_heads {self.num_attention_heads} is not a multiple of num_key_value_heads {self.num_key_value_heads}")
        self.rms_norm_eps = num("rms_norm_eps")
        self.rope_theta = num("rope_theta")
        self.max_position_embeddings = need_int("max_position_embeddings")
        self.tie_word_embeddings = bool(d.get("tie_word_embeddings"))
        self.attention_bias = bool(d.get("attention_bias"))
        self.mlp_bias = bool(d.get("mlp_bias")) if mt == "llama" else False
        act = d.get("hidden_act", "silu")
        if act != "silu":
            raise HFConfigError(f"{where}: hidden_act {act!r} is not supported (these architectures use 'silu')")
        if d.get("use_sliding_window"):
            raise HFConfigError(f"{where}: use_sliding_window is true; sliding-window attention is not supported")
        if float(d.get("partial_rotary_factor", 1.0)) != 1.0:
            raise HFConfigError(f"{where}: partial_rotary_factor {d.get('partial_rotary_factor')} is not supported")
        self.rope_scaling = check_rope_scaling(d.get("rope_scaling"), where)
        for k in ("bos_token_id", "eos_token_id", "pad_token_id"):
            v = d.get(k)
            vs = v if isinstance(v, list) else [v]
            for x in vs:
                if x is not None and not (isinstance(x, int) and 0 <= x < self.vocab_size):
                    raise HFConfigError(f"{where}: {k} {v!r} is not an id in [0, {self.vocab_size})")
        self.bos_token_id = d.get("bos_token_id")
        self.eos_token_id = d.get("eos_token_id")
        self.pad_token_id = d.get("pad_token_id")
        eos = self.eos_token_id[0] if isinstance(self.eos_token_id, list) and self.eos_token_id else self.eos_token_id
        self.eos_id = eos if isinstance(eos, int) else 0
        self.bos_id = self.bos_token_id if isinstance(self.bos_token_id, int) else self.eos_id
        self.pad_id = self.pad_token_id if isinstance(self.pad_token_id, int) else self.eos_id
        if max_len is None:
            max_len = min(self.max_position_embeddings, DEFAULT_MAX_LEN)
        if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 2:
            raise HFConfigError(f"max_len must be an integer >= 2, got {max_len!r}")
        self.max_len = max_len

    # qwen2 always has q/k/v biases (and none on o_proj); llama and qwen3 follow attention_bias
    @property
    def qkv_bias(self):
        return True if self.model_type == "qwen2" else self.attention_bias

    @property
    def o_bias(self):
        return False if self.model_type == "qwen2" else self.attention_bias

    @property
    def qk_norm(self):
        return self.model_type == "qwen3"

    @staticmethod
    def read(d, max_len=None):
        path = os.path.join(d, "config.json")
        if not os.path.isdir(d):
            raise HFConfigError(f"no model directory at {d!r}")
        if not os.path.isfile(path):
            raise HFConfigError(f"{path} is missing (a Hugging Face model directory has config.json and model.safetensors)")
        try:
            with open(path, encoding="utf-8") as f:
                raw = json.load(f)
        except (OSError, ValueError) as e:
            raise HFConfigError(f"{path} is not readable JSON: {e}") from e
        return HFConfig(raw, path, max_len)

    def to_json(self, torch_dtype=None):
        """config.json as transformers writes it (the raw fields kept, the ones used normalised)."""
        out = dict(self.raw)
        out.update({
            "architectures": [ARCHITECTURES[self.model_type]], "model_type": self.model_type,
            "hidden_size": self.hidden_size, "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_hidden_layers, "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads, "head_dim": self.head_dim, "hidden_act": "silu",
            "rms_norm_eps": self.rms_norm_eps, "rope_theta": self.rope_theta, "rope_scaling": self.rope_scaling,
            "max_position_embeddings": self.max_position_embeddings, "tie_word_embeddings": self.tie_word_embeddings,
            "vocab_size": self.vocab_size,
            "bos_token_id": self.bos_token_id, "eos_token_id": self.eos_token_id,
        })
        if self.pad_token_id is not None:
            out["pad_token_id"] = self.pad_token_id
        if self.model_type == "llama":
            out["mlp_bias"] = self.mlp_bias
        if self.model_type != "qwen2":  # qwen2's q/k/v biases are unconditional; its config has no such field
            out["attention_bias"] = self.attention_bias
        if torch_dtype is not None:
            out["torch_dtype"] = torch_dtype
        return out

    def to_dict(self):
        """the config as op_info reports it: config.json's fields plus the learner's max_len and ids"""
        return {**self.to_json(), "max_len": self.max_len, "pad_id": self.pad_id, "bos_id": self.bos_id, "eos_id": self.eos_id}


def check_rope_scaling(rs, where="config.json"):
    """rope_scaling normalised ({rope_type, ...} or None); unknown kinds and missing fields are errors."""
    if rs is None:
        return None
    if not isinstance(rs, dict):
        raise HFConfigError(f"{where}: rope_scaling must be null or an object, got {rs!r}")
    kind = rs.get("rope_type", rs.get("type"))
    if kind not in ROPE_TYPES:
        raise HFConfigError(f"{where}: rope_scaling.rope_type {kind!r} is not supported (one of {', '.join(ROPE_TYPES)})")
    out = {**rs, "rope_type": kind}
    if kind == "default":
        return out
    f = rs.get("factor")
    if not isinstance(f, (int, float)) or isinstance(f, bool) or f < 1.0:
        raise HFConfigError(f"{where}: rope_scaling.factor must be a number >= 1 for rope_type {kind!r}, got {f!r}")
    if kind == "llama3":
        for k in ("low_freq_factor", "high_freq_factor", "original_max_position_embeddings"):
            if not isinstance(rs.get(k), (int, float)):
                raise HFConfigError(f"{where}: rope_scaling.{k} is needed for rope_type 'llama3'")
        if rs["high_freq_factor"] <= rs["low_freq_factor"]:
            raise HFConfigError(f"{where}: rope_scaling.high_freq_factor must be above low_freq_factor")
    return out


# -- the functions the layers use (hf_probe runs these very ones) ----------------------------
def rms_norm(x, weight, eps):
    """HF's RMSNorm: normalised in float32, cast back to x's dtype, then times the weight."""
    dt = x.dtype
    h = x.to(torch.float32)
    var = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(var + eps)
    return weight * h.to(dt)


def rope_inv_freq(head_dim, theta, scaling=None, max_position=2048, seq_len=None):
    """(inv_freq [head_dim/2] float32, attention scaling) as transformers' modeling_rope_utils
    computes them for the rope_type; seq_len (positions seen + 1) matters only to 'dynamic'."""
    dim = head_dim

    def default(base):
        return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))

    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if scaling is None or kind == "default":
        return default(theta), 1.0
    factor = float(scaling["factor"])
    if kind == "linear":
        return default(theta) / factor, 1.0
    if kind == "dynamic":
        orig = int(scaling.get("original_max_position_embeddings") or max_position)
        sl = seq_len if seq_len is not None and seq_len > orig else orig
        base = theta * ((factor * sl / orig) - (factor - 1)) ** (dim / (dim - 2))
        return default(base), 1.0
    if kind == "llama3":
        inv = default(theta)
        low, high = float(scaling["low_freq_factor"]), float(scaling["high_freq_factor"])
        old = float(scaling["original_max_position_embeddings"])
        low_wl, high_wl = old / low, old / high
        wavelen = 2 * math.pi / inv
        inv_l = torch.where(wavelen > low_wl, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
        medium = ~(wavelen < high_wl) * ~(wavelen > low_wl)
        return torch.where(medium, smoothed, inv_l), 1.0
    if kind == "yarn":
        orig = int(scaling.get("original_max_position_embeddings") or max_position)
        att = scaling.get("attention_factor")
        mscale, mscale_all = scaling.get("mscale"), scaling.get("mscale_all_dim")

        def get_mscale(s, m=1.0):
            return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0

        if att is None:
            att = get_mscale(factor, mscale) / get_mscale(factor, mscale_all) if mscale and mscale_all else get_mscale(factor)
        beta_fast = scaling.get("beta_fast") or 32
        beta_slow = scaling.get("beta_slow") or 1

        def corr_dim(rot):
            return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(theta))

        lo, hi = corr_dim(beta_fast), corr_dim(beta_slow)
        if scaling.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, dim - 1)
        if lo == hi:
            hi += 0.001
        ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - lo) / (hi - lo), 0, 1)
        pos_freqs = theta ** (torch.arange(0, dim, 2).float() / dim)
        extra, inter = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
        ext_factor = 1 - ramp
        return inter * (1 - ext_factor) + extra * ext_factor, float(att)
    raise ValueError(f"rope_type {kind!r} is not supported")


def rope_cos_sin(positions, head_dim, theta, scaling=None, max_position=2048, dtype=torch.float32):
    """cos, sin [..., T, head_dim] for integer positions [..., T] (HF: float32 angles, times the
    attention scaling, cast to the activations' dtype)"""
    seq_len = int(positions.max()) + 1 if positions.numel() else 0
    inv, att = rope_inv_freq(head_dim, theta, scaling, max_position, seq_len)
    freqs = positions.to(torch.float32).unsqueeze(-1) * inv.to(positions.device)
    emb = torch.cat([freqs, freqs], dim=-1)
    return (emb.cos() * att).to(dtype), (emb.sin() * att).to(dtype)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def apply_rope(x, cos, sin):
    """x [B, heads, T, d] rotated by cos/sin [B, T, d] (broadcast over heads)"""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return x * cos + rotate_half(x) * sin


def repeat_kv(x, n_rep):
    """[B, kv_heads, S, d] -> [B, kv_heads * n_rep, S, d]: each key/value head serves n_rep query heads"""
    if n_rep == 1:
        return x
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


def attention(q, k, v, causal=True, allow=None):
    """Grouped-query attention: q [B, H, T, d], k/v [B, KV, S, d]. causal: query t sees keys up to
    t (T == S); otherwise allow [B, 1, T, S] (bool) says which keys each query sees."""
    k = repeat_kv(k, q.shape[1] // k.shape[1])
    v = repeat_kv(v, q.shape[1] // v.shape[1])
    if HAS_SDPA:
        if causal:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allow)
    scale = q.shape[-1] ** -0.5
    w = torch.matmul(q, k.transpose(2, 3)) * scale
    if causal:
        t, s = w.shape[-2], w.shape[-1]
        allow = torch.ones((t, s), dtype=torch.bool, device=q.device).tril(s - t)
    if allow is not None:
        w = w.masked_fill(~allow, torch.finfo(w.dtype).min)
    w = torch.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(w, v)


# -- modules ---------------------------------------------------------------------------------
class RMSNorm(nn.Module):
    def __init__(self, n, eps, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n, device=device, dtype=dtype))
        self.eps = eps

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


class Switch:
    """Whether the LoRA adapters act (shared by every LoRALinear of a model; not a module)."""

    def __init__(self):
        self.enabled = True


class LoRALinear(nn.Module):
    """A Linear with a low-rank update, as PEFT's LoRA: y = W x + b + B(A(dropout(x))) * alpha / r.
    weight/bias keep the base layer's names (the HF state dict is unchanged); lora_A is
    kaiming-uniform (a = sqrt(5)), lora_B zeros, so at init the output is the base's exactly. The
    adapters are float32 whatever the base's dtype (PEFT's autocast_adapter_dtype)."""

    def __init__(self, base, r, alpha, dropout, switch):
        super().__init__()
        self.weight = base.weight
        self.bias = base.bias
        self.in_features, self.out_features = base.in_features, base.out_features
        self.lora_A = nn.Linear(self.in_features, r, bias=False, dtype=torch.float32)
        self.lora_B = nn.Linear(r, self.out_features, bias=False, dtype=torch.float32)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.switch = switch

    def forward(self, x):
        y = F.linear(x, self.weight, self.bias)
        if not self.switch.enabled:
            return y
        a = self.lora_A.weight
        return (y + self.lora_B(self.lora_A(self.drop(x.to(a.dtype)))) * self.scaling).to(y.dtype)


class Attention(nn.Module):
    def __init__(self, c, device=None, dtype=None):
        super().__init__()
        self.c = c
        h, kv, d = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        kw = {"device": device, "dtype": dtype}
        self.q_proj = nn.Linear(c.hidden_size, h * d, bias=c.qkv_bias, **kw)
        self.k_proj = nn.Linear(c.hidden_size, kv * d, bias=c.qkv_bias, **kw)
        self.v_proj = nn.Linear(c.hidden_size, kv * d, bias=c.qkv_bias, **kw)
        self.o_proj = nn.Linear(h * d, c.hidden_size, bias=c.o_bias, **kw)
        if c.qk_norm:
            self.q_norm = RMSNorm(d, c.rms_norm_eps, **kw)
            self.k_norm = RMSNorm(d, c.rms_norm_eps, **kw)

    def project(self, x, cos, sin):
        """q [B, H, T, d], k and v [B, KV, T, d] of x [B, T, hidden], rotated"""
        b, t, _ = x.shape
        c = self.c
        q = self.q_proj(x).view(b, t, c.num_attention_heads, c.head_dim)
        k = self.k_proj(x).view(b, t, c.num_key_value_heads, c.head_dim)
        v = self.v_proj(x).view(b, t, c.num_key_value_heads, c.head_dim).transpose(1, 2)
        if c.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v

    def out(self, y):
        b, h, t, d = y.shape
        return self.o_proj(y.transpose(1, 2).reshape(b, t, h * d))


class MLP(nn.Module):
    def __init__(self, c, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype, "bias": c.mlp_bias}
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, **kw)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, **kw)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, **kw)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, c, device=None, dtype=None):
        super().__init__()
        self.self_attn = Attention(c, device, dtype)
        self.mlp = MLP(c, device, dtype)
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps, device, dtype)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps, device, dtype)

    def forward(self, x, cos, sin, kv_out=None):
        q, k, v = self.self_attn.project(self.input_layernorm(x), cos, sin)
        if kv_out is not None:
            kv_out.append((k, v))
        x = x + self.self_attn.out(attention(q, k, v, causal=True))
        return x + self.mlp(self.post_attention_layernorm(x))

    def step(self, x, cos, sin, cache_k, cache_v, rows, pos, allow):
        """one new token per row: x [n, 1, hidden] at positions pos [n]; its key and value are written
        into the session cache (rows [n] of cache_k/v [R, KV, M, d]) at slot pos, and the query
        attends to slots allow [n, 1, 1, L] of its row"""
        q, k, v = self.self_attn.project(self.input_layernorm(x), cos, sin)
        cache_k[rows, :, pos] = k[:, :, 0]
        cache_v[rows, :, pos] = v[:, :, 0]
        ln = allow.shape[-1]
        keys = cache_k.index_select(0, rows)[:, :, :ln]
        vals = cache_v.index_select(0, rows)[:, :, :ln]
        x = x + self.self_attn.out(attention(q, keys, vals, causal=False, allow=allow))
        return x + self.mlp(self.post_attention_layernorm(x))


class Backbone(nn.Module):
    def __init__(self, c, device=None, dtype=None):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size, device=device, dtype=dtype)
        self.layers = nn.ModuleList([DecoderLayer(c, device, dtype) for _ in range(c.num_hidden_layers)])
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps, device, dtype)


class HFCausalLM(nn.Module):
    """LlamaForCausalLM / Qwen2ForCausalLM / Qwen3ForCausalLM: state_dict() has Hugging Face's
    names (plus `.lora_A.weight`/`.lora_B.weight` under each adapted Linear once LoRA is on)."""

    def __init__(self, c, device=None, dtype=None):
        super().__init__()
        self.config = c
        self.model = Backbone(c, device, dtype)
        if not c.tie_word_embeddings:
            self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False, device=device, dtype=dtype)
        self.switch = Switch()
        self.lora = None  # {r, alpha, dropout, targets} once add_lora ran

    # the interface learner/server.py uses on its models
    def rope(self, positions, dtype):
        c = self.config
        return rope_cos_sin(positions, c.head_dim, c.rope_theta, c.rope_scaling, c.max_position_embeddings, dtype)

    def hidden(self, input_ids, kv_out=None):
        """final-normed hidden states [B, T, hidden] of input_ids [B, T] at positions 0..T-1 (causal:
        right padding never reaches the real positions); kv_out collects each layer's (k, v)"""
        t = input_ids.shape[1]
        x = self.model.embed_tokens(input_ids)
        cos, sin = self.rope(torch.arange(t, device=input_ids.device).unsqueeze(0), x.dtype)
        for layer in self.model.layers:
            x = layer(x, cos, sin, kv_out)
        return self.model.norm(x)

    def head(self, h):
        if self.config.tie_word_embeddings:
            return F.linear(h, self.model.embed_tokens.weight)
        return self.lm_head(h)

    def forward(self, input_ids):
        return self.head(self.hidden(input_ids))

    def num_params(self):
        return sum(p.numel() for p in self.parameters())

    def trainable_params(self):
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    @contextlib.contextmanager
    def adapters_off(self):
        """the base model: every LoRA adapter skipped (no copy of the weights)"""
        was = self.switch.enabled
        self.switch.enabled = False
        try:
            yield
        finally:
            self.switch.enabled = was

    # key/value-cached decoding (learner/server.py's hf_decode_* ops)
    def prefill(self, ids):
        """ids [1, T] -> logits at the last position [V] and per layer (k, v) [KV, T, d]"""
        kv = []
        h = self.hidden(ids, kv)
        return self.head(h[:, -1])[0], [(k[0], v[0]) for k, v in kv]

    def decode_step(self, ids, pos, caches, rows):
        """ids [n] at positions pos [n] (rows [n] of the cache) -> logits [n, V]; each layer's new
        key/value written into caches[i] = (K [R, KV, M, d], V [R, KV, M, d])"""
        x = self.model.embed_tokens(ids.unsqueeze(1))
        cos, sin = self.rope(pos.unsqueeze(1), x.dtype)
        ln = int(pos.max()) + 1
        allow = (torch.arange(ln, device=ids.device).unsqueeze(0) <= pos.unsqueeze(1)).view(-1, 1, 1, ln)
        for layer, (ck, cv) in zip(self.model.layers, caches):
            x = layer.step(x, cos, sin, ck, cv, rows, pos, allow)
        return self.head(self.model.norm(x))[:, 0]

    # LoRA
    def add_lora(self, r, alpha, dropout, targets, seed):
        """Wrap the target Linears of every layer in LoRALinear (adapters initialised on the CPU from
        `seed`, so every device starts from the same adapter); freeze the base."""
        for p in self.parameters():
            p.requires_grad_(False)
        g = torch.random.fork_rng(devices=[])
        with g:
            torch.manual_seed(seed)
            for layer in self.model.layers:
                for parent in (layer.self_attn, layer.mlp):
                    for name in targets:
                        base = getattr(parent, name, None)
                        if isinstance(base, nn.Linear):
                            lin = LoRALinear(base, r, alpha, dropout, self.switch)
                            lin.lora_A.to(base.weight.device)
                            lin.lora_B.to(base.weight.device)
                            setattr(parent, name, lin)
        self.lora = {"r": r, "alpha": alpha, "dropout": dropout, "targets": list(targets)}

    def lora_modules(self):
        return [(n, m) for n, m in self.named_modules() if isinstance(m, LoRALinear)]

    def hf_state(self):
        """{HF name: tensor} of the base weights (no adapters; no lm_head when tied)"""
        return {k: v for k, v in self.state_dict().items() if ".lora_A." not in k and ".lora_B." not in k}

    def trainable_state(self):
        """{name: tensor} of what training changes: the adapters with LoRA, every weight without"""
        if self.lora is not None:
            return {k: v for k, v in self.state_dict().items() if ".lora_A." in k or ".lora_B." in k}
        return self.hf_state()


PEFT_PREFIX = "base_model.model."


def peft_key(name):
    """our adapter name -> PEFT's saved key (base_model.model.<module path>.lora_A.weight)"""
    return PEFT_PREFIX + name


def unpeft_key(key):
    return key[len(PEFT_PREFIX):] if key.startswith(PEFT_PREFIX) else key


def param_shapes(c):
    """{HF name: shape} of every tensor of the checkpoint, in the model's order"""
    h, kv, d, i = c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.intermediate_size
    out = {"model.embed_tokens.weight": (c.vocab_size, c.hidden_size)}
    for n in range(c.num_hidden_layers):
        p = f"model.layers.{n}."
        out[p + "self_attn.q_proj.weight"] = (h * d, c.hidden_size)
        if c.qkv_bias:
            out[p + "self_attn.q_proj.bias"] = (h * d,)
        out[p + "self_attn.k_proj.weight"] = (kv * d, c.hidden_size)
        if c.qkv_bias:
            out[p + "self_attn.k_proj.bias"] = (kv * d,)
        out[p + "self_attn.v_proj.weight"] = (kv * d, c.hidden_size)
        if c.qkv_bias:
            out[p + "self_attn.v_proj.bias"] = (kv * d,)
        out[p + "self_attn.o_proj.weight"] = (c.hidden_size, h * d)
        if c.o_bias:
            out[p + "self_attn.o_proj.bias"] = (c.hidden_size,)
        if c.qk_norm:
            out[p + "self_attn.q_norm.weight"] = (d,)
            out[p + "self_attn.k_norm.weight"] = (d,)
        for nm, shp in (("gate_proj", (i, c.hidden_size)), ("up_proj", (i, c.hidden_size)), ("down_proj", (c.hidden_size, i))):
            out[p + f"mlp.{nm}.weight"] = shp
            if c.mlp_bias:
                out[p + f"mlp.{nm}.bias"] = (shp[0],)
        out[p + "input_layernorm.weight"] = (c.hidden_size,)
        out[p + "post_attention_layernorm.weight"] = (c.hidden_size,)
    out["model.norm.weight"] = (c.hidden_size,)
    if not c.tie_word_embeddings:
        out["lm_head.weight"] = (c.vocab_size, c.hidden_size)
    return out


def is_norm(name):
    return name.endswith("norm.weight")


def random_weights(c, seed, dtype=torch.float32):
    """A seeded random init: every matrix and bias normal(0, 0.02), every norm weight ones (drawn
    in float32 in param_shapes' order, then cast)."""
    g = torch.Generator().manual_seed(int(seed))
    out = {}
    for name, shape in param_shapes(c).items():
        if is_norm(name):
            t = torch.ones(shape, dtype=torch.float32)
        else:
            t = torch.empty(shape, dtype=torch.float32).normal_(0.0, 0.02, generator=g)
        out[name] = t.to(dtype)
    return out


def load_model(d, device, dtype, max_len=None):
    """(HFCausalLM with the directory's weights on device in dtype, its HFConfig); errors name the
    file and the tensor or field"""
    c = HFConfig.read(d, max_len)
    model = HFCausalLM(c, device="meta", dtype=dtype).to_empty(device=device)
    shapes = param_shapes(c)
    params = dict(model.state_dict(keep_vars=True))
    with CheckpointReader(d) as rd:
        have = set(rd.names)
        for name, shape in shapes.items():
            if name not in have:
                src = sorted(set(rd.where.values()))
                raise SafetensorsError(f"{', '.join(src)} lacks tensor {name!r} (config.json: model_type {c.model_type}, {c.num_hidden_layers} layers{', tied embeddings' if c.tie_word_embeddings else ''})")
            got = tuple(rd.shape(name))
            if got != tuple(shape):
                raise SafetensorsError(f"{rd.where[name]}: tensor {name!r} has shape {list(got)}, config.json implies {list(shape)}")
        extra = sorted(n for n in have - set(shapes) if not n.endswith("rotary_emb.inv_freq") and not (n == "lm_head.weight" and c.tie_word_embeddings))
        if extra:
            raise SafetensorsError(f"{rd.where[extra[0]]} has tensors config.json does not account for: {', '.join(extra[:5])}{' …' if len(extra) > 5 else ''} (model_type {c.model_type}: is it the right architecture?)")
        with torch.no_grad():
            for name in shapes:
                params[name].copy_(rd.get(name))
    return model, c


def write_random(d, c, seed, dtype_name="float32"):
    """config.json + model.safetensors of a random model; returns (params, files)"""
    from safetensors_io import save_file

    os.makedirs(d, exist_ok=True)
    w = random_weights(c, seed, DTYPES[dtype_name])
    with open(os.path.join(d, "config.json"), "w", encoding="utf-8") as f:
        json.dump(c.to_json(dtype_name), f, indent=2)
    save_file(w, os.path.join(d, "model.safetensors"), {"format": "pt"})
    return sum(t.numel() for t in w.values()), ["config.json", "model.safetensors"]


PRESETS = {
    "tiny": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "rope_theta": 10000.0, "max_position_embeddings": 2048, "tie_word_embeddings": True, "rms_norm_eps": 1e-6},
    # Qwen2.5-0.5B's shape
    "0.5b": {"hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "head_dim": 64, "rope_theta": 1000000.0, "max_position_embeddings": 32768, "tie_word_embeddings": True, "rms_norm_eps": 1e-6},
}


def preset_config(arch, size, vocab_size, bos, eos, pad=None, tie=None, overrides=None):
    if arch not in ARCHITECTURES:
        raise HFConfigError(f"args.arch must be one of {', '.join(ARCHITECTURES)}, got {arch!r}")
    if size not in PRESETS:
        raise HFConfigError(f"args.size must be one of {', '.join(PRESETS)}, got {size!r}")
    raw = {"architectures": [ARCHITECTURES[arch]], "model_type": arch, **PRESETS[size], "vocab_size": vocab_size, "hidden_act": "silu", "rope_scaling": None, "bos_token_id": bos, "eos_token_id": eos, "initializer_range": 0.02, "use_cache": True, "attention_dropout": 0.0}
    if arch == "llama":
        raw["mlp_bias"] = False
    if arch != "qwen2":
        raw["attention_bias"] = False
    if arch != "llama":
        raw["use_sliding_window"] = False
        raw["max_window_layers"] = raw["num_hidden_layers"]
    if pad is not None:
        raw["pad_token_id"] = pad
    if tie is not None:
        raw["tie_word_embeddings"] = bool(tie)
    for k, v in (overrides or {}).items():
        if k not in CONFIG_FIELDS:
            raise HFConfigError(f"args.overrides.{k} is not a config field this model reads ({', '.join(CONFIG_FIELDS)})")
        raw[k] = v
    return HFConfig(raw, "the generated config")
