"""Value nets for the validator: two tiny MLPs trained on logged candidate outcomes.

One-shot protocol (policies/scorer/train.ts): one JSON request on stdin, one JSON reply on
stdout ({ok: true, result} or {ok: false, error: {type, message, traceback}}), then exit.
stdout belongs to the reply; anything else goes to stderr.

request: {seed, hidden, epochs, lr, weight_decay, opset, out_dir,
          x: [[f…]…], y_cls: [0|1…], y_reg: [Δ…], eval_x: [[f…]…]}
result:  {validation: {path, params, loss}, reward: {path, params, loss},
          eval: {validation: [p…], reward: [Δ̂…]}, torch, ms}

validation: P(Δ ≥ 0) (sigmoid inside the graph); reward: Δ̂. ONNX input `features` float32
[batch, F] → output `score` float32 [batch], batch axis dynamic.
"""
import json
import os
import sys
import time
import traceback

_OUT = sys.stdout
sys.stdout = sys.stderr

try:
    import torch
    import onnx  # noqa: F401  (torch.onnx.export needs it)
except Exception as e:  # a missing dependency: one line for the parent, exit code 3
    sys.stderr.write("HR1_LEARNER_MISSING torch onnx | " + repr(e) + "\n")
    sys.exit(3)


class Mlp(torch.nn.Module):
    def __init__(self, dim, hidden, sigmoid):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(dim, hidden), torch.nn.ReLU(),
            torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
            torch.nn.Linear(hidden, 1),
        )
        self.sigmoid = sigmoid
        # a regression target is learned standardised; the graph maps back to Δ's scale
        self.register_buffer("scale", torch.tensor(1.0))
        self.register_buffer("shift", torch.tensor(0.0))

    def forward(self, features):
        z = self.net(features).squeeze(-1)
        return torch.sigmoid(z) if self.sigmoid else z * self.scale + self.shift


def fit(x, y, kind, a, seed):
    torch.manual_seed(seed)
    model = Mlp(x.shape[1], a["hidden"], sigmoid=False)
    opt = torch.optim.Adam(model.parameters(), lr=a["lr"], weight_decay=a["weight_decay"])
    if kind == "cls":
        # class weights: the regressive minority counts as much as the majority
        pos = float(y.mean().item())
        w = torch.where(y > 0.5, torch.tensor(0.5 / max(pos, 1e-6)), torch.tensor(0.5 / max(1 - pos, 1e-6)))
        loss_fn = lambda z: torch.nn.functional.binary_cross_entropy_with_logits(z, y, weight=w)  # noqa: E731
    else:
        # standardise Δ: with a raw Δ of spread ~0.1 the MSE gradients are ~100x smaller than with
        # a unit target, and weight decay alone then sets every weight to 0 (a constant predictor,
        # seen on learned targets' outcomes); scale and shift are restored in the exported graph
        mu = float(y.mean().item())
        sd = float(y.std().item()) if y.numel() > 1 else 0.0
        sd = sd if sd > 1e-8 else 1.0
        model.scale.fill_(sd)
        model.shift.fill_(mu)
        yz = (y - mu) / sd
        loss_fn = lambda z: torch.nn.functional.mse_loss(z, yz)  # noqa: E731
    loss = None
    for _ in range(a["epochs"]):
        opt.zero_grad()
        loss = loss_fn(model.net(x).squeeze(-1))
        loss.backward()
        opt.step()
    model.sigmoid = kind == "cls"
    model.eval()
    return model, float(loss.item())


def export(model, dim, path, opset):
    dummy = torch.zeros(2, dim)
    torch.onnx.export(model, (dummy,), path, input_names=["features"], output_names=["score"],
                      dynamic_axes={"features": {0: "batch"}, "score": {0: "batch"}}, opset_version=opset)
    return os.path.getsize(path)


def main():
    t0 = time.time()
    a = json.loads(sys.stdin.read())
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True, warn_only=True)
    x = torch.tensor(a["x"], dtype=torch.float32)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError("x must be a non-empty [rows, features] matrix")
    dim = x.shape[1]
    os.makedirs(a["out_dir"], exist_ok=True)
    out = {"torch": torch.__version__, "eval": {}}
    for name, kind, y, seed in (("validation", "cls", a["y_cls"], a["seed"]), ("reward", "reg", a["y_reg"], a["seed"] + 1)):
        yt = torch.tensor(y, dtype=torch.float32)
        model, loss = fit(x, yt, kind, a, seed)
        path = os.path.join(a["out_dir"], name + ".onnx")
        tmp = path + ".tmp.onnx"
        export(model, dim, tmp, a.get("opset", 17))
        os.replace(tmp, path)
        params = sum(p.numel() for p in model.parameters())
        out[name] = {"path": path, "params": params, "loss": loss, "bytes": os.path.getsize(path)}
        ex = torch.tensor(a.get("eval_x") or [], dtype=torch.float32).reshape(-1, dim)
        with torch.no_grad():
            out["eval"][name] = model(ex).tolist() if ex.shape[0] else []
    out["ms"] = (time.time() - t0) * 1000
    return out


if __name__ == "__main__":
    try:
        res = main()
        _OUT.write(json.dumps({"ok": True, "result": res}))
    except Exception as e:
        _OUT.write(json.dumps({"ok": False, "error": {"type": type(e).__name__, "message": str(e), "traceback": traceback.format_exc()}}))
    _OUT.flush()
