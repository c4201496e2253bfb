#!/usr/bin/python3
"""What examples/attention_study/load_study.py makes of a study, printed as JSON for
test_attention_study to compare with the exports it reads itself (nn::load_safetensors):

    check_load_study.py STUDY_DIR SEQUENCE PREFIX

  {"sources": {"safetensors": ARRAYS, "npy": ARRAYS}   load_study(STUDY_DIR, source) of each file
   "tokens": [[...]], "seq_len": n, "step": n,
   "head_view": ARGUMENTS       to_torch(head_view_arguments(study, SEQUENCE)), what head_view gets
   "written": ARGUMENTS}        PREFIX.npz and PREFIX.json, written by load_study.py's command line
                                (null when it found bertviz and wrote PREFIX.html instead)
ARRAYS is {name: {"shape": [...], "values": [...]}}; ARGUMENTS holds the three *_attention as lists
over layers of {"shape", "values", "type"} and the two token lists. A float32 printed as a Python
float converts back exactly, so the comparison is bit for bit. Exit 77 when PyTorch is missing."""
import json
import os
import sys

import numpy as np

try:
    import torch
except ImportError:
    print("SKIPPED: python3-torch is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "attention_study"))
import load_study  # noqa: E402

ATTENTION = ("encoder_attention", "decoder_attention", "cross_attention")


def described(a, type_name=None):
    out = {"shape": list(a.shape), "values": np.asarray(a).ravel().tolist()}
    if type_name:
        out["type"] = type_name
    return out


def arguments_of(attention, tokens):
    out = {k: [described(layer.numpy() if isinstance(layer, torch.Tensor) else layer, type(layer).__module__ + "." +
                         type(layer).__name__ + "/" + str(layer.dtype)) for layer in attention[k]]
           for k in ATTENTION}
    out.update(tokens)
    return out


def main(directory, sequence, prefix):
    studies = {source: load_study.load_study(directory, source) for source in ("safetensors", "npy")}
    study = studies["safetensors"]
    head_view = load_study.to_torch(load_study.head_view_arguments(study, sequence))
    return {"sources": {source: {name: described(a) for name, a in s.arrays.items()} for source, s in studies.items()},
            "tokens": study.tokens.tolist(), "seq_len": study.seq_len, "step": study.step,
            "head_view": arguments_of(head_view, {k: head_view[k] for k in ("encoder_tokens", "decoder_tokens")}),
            "written": written(prefix)}


def written(prefix):
    """What load_study.py wrote in place of calling bertviz; None when it called bertviz instead."""
    if not os.path.exists(prefix + ".npz"):
        return None
    with np.load(prefix + ".npz") as npz:
        attention = {k: list(npz[k]) for k in ATTENTION}
    with open(prefix + ".json") as f:
        tokens = {k: v for k, v in json.load(f).items() if k.endswith("_tokens")}
    return arguments_of(attention, tokens)


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), sys.argv[3])))
