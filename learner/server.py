"""Learner server: the engineer's torch side, spoken to over stdio.

Frames: 4-byte big-endian length + a msgpack map. Request {id, op, args}; reply
{id, ok: true, result} or {id, ok: false, error: {type, message, traceback}}. On start the
server sends an unsolicited hello (id 0). See docs/LEARNER.md.
"""
import functools
import contextlib
import copy
import json
import os
import shutil
import struct
import sys
import time
import traceback
import warnings

# torch 1.13's ONNX exporter warns on every export of the decode graph that it infers no shape for
# its constants; the graph is checked by ONNX Runtime and the tests, so the line is only noise in
# the user's output
warnings.filterwarnings("ignore", message=r"The shape inference of prim::Constant type is missing", category=UserWarning)

# a missing dependency is told to the parent as one line on stderr and exit code 3
_APT = {"torch": "python3-torch", "numpy": "python3-numpy", "msgpack": "python3-msgpack", "onnx": "python3-onnx"}
_missing = []
for _mod in ("torch", "numpy", "msgpack", "onnx"):
    try:
        __import__(_mod)
    except Exception as _e:  # ImportError, or a broken install raising something else
        _missing.append((_mod, repr(_e)))
if _missing:
    sys.stderr.write("HR1_LEARNER_MISSING " + " ".join(m for m, _ in _missing) + " | " + "; ".join(e for _, e in _missing) + "\n")
    sys.stderr.flush()
    sys.exit(3)

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import msgpack  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpo  # noqa: E402
import hf as hflib  # noqa: E402
import safetensors_io  # noqa: E402
from model import DecodeGraph, Engineer, ModelConfig  # noqa: E402
from onnx_fp16 import compact_fp16  # noqa: E402

PROTOCOL_VERSION = 1
# bumped when the decode graph's inputs, outputs or numerics change (learner/onnx.ts checks it)
DECODE_GRAPH_VERSION = 2
MAX_FRAME = 1 << 30

# the protocol owns stdout; anything a library prints goes to stderr
_OUT = sys.stdout.buffer
_IN = sys.stdin.buffer
sys.stdout = sys.stderr


@functools.lru_cache(maxsize=1)
def _openblas():
    """torch's OpenBLAS library, or None when its BLAS is another (looked up once per process)"""
    import ctypes
    # a wheel with MKL (BLAS_INFO=mkl) does not use the system's libblas even where one is installed
    if "BLAS_INFO=mkl" in torch.__config__.show():
        return None
    for name in ("libblas.so.3", "libopenblas.so.0"):
        try:
            lib = ctypes.CDLL(name)
            lib.openblas_get_corename
        except (OSError, AttributeError):
            continue
        return lib
    return None


def blas_core():
    """OpenBLAS's kernel family in this process (e.g. "Haswell"), or None when torch's BLAS is not OpenBLAS."""
    import ctypes
    lib = _openblas()
    if lib is None:
        return None
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib.openblas_get_corename().decode()


def blas_threads():
    """OpenBLAS's thread count in this process (its own pool, apart from torch.set_num_threads), or None."""
    lib = _openblas()
    return None if lib is None else int(lib.openblas_get_num_threads())


class RequestError(Exception):
    """A bad request: the caller's fault, named by the field."""


class CheckpointError(Exception):
    """A checkpoint that cannot be read or does not fit."""


DEFAULT_OPTIM = {"lr": 3e-4, "weight_decay": 0.0, "beta1": 0.9, "beta2": 0.999, "grad_clip": 1.0}
DEFAULT_GRPO = {"eps_low": 0.2, "eps_high": 0.2, "clip_c": 3.0, "kl_coef": 0.0, "update_iters": 1, "temperature": 1.0, "micro_batch_size": 0, "std_floor": 0.0}


class Learner:
    def __init__(self):
        self.model = None
        self.ref = None
        self.opt = None
        self.config = None
        self.optim = None
        self.step = 0
        self.seed = 0
        self.device = torch.device("cpu")
        # the Hugging Face model's options ({dir, lora, full, dtype, max_len}) while one is loaded (hf_load)
        self.hf = None
        # hf_decode_* sessions: id -> DecodeSession
        self.sessions = {}
        self.next_session = 1

    # -- helpers ---------------------------------------------------------------------------
    def need_model(self):
        if self.model is None:
            raise RequestError("no model yet: call init (or load a checkpoint) first")

    @staticmethod
    def _device(device):
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cuda" and not torch.cuda.is_available():
            raise RequestError("device 'cuda' asked for but torch sees no GPU; use 'auto' or 'cpu'")
        dev = torch.device(device)
        if dev.type == "cpu":
            torch.set_num_threads(int(os.environ.get("HR1_TORCH_THREADS", "1")))
        torch.use_deterministic_algorithms(True, warn_only=True)
        return dev

    @staticmethod
    def _optim(optim):
        o = {**DEFAULT_OPTIM, **(optim or {})}
        unknown = sorted(set(o) - set(DEFAULT_OPTIM))
        if unknown:
            raise RequestError(f"unknown optim keys: {', '.join(unknown)}")
        return o

    def _setup(self, config, optim, seed, device):
        self.device = self._device(device)
        torch.manual_seed(seed)
        self.seed = seed
        self.config = config
        self.optim = self._optim(optim)
        self.hf = None
        self.sessions = {}
        self.model = Engineer(config).to(self.device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=self.optim["lr"], betas=(self.optim["beta1"], self.optim["beta2"]), weight_decay=self.optim["weight_decay"])
        self.ref = None
        self.step = 0

    def batch(self, prompts, completions, prompt_targets=None):
        """Pad prompt+completion rows; return input_ids, gather index and mask of completion tokens.

        prompt_targets (SFT only): per row, positions inside the prompt whose tokens are labels too
        (e.g. the earlier actions of a behaviour-cloning window); each j predicts token j from j-1.
        """
        if not isinstance(prompts, list) or not isinstance(completions, list) or len(prompts) != len(completions):
            raise RequestError("args.prompts and args.completions must be lists of the same length")
        if not prompts:
            raise RequestError("args.prompts must not be empty")
        c = self.config
        seqs, starts, lens = [], [], []
        for i, (p, q) in enumerate(zip(prompts, completions)):
            if len(p) < 1:
                raise RequestError(f"args.prompts[{i}] is empty; start every prompt with at least one token (e.g. BOS {c.bos_id})")
            s = list(p) + list(q)
            if len(s) > c.max_len:
                raise RequestError(f"sequence {i} has {len(s)} tokens, more than config.max_len={c.max_len}")
            for j, tok in enumerate(s):
                if not (isinstance(tok, int) and 0 <= tok < c.vocab_size):
                    raise RequestError(f"token {tok!r} at sequence {i}, position {j} is not an id in [0, {c.vocab_size})")
            seqs.append(s)
            starts.append(len(p))
            lens.append(len(q))
        extra = [[] for _ in seqs]
        if prompt_targets is not None:
            if not isinstance(prompt_targets, list) or len(prompt_targets) != len(seqs):
                raise RequestError("args.prompt_targets must be a list with one list of positions per prompt")
            for i, ps in enumerate(prompt_targets):
                if not isinstance(ps, list) or not all(isinstance(j, int) and 1 <= j < starts[i] for j in ps):
                    raise RequestError(f"args.prompt_targets[{i}] must list positions in [1, {starts[i]}) of prompt {i}")
                extra[i] = sorted(set(ps))
        t = max(len(s) for s in seqs)
        tc = max(max(len(e) + n for e, n in zip(extra, lens)), 1)
        ids = torch.full((len(seqs), t), c.pad_id, dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
        # logits at position j predict token j+1: completion token k sits at start+k
        idx = torch.zeros((len(seqs), tc), dtype=torch.long)
        mask = torch.zeros((len(seqs), tc), dtype=torch.float32)
        for i, (st, n) in enumerate(zip(starts, lens)):
            pos = [j - 1 for j in extra[i]] + list(range(st - 1, st - 1 + n))
            if pos:
                idx[i, : len(pos)] = torch.tensor(pos, dtype=torch.long)
                mask[i, : len(pos)] = 1.0
        return ids.to(self.device), idx.to(self.device), mask.to(self.device), lens

    def token_logprobs(self, model, ids, idx, temperature=1.0, with_entropy=False):
        # the vocabulary projection runs only at the gathered positions, not at every position
        h = model.hidden(ids)[:, :-1, :] if ids.shape[1] > 1 else model.hidden(ids)[:, :0, :]
        targets = ids[:, 1:]
        safe_idx = idx.clamp(max=max(targets.shape[1] - 1, 0))
        h_rows = torch.gather(h, 1, safe_idx.unsqueeze(-1).expand(-1, -1, h.shape[-1]))
        logits = model.head(h_rows)
        if temperature != 1.0:
            logits = logits / temperature
        lp_rows = torch.log_softmax(logits.float(), dim=-1)
        tok = torch.gather(targets, 1, safe_idx)
        lp = torch.gather(lp_rows, 2, tok.unsqueeze(-1)).squeeze(-1)
        ent = None
        if with_entropy:
            ent = -(lp_rows.exp() * lp_rows).sum(-1)
        return lp, ent

    def pad_rows(self, rows, lens, name):
        if rows is None:
            return None
        if not isinstance(rows, list) or len(rows) != len(lens):
            raise RequestError(f"args.{name} must be a list with one row per sample")
        tc = max(max(lens), 1)
        out = torch.zeros((len(lens), tc), dtype=torch.float32)
        for i, (row, n) in enumerate(zip(rows, lens)):
            if len(row) != n:
                raise RequestError(f"args.{name}[{i}] has {len(row)} values for a completion of {n} tokens")
            if n:
                out[i, :n] = torch.tensor(row, dtype=torch.float32)
        return out.to(self.device)

    def micro_slices(self, n, mbs):
        mbs = n if not mbs or mbs <= 0 else mbs
        return [slice(i, min(i + mbs, n)) for i in range(0, n, mbs)]

    def apply_grads(self, lr):
        if lr is not None:
            for g in self.opt.param_groups:
                g["lr"] = lr
        gn = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.optim["grad_clip"]) if self.optim["grad_clip"] > 0 else torch.tensor(0.0)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.step += 1
        return float(gn)

    # -- ops ------------------------------------------------------------------------------
    def op_init(self, a):
        try:
            config = ModelConfig.from_dict(a.get("config") or {})
        except (TypeError, ValueError) as e:
            raise RequestError(str(e))
        self._setup(config, a.get("optim"), int(a.get("seed", 0)), a.get("device", "auto"))
        return self.op_info({})

    def op_info(self, a):
        info = {
            "protocol": PROTOCOL_VERSION,
            "torch": torch.__version__,
            "cuda": torch.cuda.is_available(),
            "device": str(self.device),
            "threads": torch.get_num_threads(),
            "pid": os.getpid(),
            "initialized": self.model is not None,
            "params": self.model.num_params() if self.model is not None else 0,
            "step": self.step,
            "seed": self.seed,
            "config": self.config.to_dict() if self.config else None,
            "optim": self.optim,
            "has_reference": self.ref is not None,
            "blas": blas_core(),
            "blas_threads": blas_threads(),
        }
        if self.hf is not None:
            info["hf"] = {**self.hf, "arch": self.config.model_type, "trainable_params": self.model.trainable_params()}
        return info

    def op_sft_step(self, a):
        self.need_model()
        t0 = time.perf_counter()
        ids, idx, mask, lens = self.batch(a.get("prompts"), a.get("completions"), a.get("prompt_targets"))
        total = float(mask.sum())
        if total == 0:
            raise RequestError("sft_step needs at least one completion token")
        self.model.train()
        loss_sum = 0.0
        for sl in self.micro_slices(ids.shape[0], a.get("micro_batch_size", 0)):
            lp, _ = self.token_logprobs(self.model, ids[sl], idx[sl])
            loss = -(lp * mask[sl]).sum() / total
            loss.backward()
            loss_sum += float(loss)
        gn = self.apply_grads(a.get("lr"))
        return {"loss": loss_sum, "tokens": int(total), "grad_norm": gn, "step": self.step, "ms": (time.perf_counter() - t0) * 1e3}

    def op_logprobs(self, a):
        self.need_model()
        ids, idx, mask, lens = self.batch(a.get("prompts"), a.get("completions"))
        self.model.eval()
        with torch.no_grad():
            lp, ent = self.token_logprobs(self.model, ids, idx, float(a.get("temperature", 1.0)), with_entropy=True)
        lp, ent = lp.cpu(), ent.cpu()
        return {"logprobs": [lp[i, :n].tolist() for i, n in enumerate(lens)], "entropy": [ent[i, :n].tolist() for i, n in enumerate(lens)]}

    def op_set_reference(self, a):
        self.need_model()
        if self.hf is not None:
            self.ref = self._hf_reference()
            return {"step": self.step}
        self.ref = Engineer(self.config).to(self.device)
        self.ref.load_state_dict(self.model.state_dict())
        self.ref.eval()
        for p in self.ref.parameters():
            p.requires_grad_(False)
        return {"step": self.step}

    def op_grpo_step(self, a):
        self.need_model()
        t0 = time.perf_counter()
        cfg = {**DEFAULT_GRPO, **(a.get("config") or {})}
        unknown = sorted(set(cfg) - set(DEFAULT_GRPO) - {"lr"})
        if unknown:
            raise RequestError(f"unknown grpo config keys: {', '.join(unknown)}")
        ids, idx, mask, lens = self.batch(a.get("prompts"), a.get("completions"))
        n = ids.shape[0]
        rewards, groups = a.get("rewards"), a.get("group_ids")
        if not isinstance(rewards, list) or len(rewards) != n:
            raise RequestError("args.rewards must have one number per sample")
        if not isinstance(groups, list) or len(groups) != n:
            raise RequestError("args.group_ids must have one id per sample")
        temp = float(cfg["temperature"])
        adv = grpo.group_advantages(torch.tensor(rewards, dtype=torch.float64), groups, float(cfg["std_floor"])).to(torch.float32).to(self.device)
        old = self.pad_rows(a.get("old_logprobs"), lens, "old_logprobs")
        if old is None:
            # on-policy: the behaviour policy is the current one
            self.model.eval()
            with torch.no_grad():
                old, _ = self.token_logprobs(self.model, ids, idx, temp)
        ref = self.pad_rows(a.get("ref_logprobs"), lens, "ref_logprobs")
        kl_coef = float(cfg["kl_coef"])
        if kl_coef > 0 and ref is None:
            if self.ref is None:
                raise RequestError("config.kl_coef > 0 needs a reference policy: call set_reference first or pass args.ref_logprobs")
            with torch.no_grad():
                ref, _ = self.token_logprobs(self.ref, ids, idx, temp)
        total = float(mask.sum())
        if total == 0:
            raise RequestError("grpo_step needs at least one completion token")
        iters = []
        self.model.train()
        for _ in range(int(cfg["update_iters"])):
            m = {"loss": 0.0, "pg_loss": 0.0, "kl": 0.0, "clip_frac": 0.0, "dual_clip_frac": 0.0, "entropy": 0.0, "ratio_mean": 0.0}
            for sl in self.micro_slices(n, cfg["micro_batch_size"]):
                lp, ent = self.token_logprobs(self.model, ids[sl], idx[sl], temp, with_entropy=True)
                mk = mask[sl]
                loss_tok, r, clipped, dual = grpo.policy_loss_per_token(lp, old[sl], adv[sl][:, None], cfg["eps_low"], cfg["eps_high"], cfg["clip_c"])
                pg = grpo.token_mean(loss_tok, mk, total)
                loss = pg
                if ref is not None:
                    kl = grpo.token_mean(grpo.k3_kl(lp, ref[sl]), mk, total)
                    loss = loss + kl_coef * kl
                    m["kl"] += float(kl)
                loss.backward()
                m["loss"] += float(loss)
                m["pg_loss"] += float(pg)
                m["clip_frac"] += float(grpo.token_mean(clipped, mk, total))
                m["dual_clip_frac"] += float(grpo.token_mean(dual, mk, total))
                m["entropy"] += float(grpo.token_mean(ent.detach(), mk, total))
                m["ratio_mean"] += float(grpo.token_mean(r.detach(), mk, total))
            m["grad_norm"] = self.apply_grads(cfg.get("lr"))
            iters.append(m)
        return {"iters": iters, "advantages": adv.cpu().tolist(), "tokens": int(total), "step": self.step, "ms": (time.perf_counter() - t0) * 1e3}

    def op_grpo_math(self, a):
        return grpo.grpo_math(
            a["logprobs"], a["old_logprobs"], a["rewards"], a["group_ids"],
            eps_low=a.get("eps_low", 0.2), eps_high=a.get("eps_high", 0.2), clip_c=a.get("clip_c", 3.0),
            kl_coef=a.get("kl_coef", 0.0), ref_logprobs=a.get("ref_logprobs"), std_floor=a.get("std_floor", 0.0),
        )

    def op_export(self, a):
        """Write the model as ONNX. graph 'decode' (the default): the incremental graph with a
        key/value cache (Engineer.decode; inputs input_ids, pos, logit_pos, past_k_i, past_v_i;
        outputs logits, k_i, v_i). graph 'full': input_ids -> logits at every position, with no
        cache (the path before the cache; benchmarks compare against it)."""
        self.need_model()
        if self.hf is not None:
            raise RequestError(f"export writes the built-in engineer as ONNX; this learner holds a Hugging Face {self.config.model_type} model (hf_load), and hf engineers are sampled by the learner's hf sampler (hf_decode_start/step/end), not exported")
        path = a.get("path")
        if not isinstance(path, str) or not path:
            raise RequestError("args.path must be a file path for the .onnx file")
        graph = a.get("graph", "decode")
        if graph not in ("decode", "full"):
            raise RequestError(f"args.graph must be 'decode' or 'full', got {graph!r}")
        opset = int(a.get("opset", 17))
        weights = a.get("weights", "fp32")
        if weights not in ("fp32", "fp16"):
            raise RequestError(f"args.weights must be 'fp32' or 'fp16', got {weights!r}")
        t0 = time.perf_counter()
        self.model.eval()
        c = self.config
        tmp = path + ".tmp"
        with torch.no_grad():
            if graph == "full":
                t = min(8, c.max_len)
                dummy = torch.full((1, t), c.bos_id, dtype=torch.long, device=self.device)
                torch.onnx.export(
                    self.model, (dummy,), tmp, input_names=["input_ids"], output_names=["logits"],
                    dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}},
                    opset_version=opset, do_constant_folding=True,
                )
            else:
                n, h, dh = c.n_layers, c.n_heads, c.d_model // c.n_heads
                b, t, past = 2, 3, 7
                ids = torch.full((b, t), c.bos_id, dtype=torch.long, device=self.device)
                pos = torch.tensor([1, 2], dtype=torch.long, device=self.device)
                logit_pos = torch.tensor([t - 1], dtype=torch.long, device=self.device)
                pk = [torch.zeros((b, h, dh, past), device=self.device) for _ in range(n)]
                pv = [torch.zeros((b, h, past, dh), device=self.device) for _ in range(n)]
                names_k = [f"past_k_{i}" for i in range(n)]
                names_v = [f"past_v_{i}" for i in range(n)]
                out_k = [f"k_{i}" for i in range(n)]
                out_v = [f"v_{i}" for i in range(n)]
                dyn = {"input_ids": {0: "batch", 1: "seq"}, "pos": {0: "batch"}, "logit_pos": {0: "n_logits"}, "logits": {0: "n_logits"}}
                prev = [torch.full((b,), c.bos_id, dtype=torch.long, device=self.device)] if c.token_shift else []
                names_prev = ["prev_ids"] if c.token_shift else []
                if c.token_shift:
                    dyn["prev_ids"] = {0: "batch"}
                dyn.update({k: {0: "batch", 3: "past"} for k in names_k})
                dyn.update({k: {0: "batch", 2: "past"} for k in names_v})
                dyn.update({k: {0: "batch", 3: "seq"} for k in out_k})
                dyn.update({k: {0: "batch", 2: "seq"} for k in out_v})
                torch.onnx.export(
                    DecodeGraph(self.model), (ids, pos, logit_pos, *prev, *pk, *pv), tmp,
                    input_names=["input_ids", "pos", "logit_pos", *names_prev, *names_k, *names_v], output_names=["logits", *out_k, *out_v],
                    dynamic_axes=dyn, opset_version=opset, do_constant_folding=True,
                )
            props = {"hr1_graph": graph, "hr1_decode_version": str(DECODE_GRAPH_VERSION), "vocab_size": c.vocab_size, "d_model": c.d_model, "n_layers": c.n_layers, "n_heads": c.n_heads, "max_len": c.max_len, "eos_id": c.eos_id}
            if weights == "fp16":
                # only fp16 exports carry the key, so an fp32 export's bytes are what they always were
                props["hr1_weights"] = "fp16"
            stamp_metadata(tmp, props, fp16=weights == "fp16")
        os.replace(tmp, path)
        return {"path": path, "bytes": os.path.getsize(path), "opset": opset, "graph": graph, "weights": weights, "step": self.step, "ms": (time.perf_counter() - t0) * 1e3}

    def op_compare_onnx(self, a):
        """Two ONNX files' graphs and weights: whether the graphs are the same (metadata, nodes,
        initializer names and shapes) and how far apart their weights are (for `hr1 zoo verify`: the same
        training on another CPU's float kernels gives weights a rounding apart, not other bytes'
        worth of model)."""
        import numpy as np
        import onnx
        from onnx import numpy_helper

        paths = [a.get("a"), a.get("b")]
        if not all(isinstance(x, str) and x for x in paths):
            raise RequestError("args.a and args.b must be paths of ONNX files")
        ms = []
        for x in paths:
            try:
                ms.append(onnx.load(x))
            except Exception as e:  # noqa: BLE001
                raise RequestError(f"cannot read {x} as ONNX: {e}")
        nodes = [[(n.op_type, list(n.input), list(n.output)) for n in m.graph.node] for m in ms]
        inits = [{i.name: numpy_helper.to_array(i) for i in m.graph.initializer} for m in ms]
        meta = [sorted((p.key, p.value) for p in m.metadata_props) for m in ms]
        same = meta[0] == meta[1] and nodes[0] == nodes[1] and sorted(inits[0]) == sorted(inits[1]) and all(inits[0][k].shape == inits[1][k].shape and inits[0][k].dtype == inits[1][k].dtype for k in inits[0] if k in inits[1])
        max_abs, max_rel, differing, total = 0.0, 0.0, 0, 0
        if same:
            for k, x in inits[0].items():
                if x.dtype.kind != "f":
                    continue
                x64 = x.astype(np.float64)
                y64 = inits[1][k].astype(np.float64)
                d = np.abs(x64 - y64)
                total += int(d.size)
                differing += int((d > 0).sum())
                if d.size:
                    max_abs = max(max_abs, float(d.max()))
                    max_rel = max(max_rel, float((d / np.maximum(np.maximum(np.abs(x64), np.abs(y64)), 1.0)).max()))
        return {"same_graph": bool(same), "max_abs": max_abs, "max_rel": max_rel, "differing": differing, "total": total}

    def op_save(self, a):
        self.need_model()
        path = a.get("path")
        if not isinstance(path, str) or not path:
            raise RequestError("args.path must be a file path for the checkpoint")
        t0 = time.perf_counter()
        if self.hf is not None:
            return self._hf_save_checkpoint(path, t0)
        state = {
            "format": "hr1-learner/1",
            "config": self.config.to_dict(),
            "optim": self.optim,
            "seed": self.seed,
            "step": self.step,
            "model": self.model.state_dict(),
            "opt": self.opt.state_dict(),
            "ref": self.ref.state_dict() if self.ref is not None else None,
            "rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        }
        return self._write_checkpoint(path, state, t0)

    def _write_checkpoint(self, path, state, t0):
        """Write atomically (a .tmp file, then rename): a crash mid-write leaves the old checkpoint."""
        tmp = path + ".tmp"
        torch.save(state, tmp)
        os.replace(tmp, path)
        return {"path": path, "bytes": os.path.getsize(path), "step": self.step, "ms": (time.perf_counter() - t0) * 1e3}

    def op_load(self, a):
        path = a.get("path")
        if not isinstance(path, str) or not os.path.isfile(path):
            raise CheckpointError(f"no checkpoint file at {path!r}")
        saved = (self.model, self.opt, self.ref, self.config, self.optim, self.step, self.seed, self.device, self.hf, self.sessions)
        try:
            state = torch.load(path, map_location="cpu")
            if not isinstance(state, dict) or state.get("format") != "hr1-learner/1":
                raise CheckpointError(f"{path} is not an hr1 learner checkpoint (format {state.get('format') if isinstance(state, dict) else type(state).__name__})")
            if state.get("hf") is not None:
                return self._hf_load_checkpoint(path, state, a.get("device", "auto"))
            config = ModelConfig.from_dict(state["config"])
            self._setup(config, state["optim"], int(state["seed"]), a.get("device", "auto"))
            self.model.load_state_dict(state["model"])
            self.opt.load_state_dict(state["opt"])
            if state.get("ref") is not None:
                self.op_set_reference({})
                self.ref.load_state_dict(state["ref"])
            self.step = int(state["step"])
            torch.set_rng_state(state["rng"])
            if state.get("cuda_rng") is not None and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(state["cuda_rng"])
        except Exception as e:
            # a checkpoint that does not load leaves the learner as it was
            self.model, self.opt, self.ref, self.config, self.optim, self.step, self.seed, self.device, self.hf, self.sessions = saved
            if isinstance(e, CheckpointError):
                raise
            raise CheckpointError(f"checkpoint {path} is corrupt or does not fit: {type(e).__name__}: {e}") from e
        return self.op_info({})

    # -- Hugging Face models (learner/hf.py) ------------------------------------------------
    def need_hf(self, op):
        if self.hf is None:
            raise RequestError(f"{op} needs a Hugging Face model: call hf_load first")

    @staticmethod
    def _hf_dtype(dtype, device):
        if dtype in (None, "auto"):
            return "bfloat16" if device.type == "cuda" else "float32"
        if dtype not in hflib.DTYPES:
            raise RequestError(f"args.dtype must be 'auto' or one of {', '.join(hflib.DTYPES)}, got {dtype!r}")
        return dtype

    @staticmethod
    def _lora_options(lora, full):
        if full:
            if lora:
                raise RequestError("args.full trains every weight; leave args.lora out (or null) with it")
            return None
        o = {**hflib.DEFAULT_LORA, **(lora or {})}
        unknown = sorted(set(o) - set(hflib.DEFAULT_LORA))
        if unknown:
            raise RequestError(f"unknown args.lora keys: {', '.join(unknown)} (r, alpha, dropout, targets)")
        r, alpha, dropout, targets = o["r"], o["alpha"], o["dropout"], o["targets"]
        if not isinstance(r, int) or isinstance(r, bool) or r < 1:
            raise RequestError(f"args.lora.r must be an integer >= 1, got {r!r}")
        if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or alpha <= 0:
            raise RequestError(f"args.lora.alpha must be a positive number, got {alpha!r}")
        if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise RequestError(f"args.lora.dropout must be in [0, 1), got {dropout!r}")
        if not isinstance(targets, list) or not targets or any(t not in hflib.LORA_TARGETS for t in targets):
            raise RequestError(f"args.lora.targets must be a non-empty list of {', '.join(hflib.LORA_TARGETS)}, got {targets!r}")
        return {"r": r, "alpha": alpha, "dropout": float(dropout), "targets": [t for t in hflib.LORA_TARGETS if t in targets]}

    def _hf_build(self, d, lora, full, device, dtype, seed, optim, max_len):
        """Everything hf_load installs, built aside (a failure leaves the learner as it was)."""
        if not isinstance(d, str) or not d:
            raise RequestError("args.dir must be the path of a Hugging Face model directory (config.json + model.safetensors)")
        if max_len is not None and (not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 2):
            raise RequestError(f"args.max_len must be an integer >= 2, got {max_len!r}")
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise RequestError(f"args.seed must be an integer, got {seed!r}")
        lo = self._lora_options(lora, full)
        optim = self._optim(optim)
        dev = self._device(device)
        dt = self._hf_dtype(dtype, dev)
        d = os.path.abspath(d)
        try:
            model, cfg = hflib.load_model(d, dev, hflib.DTYPES[dt], max_len)
        except (hflib.HFConfigError, safetensors_io.SafetensorsError) as e:
            raise CheckpointError(str(e)) from e
        torch.manual_seed(seed)
        if lo is not None:
            model.add_lora(lo["r"], lo["alpha"], lo["dropout"], lo["targets"], seed)
        else:
            for p in model.parameters():
                p.requires_grad_(True)
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=optim["lr"], betas=(optim["beta1"], optim["beta2"]), weight_decay=optim["weight_decay"])
        return {"model": model, "config": cfg, "opt": opt, "optim": optim, "device": dev, "seed": seed, "hf": {"dir": d, "lora": lo, "full": lo is None, "dtype": dt, "max_len": cfg.max_len}}

    def _hf_install(self, b):
        self.model, self.config, self.opt, self.optim, self.device, self.seed, self.hf = b["model"], b["config"], b["opt"], b["optim"], b["device"], b["seed"], b["hf"]
        self.ref = None
        self.step = 0
        self.sessions = {}

    def _hf_info(self):
        return {**self.op_info({}), "arch": self.config.model_type, "trainable_params": self.model.trainable_params(), "lora": self.model.lora}

    def _hf_reference(self):
        if self.model.lora is not None:
            return AdaptersOff(self.model)
        ref = copy.deepcopy(self.model)
        ref.eval()
        for p in ref.parameters():
            p.requires_grad_(False)
        return ref

    def op_hf_write_random(self, a):
        """A random Hugging Face checkpoint (config.json + model.safetensors) of a preset shape."""
        d = a.get("dir")
        if not isinstance(d, str) or not d:
            raise RequestError("args.dir must be a directory path to write config.json and model.safetensors in")
        seed = a.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise RequestError(f"args.seed must be an integer, got {seed!r}")
        dtype = a.get("dtype", "float32")
        if dtype not in ("float32", "bfloat16"):
            raise RequestError(f"args.dtype must be 'float32' or 'bfloat16', got {dtype!r}")
        vs = a.get("vocab_size")
        if not isinstance(vs, int) or isinstance(vs, bool) or vs < 2:
            raise RequestError(f"args.vocab_size must be an integer >= 2, got {vs!r}")
        ov = a.get("overrides") or {}
        if not isinstance(ov, dict):
            raise RequestError("args.overrides must be a map of config.json fields")
        try:
            c = hflib.preset_config(a.get("arch"), a.get("size", "tiny"), vs, a.get("bos_token_id"), a.get("eos_token_id"), a.get("pad_token_id"), a.get("tie_word_embeddings"), ov)
        except hflib.HFConfigError as e:
            raise RequestError(str(e)) from e
        t0 = time.perf_counter()
        params, files = hflib.write_random(d, c, seed, dtype)
        return {"params": params, "files": files, "config": c.to_json(dtype), "ms": (time.perf_counter() - t0) * 1e3}

    def op_hf_load(self, a):
        """Replace the model by a Hugging Face checkpoint (LoRA adapters unless full)."""
        lora = a.get("lora")
        if lora is not None and not isinstance(lora, dict):
            raise RequestError("args.lora must be null or {r, alpha, dropout?, targets?}")
        b = self._hf_build(a.get("dir"), lora, bool(a.get("full", False)), a.get("device", "auto"), a.get("dtype", "auto"), a.get("seed", 0), a.get("optim"), a.get("max_len"))
        self._hf_install(b)
        torch.manual_seed(b["seed"])
        return self._hf_info()

    def op_hf_save(self, a):
        """LoRA: the adapter in PEFT's layout; full: config.json + model.safetensors in HF's."""
        self.need_hf("hf_save")
        d = a.get("dir")
        if not isinstance(d, str) or not d:
            raise RequestError("args.dir must be a directory path")
        t0 = time.perf_counter()
        os.makedirs(d, exist_ok=True)
        m = self.model
        files = []
        if m.lora is not None:
            lo = m.lora
            cfg = {
                "peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": self.hf["dir"],
                "r": lo["r"], "lora_alpha": lo["alpha"], "lora_dropout": lo["dropout"], "target_modules": lo["targets"],
                "bias": "none", "fan_in_fan_out": False, "inference_mode": True, "init_lora_weights": True,
                "modules_to_save": None, "use_rslora": False, "use_dora": False, "layers_to_transform": None,
                "layers_pattern": None, "rank_pattern": {}, "alpha_pattern": {}, "revision": None,
            }
            with open(os.path.join(d, "adapter_config.json"), "w", encoding="utf-8") as f:
                json.dump(cfg, f, indent=2)
            tensors = {hflib.peft_key(k): v for k, v in m.trainable_state().items()}
            safetensors_io.save_file(tensors, os.path.join(d, "adapter_model.safetensors"), {"format": "pt"})
            files = ["adapter_config.json", "adapter_model.safetensors"]
        else:
            with open(os.path.join(d, "config.json"), "w", encoding="utf-8") as f:
                json.dump(self.config.to_json(self.hf["dtype"]), f, indent=2)
            safetensors_io.save_file(m.hf_state(), os.path.join(d, "model.safetensors"), {"format": "pt"})
            files = ["config.json", "model.safetensors"]
            # the tokenizer and generation settings travel with the weights when the source has them
            for fn in HF_SIDE_FILES:
                src = os.path.join(self.hf["dir"], fn)
                if os.path.isfile(src) and os.path.abspath(d) != self.hf["dir"]:
                    shutil.copyfile(src, os.path.join(d, fn))
                    files.append(fn)
        return {"dir": d, "files": files, "bytes": sum(os.path.getsize(os.path.join(d, f)) for f in files), "step": self.step, "ms": (time.perf_counter() - t0) * 1e3}

    def op_hf_weights(self, a):
        """The trainable weights (the adapter, or every weight when full) as safetensors bytes."""
        self.need_hf("hf_weights")
        m = self.model
        meta = {"format": "hr1-hf-weights/1", "kind": "lora" if m.lora is not None else "full", "arch": self.config.model_type, "step": str(self.step)}
        if m.lora is not None:
            tensors = {hflib.peft_key(k): v for k, v in m.trainable_state().items()}
            meta.update({"r": str(m.lora["r"]), "lora_alpha": str(m.lora["alpha"]), "target_modules": ",".join(m.lora["targets"])})
        else:
            tensors = m.hf_state()
        return {"bytes": safetensors_io.save_bytes(tensors, meta), "step": self.step}

    def op_hf_set_weights(self, a):
        """Load hf_weights' bytes into this model (the same base, the same LoRA shape)."""
        self.need_hf("hf_set_weights")
        b = a.get("bytes")
        if not isinstance(b, (bytes, bytearray)):
            raise RequestError("args.bytes must be the bytes hf_weights returned")
        try:
            tensors, meta = safetensors_io.load_bytes(b, "args.bytes")
        except safetensors_io.SafetensorsError as e:
            raise RequestError(str(e)) from e
        m = self.model
        kind = meta.get("kind") or ("lora" if any(".lora_A." in k for k in tensors) else "full")
        if kind == "lora":
            if m.lora is None:
                raise RequestError("args.bytes hold a LoRA adapter but this model was loaded with full: true (hf_load it with lora)")
            if "r" in meta and (meta["r"] != str(m.lora["r"]) or meta.get("lora_alpha") != str(m.lora["alpha"]) or meta.get("target_modules") != ",".join(m.lora["targets"])):
                raise RequestError(f"args.bytes hold an adapter with r={meta['r']}, alpha={meta.get('lora_alpha')}, targets {meta.get('target_modules')}; this model's is r={m.lora['r']}, alpha={m.lora['alpha']}, targets {','.join(m.lora['targets'])}")
            tensors = {hflib.unpeft_key(k): v for k, v in tensors.items()}
            want = m.trainable_state()
        else:
            want = m.hf_state()
        missing = [k for k in want if k not in tensors]
        extra = [k for k in tensors if k not in want]
        if missing or extra:
            raise RequestError(f"args.bytes do not fit this model: {'missing ' + ', '.join(missing[:3]) if missing else ''}{'; ' if missing and extra else ''}{'unexpected ' + ', '.join(extra[:3]) if extra else ''}")
        for k, v in tensors.items():
            if tuple(v.shape) != tuple(want[k].shape):
                raise RequestError(f"args.bytes: tensor {k!r} has shape {list(v.shape)}, this model's is {list(want[k].shape)}")
        with torch.no_grad():
            for k, v in tensors.items():
                want[k].copy_(v)
        return {"tensors": len(tensors), "kind": kind, "step": int(meta["step"]) if str(meta.get("step", "")).isdigit() else None}

    def _ids_tensor(self, ids, name):
        if not isinstance(ids, list) or not ids or not all(isinstance(r, list) and r for r in ids):
            raise RequestError(f"args.{name} must be a non-empty list of non-empty token id lists")
        v = self.config.vocab_size
        for i, r in enumerate(ids):
            for j, t in enumerate(r):
                if not (isinstance(t, int) and not isinstance(t, bool) and 0 <= t < v):
                    raise RequestError(f"args.{name}[{i}][{j}] = {t!r} is not a token id in [0, {v})")
        return ids

    def op_hf_logits(self, a):
        """Logits [B, T, V] as float32 little-endian bytes (adapter: false = the base model)."""
        self.need_hf("hf_logits")
        ids = self._ids_tensor(a.get("ids"), "ids")
        if len({len(r) for r in ids}) != 1:
            raise RequestError("args.ids rows must all have the same length")
        adapter = bool(a.get("adapter", True))
        self.model.eval()
        with torch.no_grad(), (contextlib.nullcontext() if adapter else self.model.adapters_off()):
            lg = self.model(torch.tensor(ids, dtype=torch.long, device=self.device)).float().cpu().contiguous()
        return {"logits": lg.numpy().tobytes(), "shape": list(lg.shape)}

    def op_hf_probe(self, a):
        """Run one of the model's own functions (rmsnorm, rope, gqa) on small given inputs."""
        fn = a.get("fn")

        def tensor(name, dims, dtype=torch.float32):
            try:
                t = torch.tensor(a.get(name), dtype=dtype)
            except (TypeError, ValueError, RuntimeError) as e:
                raise RequestError(f"args.{name} must be a rectangular {dims}-d list of numbers: {e}") from e
            if t.dim() != dims:
                raise RequestError(f"args.{name} must have {dims} dimensions, got shape {list(t.shape)}")
            return t

        if fn == "rmsnorm":
            x, w = tensor("x", 2), tensor("weight", 1)
            if w.shape[0] != x.shape[1]:
                raise RequestError(f"args.weight has {w.shape[0]} values for rows of {x.shape[1]}")
            out = hflib.rms_norm(x, w, float(a.get("eps", 1e-6)))
        elif fn == "rope":
            x, pos = tensor("x", 3), tensor("positions", 1, torch.long)
            if pos.shape[0] != x.shape[0]:
                raise RequestError(f"args.positions has {pos.shape[0]} values for {x.shape[0]} rows of args.x ([T, heads, head_dim])")
            if x.shape[2] % 2:
                raise RequestError("args.x's head_dim must be even")
            try:
                scaling = hflib.check_rope_scaling(a.get("scaling"), "args")
            except hflib.HFConfigError as e:
                raise RequestError(str(e)) from e
            cos, sin = hflib.rope_cos_sin(pos.unsqueeze(0), x.shape[2], float(a.get("theta", 10000.0)), scaling, int(a.get("max_position", 2048)))
            out = hflib.apply_rope(x.transpose(0, 1).unsqueeze(0), cos, sin)[0].transpose(0, 1)
        elif fn == "gqa":
            q, k, v = tensor("q", 3), tensor("k", 3), tensor("v", 3)
            if k.shape != v.shape or k.shape[0] != q.shape[0] or k.shape[2] != q.shape[2] or q.shape[1] % k.shape[1]:
                raise RequestError(f"args.q [T, heads, d], args.k and args.v [T, kv_heads, d] with heads a multiple of kv_heads; got {list(q.shape)}, {list(k.shape)}, {list(v.shape)}")
            t = lambda x: x.transpose(0, 1).unsqueeze(0)  # noqa: E731
            causal = bool(a.get("causal", True))
            out = hflib.attention(t(q), t(k), t(v), causal=causal)[0].transpose(0, 1)
        else:
            raise RequestError(f"args.fn must be 'rmsnorm', 'rope' or 'gqa', got {fn!r}")
        return {"out": out.tolist()}

    def op_hf_decode_start(self, a):
        """Prefill each prompt once (its cache shared by its k rows); row r samples after prompt r // k."""
        self.need_hf("hf_decode_start")
        prompts = self._ids_tensor(a.get("prompts"), "prompts")
        c = self.config
        for i, p in enumerate(prompts):
            if len(p) >= c.max_len:
                raise RequestError(f"args.prompts[{i}] has {len(p)} tokens, leaving no room under max_len={c.max_len}")
        k = a.get("k", 1)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise RequestError(f"args.k must be an integer >= 1, got {k!r}")
        seed = a.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise RequestError(f"args.seed must be an integer, got {seed!r}")
        temperature = a.get("temperature", 1.0)
        if not isinstance(temperature, (int, float)) or isinstance(temperature, bool) or temperature <= 0:
            raise RequestError(f"args.temperature must be a number > 0, got {temperature!r}")
        top_p = a.get("top_p", 1.0)
        if not isinstance(top_p, (int, float)) or isinstance(top_p, bool) or not 0 < top_p <= 1:
            raise RequestError(f"args.top_p must be in (0, 1], got {top_p!r}")
        m = self.model
        m.eval()
        rows = len(prompts) * k
        dt = m.model.embed_tokens.weight.dtype
        cap = min(c.max_len, max(len(p) for p in prompts) + 32)
        shape = (rows, c.num_key_value_heads, cap, c.head_dim)
        caches = [(torch.zeros(shape, dtype=dt, device=self.device), torch.zeros(shape, dtype=dt, device=self.device)) for _ in range(c.num_hidden_layers)]
        logits = torch.empty((rows, c.vocab_size), dtype=dt, device=self.device)
        with torch.no_grad():
            for i, p in enumerate(prompts):
                last, kv = m.prefill(torch.tensor([p], dtype=torch.long, device=self.device))
                rs = slice(i * k, (i + 1) * k)
                for (ck, cv), (kk, vv) in zip(caches, kv):
                    ck[rs, :, : len(p)] = kk
                    cv[rs, :, : len(p)] = vv
                logits[rs] = last
        sid = self.next_session
        self.next_session += 1
        self.sessions[sid] = DecodeSession(caches, logits, [len(p) for p in prompts for _ in range(k)], seed, float(temperature), float(top_p))
        return {"session": sid, "rows": rows}

    def _session(self, a):
        sid = a.get("session")
        s = self.sessions.get(sid) if isinstance(sid, int) else None
        if s is None:
            raise RequestError(f"args.session {sid!r} is not an open decode session (open: {sorted(self.sessions) or 'none'})")
        return sid, s

    def op_hf_decode_step(self, a):
        """One token for each active row: feed its previous token (if any), then sample under its allowed ids."""
        self.need_hf("hf_decode_step")
        sid, s = self._session(a)
        rows, allowed = a.get("rows"), a.get("allowed")
        n = len(s.length)
        if not isinstance(rows, list) or not all(isinstance(r, int) and not isinstance(r, bool) and 0 <= r < n for r in rows) or len(set(rows)) != len(rows):
            raise RequestError(f"args.rows must list distinct row numbers in [0, {n})")
        if not isinstance(allowed, list) or len(allowed) != len(rows):
            raise RequestError(f"args.allowed must have one entry (a list of token ids, or null) per row of args.rows ({len(rows)})")
        c = self.config
        masks = []
        for i, al in enumerate(allowed):
            if al is None:
                masks.append(None)
                continue
            if not isinstance(al, list) or not al:
                raise RequestError(f"args.allowed[{i}] must be null (any token) or a non-empty list of token ids")
            for t in al:
                if not (isinstance(t, int) and not isinstance(t, bool) and 0 <= t < c.vocab_size):
                    raise RequestError(f"args.allowed[{i}] holds {t!r}, not a token id in [0, {c.vocab_size})")
            masks.append(sorted(set(al)))
        for r in rows:
            if s.length[r] + (s.pending[r] is not None) >= c.max_len:
                raise RequestError(f"args.rows: row {r} already holds {c.max_len} tokens (max_len); end it")
        if not rows:
            return {"tokens": [], "logprobs": [], "masked_logprobs": []}
        m = self.model
        m.eval()
        with torch.no_grad():
            feed = [r for r in rows if s.pending[r] is not None]
            if feed:
                pos = [s.length[r] for r in feed]
                s.reserve(max(pos) + 1, c.max_len)
                fr = torch.tensor(feed, dtype=torch.long, device=self.device)
                out = m.decode_step(torch.tensor([s.pending[r] for r in feed], dtype=torch.long, device=self.device), torch.tensor(pos, dtype=torch.long, device=self.device), s.caches, fr)
                s.logits[fr] = out
                for r in feed:
                    s.length[r] += 1
                    s.pending[r] = None
            lg = s.logits.index_select(0, torch.tensor(rows, dtype=torch.long, device=self.device))
            # as token_logprobs: divided in the model's dtype, then log-softmax in float32
            if s.temperature != 1.0:
                lg = lg / s.temperature
            lg = lg.float().cpu()
            lp = torch.log_softmax(lg, dim=-1)
        tokens, lps, mlps = [], [], []
        for i, r in enumerate(rows):
            al = masks[i]
            if al is not None and len(al) == 1:
                tok, mlp = al[0], 0.0
            else:
                tok, mlp = sample_row(lg[i], al, s.top_p, s.generator(r))
            s.pending[r] = tok
            tokens.append(tok)
            lps.append(float(lp[i, tok]))
            mlps.append(mlp)
        return {"tokens": tokens, "logprobs": lps, "masked_logprobs": mlps}

    def op_hf_decode_end(self, a):
        """Free a decode session's cache."""
        sid, _ = self._session(a)
        del self.sessions[sid]
        return {"session": sid, "open": len(self.sessions)}

    def _hf_save_checkpoint(self, path, t0):
        m = self.model
        if isinstance(self.ref, AdaptersOff):
            ref = "adapters_off"
        elif self.ref is not None:
            ref = self.ref.hf_state()
        else:
            ref = None
        state = {
            "format": "hr1-learner/1",
            "hf": dict(self.hf),
            "config": self.config.to_json(),
            "optim": self.optim,
            "seed": self.seed,
            "step": self.step,
            "model": m.trainable_state(),
            "opt": self.opt.state_dict(),
            "ref": ref,
            "rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        }
        return self._write_checkpoint(path, state, t0)

    def _hf_load_checkpoint(self, path, state, device):
        o = state["hf"]
        d = o["dir"]
        if not os.path.isfile(os.path.join(d, "config.json")):
            raise CheckpointError(f"checkpoint {path} was trained from the Hugging Face model in {d}, which is gone (no config.json there); restore that directory to resume")
        b = self._hf_build(d, o["lora"], o["full"], device, o["dtype"], int(state["seed"]), state["optim"], o["max_len"])
        if b["config"].to_json() != state["config"]:
            raise CheckpointError(f"{os.path.join(d, 'config.json')} is not the config checkpoint {path} was trained from")
        m = b["model"]
        want = m.trainable_state()
        got = state["model"]
        if set(want) != set(got):
            miss = sorted(set(want) - set(got))[:3]
            raise CheckpointError(f"checkpoint {path}'s weights do not fit the model of {d} (missing {miss})")
        with torch.no_grad():
            for k, v in got.items():
                want[k].copy_(v)
        b["opt"].load_state_dict(state["opt"])
        self._hf_install(b)
        ref = state.get("ref")
        if ref is not None:
            self.ref = self._hf_reference()
            if isinstance(ref, dict):
                rs = self.ref.hf_state()
                with torch.no_grad():
                    for k, v in ref.items():
                        rs[k].copy_(v)
        self.step = int(state["step"])
        torch.set_rng_state(state["rng"])
        if state.get("cuda_rng") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        return self.op_info({})


# files of a Hugging Face model directory that hf_save (full) copies next to the new weights
HF_SIDE_FILES = ("generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt", "tokenizer.model", "added_tokens.json")


class AdaptersOff:
    """The reference policy of a LoRA run: the same model with its adapters skipped (no copy)."""

    def __init__(self, model):
        self.model = model

    def hidden(self, ids):
        with self.model.adapters_off():
            return self.model.hidden(ids)

    def head(self, h):
        with self.model.adapters_off():
            return self.model.head(h)


class DecodeSession:
    """A sampling session's key/value cache and per-row state (hf_decode_*)."""

    def __init__(self, caches, logits, length, seed, temperature, top_p):
        self.caches = caches  # per layer (K, V) [rows, kv_heads, capacity, head_dim]
        self.logits = logits  # [rows, V]: the logits each row samples its next token from
        self.length = length  # tokens in each row's cache
        self.pending = [None] * len(length)  # the token each row sampled and has not fed yet
        self.seed = seed
        self.temperature = temperature
        self.top_p = top_p
        self.gens = {}

    def generator(self, r):
        """row r's own generator, seeded from (seed, r): its draws do not depend on the other rows"""
        g = self.gens.get(r)
        if g is None:
            g = self.gens[r] = torch.Generator().manual_seed((self.seed % (1 << 31)) * (1 << 32) + r)
        return g

    def reserve(self, n, limit):
        cap = self.caches[0][0].shape[2]
        if n <= cap:
            return
        new = min(max(n, 2 * cap), limit)
        grown = []
        for k, v in self.caches:
            shape = (k.shape[0], k.shape[1], new, k.shape[3])
            k2 = torch.zeros(shape, dtype=k.dtype, device=k.device)
            v2 = torch.zeros(shape, dtype=v.dtype, device=v.device)
            k2[:, :, :cap] = k
            v2[:, :, :cap] = v
            grown.append((k2, v2))
        self.caches = grown


def sample_row(logits, allowed, top_p, gen):
    """(token, log-prob under the distribution sampled from): softmax of logits (already divided by
    the temperature) restricted to allowed (None = every id), truncated to the top-p nucleus and
    renormalised; one uniform draw from gen, inverted through the cumulative distribution (float64)."""
    sub = logits.double() if allowed is None else logits.double()[torch.tensor(allowed, dtype=torch.long)]
    p = torch.softmax(sub, dim=-1)
    if top_p < 1.0:
        ps, order = torch.sort(p, descending=True, stable=True)
        keep = (torch.cumsum(ps, 0) - ps) < top_p
        keep[0] = True
        idx = order[keep]
        p = p[idx] / p[idx].sum()
    else:
        idx = None
    cum = torch.cumsum(p, 0)
    u = torch.rand(1, generator=gen, dtype=torch.float64)
    j = int(torch.searchsorted(cum, u * cum[-1], right=True).clamp(max=p.shape[0] - 1))
    local = int(idx[j]) if idx is not None else j
    tok = allowed[local] if allowed is not None else local
    return tok, float(torch.log(p[j]))


def stamp_metadata(path, props, fp16=False):
    """Record what the graph is in the ONNX file's metadata_props (read back by learner/onnx.ts);
    with fp16, store the weights compactly first (compact_fp16)."""
    import onnx

    m = onnx.load(path)
    if fp16:
        compact_fp16(m)
    del m.metadata_props[:]
    for k, v in props.items():
        e = m.metadata_props.add()
        e.key, e.value = k, str(v)
    onnx.save(m, path)


def read_exact(n):
    buf = b""
    while len(buf) < n:
        chunk = _IN.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def send(msg):
    body = msgpack.packb(msg, use_bin_type=True)
    _OUT.write(struct.pack(">I", len(body)) + body)
    _OUT.flush()


def main():
    learner = Learner()
    send({"id": 0, "ok": True, "result": {"hello": "hr1-learner", **learner.op_info({})}})
    while True:
        head = read_exact(4)
        if head is None:
            return 0
        (n,) = struct.unpack(">I", head)
        if n > MAX_FRAME:
            sys.stderr.write(f"hr1 learner: frame of {n} bytes is over the {MAX_FRAME} limit; stream is out of sync\n")
            return 4
        body = read_exact(n)
        if body is None:
            return 0
        rid = None
        try:
            req = msgpack.unpackb(body, raw=False)
            rid = req.get("id")
            op = req.get("op")
            if op == "shutdown":
                send({"id": rid, "ok": True, "result": None})
                return 0
            fn = getattr(learner, f"op_{op}", None) if isinstance(op, str) else None
            if fn is None:
                raise RequestError(f"unknown op {op!r}")
            result = fn(req.get("args") or {})
            send({"id": rid, "ok": True, "result": result})
        except Exception as e:
            send({"id": rid, "ok": False, "error": {"type": type(e).__name__, "message": str(e), "traceback": traceback.format_exc()}})


if __name__ == "__main__":
    sys.exit(main())
