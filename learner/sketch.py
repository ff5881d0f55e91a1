"""The DBBench sketch parser (policies/targets/lm/dbbench/sketch.ts): train it, export it to ONNX.

One-shot protocol (policies/targets/lm/dbbench/sketch-build.ts): one JSON request on stdin, one
JSON reply on stdout ({ok: true, result} or {ok: false, error: {type, message, traceback}}), then
exit. stdout belongs to the reply; progress lines (`HR1_PROGRESS <step> <total> <loss>`) go to stderr.

request: {data: path of a JSON file [{f, p, q, c, k, s, n, w, t, ss, se}…], seed, steps (or epochs), batch,
          lr, d_model, n_layers, n_heads, d_ff, out: path of model.onnx, fp16_out: path of a copy with
          fp16 weights (optional), checkpoint: path of the torch weights (optional), opset}
  f: L×5 token features (word, prefix, shape, match, segment), p: L positions, q: L question flags,
  c: L column of each token (-1 none), k: kind, s: selected column (-1), n: numeric column (-1),
  w / t: 16 WHERE / SET flags, ss / se: 16 span starts / ends (-1 none)
result:  {params, loss_first, loss_last, steps, torch, ms}

ONNX inputs: feats int64 [B, L, 5], pos int64 [B, L], mask float [B, L], qmask float [B, L],
colmat float [B, 16, L]; outputs: kind [B, 13], sel / num / where / set [B, 16], start / end [B, 16, L].
"""
import json
import math
import os
import random
import sys
import time
import traceback

_OUT = sys.stdout
sys.stdout = sys.stderr

try:
    import torch
    import torch.nn as nn
    import onnx  # noqa: F401  (torch.onnx.export needs it)
except Exception as e:  # a missing dependency: one line for the parent, exit code 3
    sys.stderr.write("HR1_LEARNER_MISSING torch onnx | " + repr(e) + "\n")
    sys.exit(3)

WORDS, PREFIXES, SHAPES, MATCHES, SEGMENTS, POSITIONS, COLS, KINDS = 8192, 2048, 16, 4, 19, 128, 16, 13
NEG = -1e9


class Block(nn.Module):
    def __init__(self, d, heads, dff, drop):
        super().__init__()
        self.heads = heads
        self.scale = 1.0 / math.sqrt(d // heads)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.n1 = nn.LayerNorm(d)
        self.n2 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, dff), nn.GELU(), nn.Linear(dff, d))
        self.drop = nn.Dropout(drop)

    def forward(self, x, mask):
        b, l, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.n1(x)).split(d, dim=-1)
        q = q.view(b, l, h, d // h).transpose(1, 2)
        k = k.view(b, l, h, d // h).transpose(1, 2)
        v = v.view(b, l, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-1, -2)) * self.scale
        att = att + (1.0 - mask)[:, None, None, :] * NEG
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, l, d)
        x = x + self.drop(self.out(y))
        return x + self.drop(self.ff(self.n2(x)))


class Sketch(nn.Module):
    def __init__(self, d, layers, heads, dff, drop=0.1):
        super().__init__()
        self.word = nn.Embedding(WORDS, d)
        self.prefix = nn.Embedding(PREFIXES, d)
        self.shape = nn.Embedding(SHAPES, d)
        self.match = nn.Embedding(MATCHES, d)
        self.segment = nn.Embedding(SEGMENTS, d)
        self.position = nn.Embedding(POSITIONS, d)
        self.blocks = nn.ModuleList([Block(d, heads, dff, drop) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.kind = nn.Sequential(nn.Linear(2 * d, d), nn.Tanh(), nn.Linear(d, KINDS))
        self.cols = nn.Sequential(nn.Linear(2 * d, d), nn.Tanh(), nn.Linear(d, 4))
        self.start = nn.Linear(d, d)
        self.end = nn.Linear(d, d)
        self.drop = nn.Dropout(drop)
        self.scale = 1.0 / math.sqrt(d)

    def forward(self, feats, pos, mask, qmask, colmat):
        x = (self.word(feats[:, :, 0]) + self.prefix(feats[:, :, 1]) + self.shape(feats[:, :, 2])
             + self.match(feats[:, :, 3]) + self.segment(feats[:, :, 4]) + self.position(pos))
        x = self.drop(x)
        for blk in self.blocks:
            x = blk(x, mask)
        x = self.norm(x)
        qsum = (x * qmask[:, :, None]).sum(1) / qmask.sum(1, keepdim=True).clamp(min=1.0)
        allsum = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0)
        kind = self.kind(torch.cat([qsum, allsum], -1))
        colv = colmat @ x  # [B, C, d]
        valid = (colmat.sum(-1) > 0).float()  # [B, C]
        heads = self.cols(torch.cat([colv, qsum[:, None, :].expand_as(colv)], -1))  # [B, C, 4]
        pad = (1.0 - valid) * NEG
        sel = heads[:, :, 0] + pad
        num = heads[:, :, 1] + pad
        where = heads[:, :, 2] + pad
        sett = heads[:, :, 3] + pad
        qpad = (1.0 - qmask)[:, None, :] * NEG
        start = self.start(colv) @ x.transpose(1, 2) * self.scale + qpad
        end = self.end(colv) @ x.transpose(1, 2) * self.scale + qpad
        return kind, sel, num, where, sett, start, end


def batch_tensors(rows):
    L = max(len(r["p"]) for r in rows)
    b = len(rows)
    feats = torch.zeros(b, L, 5, dtype=torch.long)
    pos = torch.zeros(b, L, dtype=torch.long)
    mask = torch.zeros(b, L)
    qmask = torch.zeros(b, L)
    colmat = torch.zeros(b, COLS, L)
    for i, r in enumerate(rows):
        n = len(r["p"])
        feats[i, :n] = torch.tensor(r["f"], dtype=torch.long).view(n, 5)
        pos[i, :n] = torch.tensor(r["p"], dtype=torch.long)
        mask[i, :n] = 1.0
        qmask[i, :n] = torch.tensor(r["q"], dtype=torch.float)
        counts = {}
        for t, c in enumerate(r["c"]):
            if c >= 0:
                counts[c] = counts.get(c, 0) + 1
        for t, c in enumerate(r["c"]):
            if c >= 0:
                colmat[i, c, t] = 1.0 / counts[c]
    lab = {
        "k": torch.tensor([r["k"] for r in rows], dtype=torch.long),
        "s": torch.tensor([r["s"] for r in rows], dtype=torch.long),
        "n": torch.tensor([r["n"] for r in rows], dtype=torch.long),
        "w": torch.tensor([r["w"] for r in rows], dtype=torch.float),
        "t": torch.tensor([r["t"] for r in rows], dtype=torch.float),
        "ss": torch.tensor([r["ss"] for r in rows], dtype=torch.long),
        "se": torch.tensor([r["se"] for r in rows], dtype=torch.long),
    }
    return (feats, pos, mask, qmask, colmat), lab


def loss_of(out, lab, colmat):
    kind, sel, num, where, sett, start, end = out
    ce = nn.functional.cross_entropy
    valid = (colmat.sum(-1) > 0).float()
    loss = ce(kind, lab["k"])
    if (lab["s"] >= 0).any():
        loss = loss + ce(sel, lab["s"], ignore_index=-1)
    if (lab["n"] >= 0).any():
        loss = loss + ce(num, lab["n"], ignore_index=-1)
    bce = nn.functional.binary_cross_entropy_with_logits
    loss = loss + (bce(where.clamp(min=-30), lab["w"], reduction="none") * valid).sum() / valid.sum()
    loss = loss + (bce(sett.clamp(min=-30), lab["t"], reduction="none") * valid).sum() / valid.sum()
    has = lab["ss"] >= 0  # [B, C]
    if has.any():
        b, c, l = start.shape
        s = start.reshape(b * c, l)[has.reshape(-1)]
        e = end.reshape(b * c, l)[has.reshape(-1)]
        loss = loss + ce(s, lab["ss"].reshape(-1)[has.reshape(-1)]) + ce(e, lab["se"].reshape(-1)[has.reshape(-1)])
    return loss


def train(a):
    t0 = time.time()
    torch.manual_seed(a["seed"])
    rnd = random.Random(a["seed"])
    with open(a["data"]) as fh:
        rows = json.load(fh)
    model = Sketch(a["d_model"], a["n_layers"], a["n_heads"], a["d_ff"])
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=a["lr"], weight_decay=0.01)
    bs = a["batch"]
    per_epoch = max(1, len(rows) // bs)
    total = a["steps"] if a.get("steps") is not None else per_epoch * a["epochs"]
    warm = max(1, total // 20)
    losses = []
    step = 0
    model.train()
    while step < total:
        order = list(range(len(rows)))
        rnd.shuffle(order)
        for i in range(per_epoch):
            if step >= total:
                break
            idx = order[i * bs:(i + 1) * bs]
            inputs, lab = batch_tensors([rows[j] for j in idx])
            lr = a["lr"] * (step + 1) / warm if step < warm else a["lr"] * (0.05 + 0.475 * (1 + math.cos(math.pi * (step - warm) / max(1, total - warm))))
            for g in opt.param_groups:
                g["lr"] = lr
            loss = loss_of(model(*inputs), lab, inputs[4])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(float(loss))
            step += 1
            if step % 50 == 0 or step == total:
                sys.stderr.write("HR1_PROGRESS %d %d %.4f\n" % (step, total, sum(losses[-50:]) / len(losses[-50:])))
                sys.stderr.flush()
    t1 = time.time()
    model.eval()
    inputs, _ = batch_tensors(rows[:2])
    out = a["out"]
    torch.onnx.export(
        model, inputs, out, opset_version=a.get("opset", 17),
        input_names=["feats", "pos", "mask", "qmask", "colmat"],
        output_names=["kind", "sel", "num", "where", "set", "start", "end"],
        dynamic_axes={"feats": {0: "b", 1: "l"}, "pos": {0: "b", 1: "l"}, "mask": {0: "b", 1: "l"}, "qmask": {0: "b", 1: "l"},
                      "colmat": {0: "b", 2: "l"}, "kind": {0: "b"}, "sel": {0: "b"}, "num": {0: "b"}, "where": {0: "b"},
                      "set": {0: "b"}, "start": {0: "b", 2: "l"}, "end": {0: "b", 2: "l"}},
    )
    if a.get("fp16_out"):
        import onnx as onnxlib
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from onnx_fp16 import compact_fp16
        m = onnxlib.load(out)
        compact_fp16(m)
        onnxlib.save(m, a["fp16_out"])
    if a.get("checkpoint"):
        torch.save({"state": model.state_dict(), "request": {k: v for k, v in a.items() if k != "data"}}, a["checkpoint"])
    tenth = max(1, len(losses) // 10)
    return {
        "params": params, "loss_first": sum(losses[:tenth]) / tenth, "loss_last": sum(losses[-tenth:]) / tenth,
        "steps": step, "torch": torch.__version__, "ms": {"train": round((t1 - t0) * 1000), "export": round((time.time() - t1) * 1000)},
    }


def main():
    torch.set_num_threads(int(os.environ.get("HR1_TORCH_THREADS", "1")))
    try:
        req = json.loads(sys.stdin.read())
        res = train(req)
        _OUT.write(json.dumps({"ok": True, "result": res}))
    except Exception as e:  # the parent turns this into a typed error
        _OUT.write(json.dumps({"ok": False, "error": {"type": type(e).__name__, "message": str(e), "traceback": traceback.format_exc()}}))
    _OUT.flush()


if __name__ == "__main__":
    main()
