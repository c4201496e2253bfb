#!/usr/bin/python3
"""Loads an attention_study output directory into NumPy (and PyTorch), checks it against the
checkpoint it was studied from, and shows one sequence with bertviz's head view.

    /usr/bin/python3 examples/attention_study/load_study.py STUDY_DIR [--checkpoint CK.safetensors]
                     [--sequence N] [--out PREFIX] [--source safetensors|npy]

Without bertviz (it is not in Debian: `pip install bertviz`), the script says so on stderr and
writes head_view's arguments instead, PREFIX.npz and PREFIX.json (see write_arguments), so that
head_view can be called where bertviz is installed. From Python:

    import load_study
    study = load_study.load_study("study")              # arrays, metadata, tokens, seq_len, ...
    load_study.check_against_checkpoint(study, load_study.load_checkpoint("ck.safetensors"))
    arguments = load_study.to_torch(load_study.head_view_arguments(study, sequence=0))
    html = bertviz.head_view(**arguments, html_action="return")

The exports and their metadata are described in examples/attention_study/export.h and
study/export_metadata.h; only NumPy is needed to load them (safetensors is read by hand), PyTorch
only for to_torch and bertviz.
"""
import argparse
import json
import os
import struct
import sys
from dataclasses import dataclass, field

import numpy as np

PROGRAM = "load_study.py"
START = 1  # the copy task's start symbol (nn/copy_task/copy_task.h)
SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "I64": "<i8", "I32": "<i4", "U8": "u1", "BOOL": "?"}
KINDS = ("encoder", "decoder", "cross")


class StudyError(Exception):
    """An export or checkpoint that cannot be what it claims: the message says which file and why."""


@dataclass
class Study:
    directory: str
    source: str            # the file or directory the arrays came from
    arrays: dict           # name -> np.ndarray, as exported ("<module path>.weights", "encoder.rollout", ...)
    metadata: dict         # the export's metadata strings
    tokens: np.ndarray     # [batch, seq_len] int64, the studied sequences
    seq_len: int
    step: int
    model: dict = field(default_factory=dict)  # "layers" -> 2, "heads" -> 4, ... ("dropout" a float)
    records: list = field(default_factory=list)  # attention module paths, forward order

    def attention(self, kind):
        """A [batch, heads, seq_q, seq_k] of every layer of one kind ("encoder": self-attention of the
        encoder, "decoder": the decoder's self-attention, "cross": its source-target attention), in layer
        order: the grouping of bertviz.json (study/attention_export.h)."""
        return [self.arrays[r + ".weights"] for r in self.records if kind_of(r) == kind]


def kind_of(record):
    if record.startswith("encoder."):
        return "encoder"
    if record.endswith("self_attention"):
        return "decoder"
    if record.endswith("src_tgt_attention"):
        return "cross"
    return None


def read_safetensors(path):
    """(name -> np.ndarray, metadata) of a safetensors file: a u64 little-endian header length, the JSON
    header (with "__metadata__", strings), then the raw little-endian data."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
        (n,) = struct.unpack("<Q", blob[:8])
        header = json.loads(blob[8:8 + n])
    except (OSError, struct.error, ValueError) as e:
        raise StudyError(f"'{path}' is not a readable safetensors file ({e})") from None
    metadata = header.pop("__metadata__", {})
    data = memoryview(blob)[8 + n:]
    arrays = {}
    for name, info in header.items():
        if info["dtype"] not in SAFETENSORS_DTYPES:
            raise StudyError(f"'{path}': tensor '{name}' has dtype {info['dtype']}, which this reader does not know")
        begin, end = info["data_offsets"]
        arrays[name] = np.frombuffer(data[begin:end], dtype=SAFETENSORS_DTYPES[info["dtype"]]).reshape(info["shape"])
    return arrays, metadata


def read_npy_directory(path):
    try:
        with open(os.path.join(path, "metadata.json")) as f:
            metadata = json.load(f)
        arrays = {name[:-4]: np.load(os.path.join(path, name))
                  for name in sorted(os.listdir(path)) if name.endswith(".npy")}
    except (OSError, ValueError) as e:
        raise StudyError(f"'{path}' is not a readable npy export ({e})") from None
    return arrays, metadata


def integer(metadata, key, where):
    try:
        return int(metadata[key])
    except KeyError:
        raise StudyError(f"{where}: the metadata has no '{key}' (an export of an older attention_study?)") from None
    except ValueError:
        raise StudyError(f"{where}: metadata '{key}' = '{metadata[key]}' is not an integer") from None


def load_study(directory, source=None):
    """The study in `directory` (attention_study --out), its arrays from attention.safetensors or npy/
    (`source`: "safetensors", "npy", or None for the first present), checked against its own metadata:
    the tokens are [batch, seq_len] and every attention map's shape fits them and the model."""
    files = {"safetensors": os.path.join(directory, "attention.safetensors"), "npy": os.path.join(directory, "npy")}
    if source is None:
        source = next((s for s in files if os.path.exists(files[s])), "safetensors")
    path = files[source]
    if not os.path.exists(path):
        raise StudyError(f"'{directory}' holds no {os.path.basename(path)} (is it an attention_study --out directory?)")
    arrays, metadata = read_safetensors(path) if source == "safetensors" else read_npy_directory(path)
    where = f"'{path}'"
    try:
        tokens = np.array(json.loads(metadata["tokens"]), dtype=np.int64)
        records = json.loads(metadata["records"])
    except KeyError as e:
        raise StudyError(f"{where}: the metadata has no {e} (an export of an older attention_study?)") from None
    try:
        model = {key[len("model."):]: float(value) if key == "model.dropout" else int(value)
                 for key, value in metadata.items() if key.startswith("model.")}
    except ValueError as e:
        raise StudyError(f"{where}: a model configuration value is not a number ({e})") from None
    missing = [key for key in ("vocab", "layers", "heads", "d_model") if key not in model]
    if missing:
        raise StudyError(f"{where}: the metadata has no model.{missing[0]} (an export of an older attention_study?)")
    study = Study(directory=directory, source=path, arrays=arrays, metadata=metadata, tokens=tokens,
                  seq_len=integer(metadata, "seq_len", where), step=integer(metadata, "step", where), model=model,
                  records=records)
    check_shapes(study, where)
    return study


def check_shapes(study, where):
    tokens = study.tokens
    if tokens.ndim != 2 or tokens.shape[1] != study.seq_len:
        raise StudyError(f"{where}: the tokens are {list(tokens.shape)}, not [batch, seq_len {study.seq_len}]")
    if tokens.size and (tokens.min() < 0 or tokens.max() >= study.model["vocab"]):
        raise StudyError(f"{where}: a token is outside [0, vocab {study.model['vocab']})")
    batch, seq, heads = tokens.shape[0], study.seq_len, study.model["heads"]
    # The decoder reads the sequence without its last token (teacher forcing).
    expected = {"encoder": [batch, heads, seq, seq], "decoder": [batch, heads, seq - 1, seq - 1],
                "cross": [batch, heads, seq - 1, seq]}
    for record in study.records:
        name = record + ".weights"
        if name not in study.arrays:
            raise StudyError(f"{where}: the record '{record}' has no array '{name}'")
        kind = kind_of(record)
        if kind and list(study.arrays[name].shape) != expected[kind]:
            raise StudyError(f"{where}: '{name}' is {list(study.arrays[name].shape)}, but {batch} sequences of "
                             f"{seq} tokens and {heads} heads make it {expected[kind]}")
    for kind in KINDS:
        if len(study.attention(kind)) != study.model["layers"]:
            raise StudyError(f"{where}: {len(study.attention(kind))} {kind} attention maps, but the model has "
                             f"{study.model['layers']} layers")


def load_checkpoint(path):
    """(name -> np.ndarray, metadata) of a copy-task checkpoint (copy_task --checkpoint,
    attention_study --save-checkpoint): the parameters, the optimiser's state, and metadata strings
    ("step", "copy_task.seq_len", the generators' states)."""
    return read_safetensors(path)


def warn(message):
    print(f"{PROGRAM}: warning: {message}", file=sys.stderr)


def check_against_checkpoint(study, checkpoint, checkpoint_path="the checkpoint"):
    """Whether the study can be of this checkpoint's model. A StudyError when its parameters do not fit
    the study's model configuration; a warning on stderr, naming both numbers, when the checkpoint was
    trained at another sequence length than the study's or is at another step."""
    tensors, metadata = checkpoint
    model = study.model
    embedding, w_q = (tensors.get(n) for n in ("encoder.embedding.embedding_layer.weight",
                                               "encoder.encoder_layers.0.multi_head_attention.W_q"))
    if embedding is None or w_q is None:
        raise StudyError(f"{checkpoint_path} has no encoder embedding or first-layer W_q: not a copy-task checkpoint")
    found = {"vocab": embedding.shape[0], "d_model": embedding.shape[1], "heads": w_q.shape[0],
             "layers": sum(1 for n in tensors if n.startswith("encoder.encoder_layers.") and n.endswith(".W_q"))}
    for key, value in found.items():
        if value != model.get(key):
            raise StudyError(f"{checkpoint_path} is not of the studied model: {key} {value} in it, "
                             f"{model.get(key)} in the study '{study.directory}'")
    trained_seq_len = integer(metadata, "copy_task.seq_len", checkpoint_path) if "copy_task.seq_len" in metadata else None
    if trained_seq_len is not None and trained_seq_len != study.seq_len:
        warn(f"{checkpoint_path} was trained on sequences of {trained_seq_len} tokens, but the study "
             f"'{study.directory}' is of sequences of {study.seq_len} tokens: the model never saw that length")
    if "step" in metadata and integer(metadata, "step", checkpoint_path) != study.step:
        warn(f"{checkpoint_path} is at step {metadata['step']}, but the study '{study.directory}' was made at "
             f"step {study.step}: its maps are of other parameters")


def token_labels(tokens):
    """bertviz's labels of a sequence, as bertviz.json has them: "<s>" for the start symbol."""
    return ["<s>" if t == START else str(int(t)) for t in tokens]


def head_view_arguments(study, sequence):
    """The keyword arguments of bertviz.head_view for an encoder-decoder model, of one sequence:
    encoder_attention, decoder_attention, cross_attention (tuples over layers of NumPy arrays
    [1, heads, seq_q, seq_k]) and encoder_tokens (seq_len labels), decoder_tokens (the decoder's input:
    the sequence without its last token, seq_len - 1 labels). to_torch makes the arrays tensors."""
    if not 0 <= sequence < study.tokens.shape[0]:
        raise StudyError(f"--sequence {sequence}: the study has {study.tokens.shape[0]} sequences "
                         f"(0 to {study.tokens.shape[0] - 1})")
    arguments = {f"{kind}_attention": tuple(a[sequence:sequence + 1] for a in study.attention(kind)) for kind in KINDS}
    labels = token_labels(study.tokens[sequence])
    arguments["encoder_tokens"] = labels
    arguments["decoder_tokens"] = labels[:-1]
    return arguments


def to_torch(arguments):
    import torch
    return {k: tuple(torch.from_numpy(np.array(a)) for a in v) if k.endswith("_attention") else v
            for k, v in arguments.items()}


def write_arguments(arguments, prefix, study, sequence):
    """PREFIX.npz: encoder_attention, decoder_attention, cross_attention, each the layers stacked
    [layers, 1, heads, seq_q, seq_k] (so tuple(torch.from_numpy(a) for a in npz[name]) is head_view's
    argument); PREFIX.json: encoder_tokens, decoder_tokens, the sequence and the study's metadata."""
    np.savez(prefix + ".npz", **{k: np.stack(v) for k, v in arguments.items() if k.endswith("_attention")})
    with open(prefix + ".json", "w") as f:
        json.dump({"sequence": sequence, "encoder_tokens": arguments["encoder_tokens"],
                   "decoder_tokens": arguments["decoder_tokens"], "study": study.directory,
                   "metadata": study.metadata}, f, indent=1)
        f.write("\n")


def main(argv=None):
    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.split("\n\n")[0])
    parser.add_argument("study", help="an attention_study --out directory")
    parser.add_argument("--checkpoint", help="the checkpoint the study was made from: its metadata is checked")
    parser.add_argument("--sequence", type=int, default=0, help="the sequence to show (default 0)")
    parser.add_argument("--out", help="what to write, without extension (default STUDY/head_view_sequence<N>)")
    parser.add_argument("--source", choices=["safetensors", "npy"],
                        help="the arrays' file (default: attention.safetensors when present)")
    args = parser.parse_args(argv)
    try:
        study = load_study(args.study, args.source)
        print(f"{study.source}: {len(study.arrays)} arrays; {study.tokens.shape[0]} sequences of {study.seq_len} "
              f"tokens, model at step {study.step}, {study.model['layers']} layers of {study.model['heads']} heads")
        if args.checkpoint:
            check_against_checkpoint(study, load_checkpoint(args.checkpoint), f"the checkpoint '{args.checkpoint}'")
        arguments = head_view_arguments(study, args.sequence)
        prefix = args.out or os.path.join(args.study, f"head_view_sequence{args.sequence}")
        try:
            import bertviz
        except ImportError:
            write_arguments(arguments, prefix, study, args.sequence)
            print(f"{PROGRAM}: bertviz is not installed (pip install bertviz), so head_view was not called; wrote its "
                  f"arguments for sequence {args.sequence} to {prefix}.npz and {prefix}.json", file=sys.stderr)
            return 0
        html = bertviz.head_view(**to_torch(arguments), html_action="return")
        with open(prefix + ".html", "w") as f:
            f.write(html.data)
        print(f"bertviz head_view of sequence {args.sequence}: {prefix}.html")
        return 0
    except StudyError as e:
        print(f"{PROGRAM}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
