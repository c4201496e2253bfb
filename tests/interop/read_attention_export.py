#!/usr/bin/python3
"""Reads an attention export (study/attention_export.h) the way a Python user would and prints what it
found as JSON on stdout, for test_attention_capture to compare with the capture:
  safetensors FILE  tensors loaded into torch (the hand-written reader of pytorch_interop.py):
                    {"tensors": {name: {"dtype", "shape", "hex"}}, "metadata": {...}}
  npy DIR           every .npy parsed by hand (format 1.0/2.0, no NumPy needed), its data checked to
                    fill the shape, and metadata.json: {"arrays": {name: {"descr", "shape", "hex"}}, "metadata": {...}}
  bertviz FILE      json.load, then bertviz head view's structure checked here, per sequence:
                    {"sequences": [{"entries": [{"name", "dims": [layers, heads, seq_q, seq_k], "left", "right",
                                                 "row_sums_ok"}], "keys": [...], "default_filter", "include_layers"}],
                     "metadata": {...}}
"hex" is the tensor's bytes, so the comparison is bit for bit. Only safetensors needs torch (its import
takes seconds, so the other two do without); exit 77 when it is missing."""
import ast
import json
import math
import os
import struct
import sys

NPY_ITEMSIZE = {"<f4": 4, "<f8": 8}


def read_safetensors(path):
    try:
        import torch
    except ImportError:
        print("SKIPPED: python3-torch is not installed")
        sys.exit(77)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from pytorch_interop import load_safetensors

    def tensor_bytes(t):
        return t.contiguous().view(torch.uint8).numpy().tobytes().hex() if t.numel() else ""

    tensors, metadata = load_safetensors(path)
    return {"tensors": {name: {"dtype": str(t.dtype), "shape": list(t.shape), "hex": tensor_bytes(t)}
                        for name, t in tensors.items()},
            "metadata": metadata}


def read_npy(path):
    with open(path, "rb") as f:
        blob = f.read()
    assert blob[:6] == b"\x93NUMPY", path
    major = blob[6]
    (n,) = struct.unpack("<H" if major == 1 else "<I", blob[8:10] if major == 1 else blob[8:12])
    start = (10 if major == 1 else 12) + n
    header = ast.literal_eval(blob[start - n:start].decode("latin1"))
    assert not header["fortran_order"], path
    data = blob[start:]
    assert len(data) == math.prod(header["shape"]) * NPY_ITEMSIZE[header["descr"]], path
    return {"descr": header["descr"], "shape": list(header["shape"]), "hex": data.hex()}


def read_npy_dir(path):
    with open(os.path.join(path, "metadata.json")) as f:
        metadata = json.load(f)
    return {"arrays": {name[:-4]: read_npy(os.path.join(path, name))
                       for name in sorted(os.listdir(path)) if name.endswith(".npy")},
            "metadata": metadata}


def dims(nested, depth):
    """The sizes of a rectangular nested list, or None when it is ragged."""
    if depth == 0:
        return [] if isinstance(nested, float) else None
    if not isinstance(nested, list) or not nested:
        return None
    inner = [dims(x, depth - 1) for x in nested]
    return [len(nested)] + inner[0] if inner[0] is not None and all(i == inner[0] for i in inner) else None


def read_head_view_params(params):
    entries = []
    for e in params["attention"]:
        shape = dims(e["attn"], 4)
        rows = [row for layer in e["attn"] for head in layer for row in head] if shape else []
        entries.append({"name": e["name"], "dims": shape, "left": e["left_text"], "right": e["right_text"],
                        "row_sums_ok": bool(rows) and all(abs(sum(r) - 1) < 1e-5 or sum(r) == 0 for r in rows)})
    return {"entries": entries, "keys": sorted(params), "default_filter": params["default_filter"],
            "include_layers": params["include_layers"]}


def read_bertviz(path):
    with open(path) as f:
        exported = json.load(f)
    return {"sequences": [read_head_view_params(p) for p in exported["sequences"]], "metadata": exported["metadata"]}


if __name__ == "__main__":
    readers = {"safetensors": read_safetensors, "npy": read_npy_dir, "bertviz": read_bertviz}
    print(json.dumps(readers[sys.argv[1]](sys.argv[2])))
