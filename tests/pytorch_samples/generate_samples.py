#!/usr/bin/python3
"""Writes PyTorch's own sample inputs for the ops tapegrad has, with PyTorch's outputs and gradients.

Usage: generate_samples.py OUT_DIR < NAMES   (writes OUT_DIR/samples.json and OUT_DIR/samples.bin)

NAMES: the OpInfo names (name.variant) to sample, one a line: the ones tapegrad's op specs map to
a call, as `test_pytorch_samples --list-pytorch-names` prints them (ctest pipes the one into the
other).

Samples come from OpInfo (torch.testing._internal.common_methods_invocations.op_db, float64):
reference_inputs, which for every op starts with its sample_inputs and adds more (broadcasting,
empty and 0-d tensors, extremal values), plus the einsum equations of PyTorch's test_linalg
(EINSUM_EQUATIONS below; that file is not installed by Debian). For each sample we record the
inputs, args and kwargs, the outputs, and the gradient of sum(out * G) for a fixed random G with
respect to every floating input. tests/pytorch_samples/test_pytorch_samples.cpp replays them
through tapegrad.

Format. samples.json: {"torch": version, "samples": [sample...], "left_out": {id: why}}; a sample is
{"id", "op", "input", "args", "kwargs", "outputs"} where every value is encoded by `encode`:
  {"tensor": {"leaf": n, "dtype": "float64"|"int64"|"bool", "shape": [...],
              "at": k, "requires_grad": b | "data": [...], "seed": k?, "grad": k?}}  (float64 data, the seed G of an output and the gradient
              of an input live in samples.bin at double offset k: exact, no text round-trip)
  {"list": [value...]}, {"float": "0x1.8p+1"} (float.hex), {"int": n}, {"bool": b},
  {"str": s}, {"dtype": "float64"}, {"none": null}.
"""
import json
import os
import sys
import types
import unittest
import warnings

# op_db imports expecttest, which Debian does not package; it only needs these two names.
_expecttest = types.ModuleType("expecttest")
_expecttest.TestCase = unittest.TestCase
_expecttest.ACCEPT = False
sys.modules.setdefault("expecttest", _expecttest)

try:
    import torch
    from torch.testing._internal.common_methods_invocations import op_db
except ImportError as e:  # a failure, not a skip: the sweep must not vanish from CI unnoticed
    sys.exit(f"generate_samples.py: cannot import PyTorch's op_db ({e}); install python3-torch "
             "(.ci/install-deps does)")

# Ops whose reference_inputs fail in torch 1.13 (reference_inputs_elementwise_ternary asks for an
# int64 tensor that requires grad): their sample_inputs only.
SAMPLE_INPUTS_ONLY = {"clamp", "where"}

# test_linalg.py's TestLinalg.test_einsum and test_einsum_corner_cases, as (equation, shapes).
EINSUM_EQUATIONS = [
    ("i->", [[5]]), ("i,i->", [[5], [5]]), ("i,i->i", [[5], [5]]), ("i,j->ij", [[5], [7]]),
    ("ij->ji", [[3, 5]]), ("ij->j", [[3, 5]]), ("ij->i", [[3, 5]]), ("ij,ij->ij", [[3, 5], [3, 5]]),
    ("ij,j->i", [[3, 5], [5]]), ("ij,kj->ik", [[3, 5], [2, 5]]), ("ij,ab->ijab", [[3, 5], [7, 9]]),
    ("Aij,Ajk->Aik", [[2, 3, 5], [2, 5, 7]]), ("ijk,jk->i", [[2, 3, 5], [3, 5]]),
    ("aij,jk->aik", [[2, 5, 7], [7, 9]]), ("abCd,dFg->abCFg", [[2, 3, 3, 5], [5, 4, 6]]),
    ("ijk,jk->ik", [[2, 3, 5], [3, 5]]), ("ijk,jk->ij", [[2, 3, 5], [3, 5]]),
    ("ijk,ik->j", [[2, 3, 5], [2, 5]]), ("ijk,ik->jk", [[2, 3, 5], [2, 5]]),
    ("ii", [[4, 4]]), ("ii->i", [[4, 4]]), ("iji->j", [[2, 3, 2]]), ("ngrg...->nrg...", [[2, 1, 3, 1, 4]]),
    ("i...->...", [[4, 4]]), ("ki,...k->i...", [[5, 3], [2, 5]]), ("k...,jk->...", [[5, 3], [2, 5]]),
    ("...ik, ...j -> ...ij", [[2, 3, 5], [5]]), ("Bik,k...j->i...j", [[2, 3, 5], [5, 3]]),
    ("i...j, ij... -> ...ij", [[2, 3, 5], [2, 5, 2, 3]]), ("bn,anm,bm->ba", [[5, 10], [15, 10, 20], [5, 20]]),
    ("...,be,b...,beg,gi,bc...->bi...", [[3, 5], [2, 5], [2, 3, 5], [2, 5, 7], [7, 9], [2, 3, 3, 5]]),
    (" ", [[]]), (" -> ", [[]]), (" , ", [[], []]), (" , , ", [[], [], []]), (" , -> ", [[], []]),
    (" i ", [[1]]), (" i -> ", [[1]]), (" i -> i ", [[1]]), (" i , i ", [[1], [1]]), (" i , i -> i ", [[1], [1]]),
    ("i", [[0]]), (" i j -> j", [[2, 0]]), ("ij->i", [[2, 0]]), (" i j k  ,  k  -> i j ", [[1, 2, 0], [0]]),
    ("i,j", [[1], [2]]), ("i,ij->ij", [[2], [2, 3]]),
    ("...", [[]]), ("...->", [[]]), ("...->...", [[]]), ("...", [[1]]), ("...->", [[1]]), ("z...->z", [[1]]),
    ("Z...->...Z", [[1]]), ("...a->", [[2, 1]]), ("a...b->ab", [[2, 2, 1]]),
]

# Tensors above this many elements are left out (PyTorch's reference inputs include [1029, 917]
# ones for its vectorised kernels' tails, which tests/test_pointwise.cpp covers at every tail
# length); their ids are listed in samples.json so the C++ test reports how many.
MAX_ELEMENTS = 1 << 16


ENCODED_DTYPES = (torch.float64, torch.int64, torch.bool)


class Writer:
    """Holds samples.bin: float64 values appended in order, addressed by their offset."""

    def __init__(self):
        self.chunks, self.size = [], 0

    def put(self, t):
        # clone: a gradient may be an expanded view without storage of its own.
        data = t.detach().clone(memory_format=torch.contiguous_format).numpy().astype("<f8").tobytes()
        at = self.size
        self.chunks.append(data)
        self.size += len(data) // 8
        return at


def encode(x, writer, tensor_info):
    if isinstance(x, torch.Tensor):
        if id(x) in tensor_info:  # one tensor passed twice: the C++ side makes it one leaf too
            return {"tensor": tensor_info[id(x)]}
        info = {"leaf": len(tensor_info), "dtype": str(x.dtype).removeprefix("torch."), "shape": list(x.shape)}
        if x.dtype == torch.float64:
            info["at"] = writer.put(x)
            info["requires_grad"] = x.requires_grad
        else:
            info["data"] = x.reshape(-1).tolist()
        tensor_info[id(x)] = info
        return {"tensor": info}
    if isinstance(x, (list, tuple)):
        return {"list": [encode(y, writer, tensor_info) for y in x]}
    if isinstance(x, bool):
        return {"bool": x}
    if isinstance(x, int):
        return {"int": x}
    if isinstance(x, float):
        return {"float": x.hex()}
    if isinstance(x, str):
        return {"str": x}
    if isinstance(x, torch.dtype):
        return {"dtype": str(x).removeprefix("torch.")}
    if x is None:
        return {"none": None}
    raise TypeError(f"cannot encode {type(x).__name__} {x!r}")


def describe(x):
    """The short text of a value in a sample id: shapes (and a dtype other than float64) for
    tensors, 4 digits for floats, str for the rest."""
    if isinstance(x, torch.Tensor):
        text = "[" + ",".join(map(str, x.shape)) + "]"
        return text if x.dtype == torch.float64 else text + str(x.dtype).removeprefix("torch.")
    if isinstance(x, (list, tuple)):
        return "(" + ",".join(describe(y) for y in x) + ")"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x).replace(" ", "")


def describe_positional(x):
    """describe, with a number marked `s=` (a scalar operand: add(x, s=2.5), sub(s=1.5, x))."""
    return "s=" + describe(x) if isinstance(x, float) else describe(x)


def tensors_in(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from tensors_in(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from tensors_in(y)


def einsum_samples():
    make = torch.testing.make_tensor
    for equation, shapes in EINSUM_EQUATIONS:
        operands = [make(s, dtype=torch.float64, device="cpu", requires_grad=True) for s in shapes]
        yield torch.testing._internal.opinfo.core.SampleInput(operands, args=(equation,))


def record(name, index, sample, call, writer, seed):
    """Runs one sample in PyTorch: (id, its encoding), or (id, why it is left out)."""
    # Every float64 input becomes a fresh contiguous leaf: some reference inputs are stride-0
    # views marked requires_grad, which PyTorch then finds unused by the graph.
    leaves = {}

    def fresh(x):
        if isinstance(x, torch.Tensor) and x.dtype == torch.float64:
            if id(x) not in leaves:
                leaves[id(x)] = x.detach().clone(memory_format=torch.contiguous_format).requires_grad_(x.requires_grad)
            return leaves[id(x)]
        if isinstance(x, (list, tuple)):
            return type(x)(fresh(y) for y in x)
        return x

    sample.input, sample.args = fresh(sample.input), tuple(fresh(a) for a in sample.args)
    sample.kwargs = {k: fresh(v) for k, v in sample.kwargs.items()}
    everything = [sample.input, list(sample.args), sample.kwargs]
    description = " ".join([describe_positional(sample.input)] + [describe_positional(a) for a in sample.args] +
                           [f"{k}={describe(v)}" for k, v in sample.kwargs.items()])
    sample_id = f"{name}#{index} {description}"
    if any(t.numel() > MAX_ELEMENTS for t in tensors_in(everything)):
        return sample_id, f"a tensor above {MAX_ELEMENTS} elements"
    if any(t.dtype not in ENCODED_DTYPES for t in tensors_in(everything)):
        return sample_id, "a tensor of another dtype (type promotion; tapegrad has one dtype per op)"
    out = call(sample.input, *sample.args, **sample.kwargs)
    if out is NotImplemented:
        return sample_id, "a dunder (__rsub__) given a number as self: computes nothing"
    outputs = list(out) if isinstance(out, (tuple, list)) else [out]
    tensor_info, output_info = {}, {}  # id(tensor) -> its encoding, inputs and outputs apart
    encoded = {"id": sample_id, "op": name,
               "input": encode(sample.input, writer, tensor_info),
               "args": [encode(a, writer, tensor_info) for a in sample.args],
               "kwargs": {k: encode(v, writer, tensor_info) for k, v in sample.kwargs.items()},
               "outputs": [encode(o, writer, output_info) for o in outputs]}
    differentiable = [o for o in outputs if o.dtype == torch.float64 and o.requires_grad]
    sources = list({id(t): t for t in tensors_in(everything) if t.requires_grad}.values())
    if differentiable and sources:
        generator = torch.Generator().manual_seed(seed)
        seeds = [torch.randn(o.shape, dtype=torch.float64, generator=generator) for o in differentiable]
        loss = sum((o * g).sum() for o, g in zip(differentiable, seeds))
        grads = torch.autograd.grad(loss, sources, allow_unused=True)
        for o, g in zip(differentiable, seeds):
            output_info[id(o)]["seed"] = writer.put(g)
        for t, g in zip(sources, grads):
            if g is not None:
                tensor_info[id(t)]["grad"] = writer.put(g)
    return sample_id, encoded


def main(out_dir, ops):
    by_name = {o.name + ("." + o.variant_test_name if o.variant_test_name else ""): o for o in op_db}
    missing = [name for name in ops if name not in by_name]
    if missing:
        sys.exit(f"generate_samples.py: torch {torch.__version__}'s op_db has no {', '.join(missing)}")
    torch.manual_seed(0)
    # kl_div's reduction='mean' warns that it will change; the samples ask for it on purpose.
    warnings.filterwarnings("ignore", category=UserWarning)
    writer, samples, left_out = Writer(), [], {}
    for name in ops:
        info = by_name[name]
        inputs = info.sample_inputs if name in SAMPLE_INPUTS_ONLY else info.reference_inputs
        generated = list(inputs("cpu", torch.float64, requires_grad=True))
        if name == "einsum":
            generated += list(einsum_samples())
        for index, sample in enumerate(generated):
            sample_id, encoded = record(name, index, sample, info.op, writer, seed=len(samples) + len(left_out))
            if isinstance(encoded, str):
                left_out[sample_id] = encoded
            else:
                samples.append(encoded)
    os.makedirs(out_dir, exist_ok=True)
    with open(f"{out_dir}/samples.bin", "wb") as f:
        for chunk in writer.chunks:
            f.write(chunk)
    with open(f"{out_dir}/samples.json", "w") as f:
        json.dump({"torch": torch.__version__, "samples": samples, "left_out": left_out}, f)
    print(f"generate_samples.py: {len(samples)} samples of {len(ops)} ops from torch {torch.__version__}"
          f" ({len(left_out)} left out)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: generate_samples.py OUT_DIR < NAMES")
    ops = sys.stdin.read().split()
    if not ops:
        sys.exit("generate_samples.py: no OpInfo names on standard input")
    main(sys.argv[1], ops)
