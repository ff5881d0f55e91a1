"""The safetensors format, read and written by hand (learner/hf.py's checkpoints and adapters).

Why by hand: the `safetensors` Python package is not in Debian bookworm, and the machines this
project runs on have no PyPI (Debian's python3-torch, python3-numpy, python3-msgpack and
python3-onnx are all the learner may assume). The format is small enough to own:

    8 bytes   N, the header's length, unsigned little-endian
    N bytes   a JSON object: {name: {"dtype": "F32"|..., "shape": [...], "data_offsets": [begin, end]},
              "__metadata__": {str: str} (optional)}; the writer pads it with spaces to a multiple
              of 8 (so the data that follows is 8-byte aligned, as the reference writer does)
    the rest  the tensors' raw little-endian bytes; offsets are relative to the end of the header

dtypes read and written: F32, F16, BF16, F64, I64, I32 (BF16 goes through int16 and
`.view(torch.bfloat16)`, which numpy has no type for). A sharded checkpoint
(`model.safetensors.index.json`, whose `weight_map` names each tensor's file) reads as one dict.
"""
import json
import os
import struct
import sys

import torch

if sys.byteorder != "little":  # the bytes are little-endian and are copied as they lie in memory
    raise ImportError("learner/safetensors_io.py assumes a little-endian machine")

# safetensors dtype -> (torch dtype, bytes per element)
DTYPES = {
    "F32": (torch.float32, 4),
    "F16": (torch.float16, 2),
    "BF16": (torch.bfloat16, 2),
    "F64": (torch.float64, 8),
    "I64": (torch.int64, 8),
    "I32": (torch.int32, 4),
}
NAMES = {dt: name for name, (dt, _) in DTYPES.items()}
# a header longer than this is not a safetensors file (the reference reader's limit)
MAX_HEADER = 100 * 1024 * 1024
INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"


class SafetensorsError(ValueError):
    """A file (or buffer) that is not valid safetensors, or lacks what was asked of it."""


def _tensor_bytes(t):
    t = t.detach().to("cpu").contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    elif t.dtype not in NAMES:
        raise SafetensorsError(f"dtype {t.dtype} cannot be written as safetensors (use one of {', '.join(DTYPES)})")
    return t.numpy().tobytes()


def _header(tensors, metadata):
    head = {}
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise SafetensorsError("__metadata__ must map strings to strings")
        head["__metadata__"] = dict(metadata)
    off = 0
    for name, t in tensors.items():
        if t.dtype not in NAMES:
            raise SafetensorsError(f"tensor {name!r} has dtype {t.dtype}, which safetensors_io does not write (one of {', '.join(DTYPES)})")
        n = t.numel() * DTYPES[NAMES[t.dtype]][1]
        head[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + n]}
        off += n
    raw = json.dumps(head, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw


def save_file(tensors, path, metadata=None):
    """Write {name: tensor} to path (tensors in the dict's order; written to path.tmp, then renamed)."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(_header(tensors, metadata))
        for t in tensors.values():
            f.write(_tensor_bytes(t))
    os.replace(tmp, path)
    return os.path.getsize(path)


def save_bytes(tensors, metadata=None):
    """{name: tensor} as the bytes of a safetensors file."""
    return b"".join([_header(tensors, metadata)] + [_tensor_bytes(t) for t in tensors.values()])


def _parse_header(head_raw, where, data_len):
    try:
        head = json.loads(head_raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise SafetensorsError(f"{where}: the header is not JSON ({e})") from e
    if not isinstance(head, dict):
        raise SafetensorsError(f"{where}: the header is not a JSON object")
    meta = head.pop("__metadata__", None) or {}
    out = {}
    for name, e in head.items():
        if not isinstance(e, dict) or e.get("dtype") not in DTYPES or not isinstance(e.get("shape"), list) or not isinstance(e.get("data_offsets"), list) or len(e["data_offsets"]) != 2:
            dt = e.get("dtype") if isinstance(e, dict) else None
            raise SafetensorsError(f"{where}: tensor {name!r} has a bad entry (dtype {dt!r}; supported {', '.join(DTYPES)}; needs shape and data_offsets [begin, end])")
        b, en = e["data_offsets"]
        n = 1
        for s in e["shape"]:
            if not isinstance(s, int) or s < 0:
                raise SafetensorsError(f"{where}: tensor {name!r} has a bad shape {e['shape']!r}")
            n *= s
        if not (isinstance(b, int) and isinstance(en, int) and 0 <= b <= en <= data_len) or en - b != n * DTYPES[e["dtype"]][1]:
            raise SafetensorsError(f"{where}: tensor {name!r} has data_offsets {e['data_offsets']} that do not fit its shape {e['shape']} ({e['dtype']}) or the {data_len} data bytes")
        out[name] = (e["dtype"], tuple(e["shape"]), b, en)
    return out, meta


def _to_tensor(buf, dtype, shape):
    tdt, _ = DTYPES[dtype]
    if len(buf) == 0:
        return torch.empty(shape, dtype=tdt)
    if tdt == torch.bfloat16:
        return torch.frombuffer(buf, dtype=torch.int16).view(torch.bfloat16).reshape(shape)
    return torch.frombuffer(buf, dtype=tdt).reshape(shape)


class SafeFile:
    """One safetensors file opened for reading: .names, .metadata, .shape(name), .dtype(name), .get(name) (a CPU tensor)."""

    def __init__(self, path):
        self.path = path
        try:
            self.f = open(path, "rb")
        except OSError as e:
            raise SafetensorsError(f"cannot open {path}: {e.strerror or e}") from e
        size = os.fstat(self.f.fileno()).st_size
        head = self.f.read(8)
        if len(head) < 8:
            self.f.close()
            raise SafetensorsError(f"{path}: too short to be safetensors ({size} bytes)")
        (n,) = struct.unpack("<Q", head)
        if n > MAX_HEADER or 8 + n > size:
            self.f.close()
            raise SafetensorsError(f"{path}: header length {n} does not fit the file ({size} bytes); not safetensors")
        self.base = 8 + n
        try:
            self.entries, self.metadata = _parse_header(self.f.read(n), path, size - self.base)
        except SafetensorsError:
            self.f.close()
            raise

    @property
    def names(self):
        return list(self.entries)

    def shape(self, name):
        return self.entries[name][1]

    def dtype(self, name):
        return DTYPES[self.entries[name][0]][0]

    def get(self, name):
        if name not in self.entries:
            raise SafetensorsError(f"{self.path} has no tensor {name!r}")
        dtype, shape, b, en = self.entries[name]
        self.f.seek(self.base + b)
        buf = bytearray(en - b)
        if self.f.readinto(buf) != len(buf):
            raise SafetensorsError(f"{self.path}: tensor {name!r} is cut short")
        return _to_tensor(buf, dtype, shape)

    def close(self):
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def load_file(path):
    """{name: CPU tensor} of one file, and its __metadata__."""
    with SafeFile(path) as f:
        return {n: f.get(n) for n in f.names}, dict(f.metadata)


def load_bytes(data, where="the bytes"):
    """{name: CPU tensor} of a safetensors buffer, and its __metadata__."""
    data = bytes(data)
    if len(data) < 8:
        raise SafetensorsError(f"{where}: too short to be safetensors ({len(data)} bytes)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > MAX_HEADER or 8 + n > len(data):
        raise SafetensorsError(f"{where}: header length {n} does not fit the {len(data)} bytes; not safetensors")
    entries, meta = _parse_header(data[8 : 8 + n], where, len(data) - 8 - n)
    base = 8 + n
    return {name: _to_tensor(bytearray(data[base + b : base + en]), dt, shape) for name, (dt, shape, b, en) in entries.items()}, dict(meta)


def checkpoint_files(d):
    """The safetensors files of a Hugging Face model directory and which file holds each tensor:
    ({name: path}); a sharded checkpoint through model.safetensors.index.json, else model.safetensors."""
    index = os.path.join(d, INDEX_FILE)
    if os.path.isfile(index):
        try:
            with open(index, encoding="utf-8") as f:
                wm = json.load(f).get("weight_map")
        except (OSError, ValueError) as e:
            raise SafetensorsError(f"{index}: not a readable JSON index ({e})") from e
        if not isinstance(wm, dict) or not wm:
            raise SafetensorsError(f"{index}: weight_map must map tensor names to shard files")
        out = {}
        for name, fn in wm.items():
            if not isinstance(fn, str) or os.path.basename(fn) != fn:
                raise SafetensorsError(f"{index}: weight_map[{name!r}] = {fn!r} is not a file name in {d}")
            out[name] = os.path.join(d, fn)
        return out
    single = os.path.join(d, SINGLE_FILE)
    if not os.path.isfile(single):
        raise SafetensorsError(f"{d} has neither {SINGLE_FILE} nor {INDEX_FILE}")
    with SafeFile(single) as f:
        return {n: single for n in f.names}


class CheckpointReader:
    """All tensors of a model directory (single file or shards), opened lazily, one file handle per shard."""

    def __init__(self, d):
        self.dir = d
        self.where = checkpoint_files(d)
        self.files = {}

    @property
    def names(self):
        return list(self.where)

    def file(self, name):
        p = self.where[name]
        if p not in self.files:
            self.files[p] = SafeFile(p)
            missing = [n for n, q in self.where.items() if q == p and n not in self.files[p].entries]
            if missing:
                raise SafetensorsError(f"{p} lacks tensor {missing[0]!r} that {INDEX_FILE} places there")
        return self.files[p]

    def shape(self, name):
        return self.file(name).shape(name)

    def get(self, name):
        return self.file(name).get(name)

    def close(self):
        for f in self.files.values():
            f.close()
        self.files = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
