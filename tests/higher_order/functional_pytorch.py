"""Generates cases for tapegrad's functional transforms and PyTorch's answers to them.

Each case applies one transform (grad, vjp, jvp, hvp) of torch.autograd.functional to one of the
functions below (tests/higher_order/functional_pytorch.cpp has the same functions in tapegrad),
on generated shapes and values: every transform with and without create_graph, with the two input
positions given distinct tensors or one tensor twice (each combination twice over 32 cases), with
a function drawn at random (one of them never reads its second input); with
create_graph, also the derivative of a weighted sum of the results with respect to the distinct
tensors (double differentiation). Prints the cases as JSON on stdout.
"""
import json
import sys

import torch
from torch.autograd.functional import hvp, jvp, vjp

torch.set_default_dtype(torch.float64)

FUNCTIONS = {
    "sin_mul": lambda a, b: torch.sin(a) * b * b,
    "tanh_exp": lambda a, b: torch.tanh(a * b) + torch.exp(a) * 0.5,
    "scaled_by_sum": lambda a, b: a * torch.sum(b * b),
    "ignores_b": lambda a, b: torch.exp(a) * a,
}
SHAPES = [[3], [2, 3], [4], [1, 2]]
TRANSFORMS = ["grad", "vjp", "jvp", "hvp"]


def scalar(f):
    return lambda a, b: torch.sum(f(a, b))


def apply(transform, f, inputs, vectors, create_graph, strict):
    """(value or None, list of results) as tapegrad returns them."""
    if transform == "grad":
        value, results = vjp(scalar(f), inputs, None, create_graph=create_graph, strict=strict)
        return None, list(results)
    if transform == "vjp":
        value, results = vjp(f, inputs, vectors[0], create_graph=create_graph, strict=strict)
        return value, list(results)
    if transform == "jvp":
        value, result = jvp(f, inputs, tuple(vectors), create_graph=create_graph, strict=strict)
        return value, [result]
    value, results = hvp(scalar(f), inputs, tuple(vectors), create_graph=create_graph, strict=strict)
    return None, list(results)


def flat(t):
    return t.detach().reshape(-1).tolist()


def make_case(index, gen):
    def pick(options):
        return options[int(torch.randint(len(options), (1,), generator=gen))]

    def uniform(shape):
        return torch.rand(shape, generator=gen) * 1.6 - 0.8

    name = pick(list(FUNCTIONS))
    transform = TRANSFORMS[index % len(TRANSFORMS)]
    shape = pick(SHAPES)
    create_graph = (index // len(TRANSFORMS)) % 2 == 1
    alias = [0, 0] if (index // (2 * len(TRANSFORMS))) % 2 == 1 else [0, 1]
    f = FUNCTIONS[name]
    leaves = [uniform(shape).requires_grad_() for _ in range(max(alias) + 1)]
    inputs = tuple(leaves[k] for k in alias)
    with torch.no_grad():
        out_shape = list(f(*inputs).shape)
    if transform == "vjp":
        vectors = [uniform(out_shape)]
    elif transform == "grad":
        vectors = []
    else:
        vectors = [uniform(shape) for _ in alias]
    case = {"id": index, "function": name, "transform": transform, "shape": shape, "alias": alias,
            "create_graph": create_graph, "leaves": [flat(t) for t in leaves],
            "vectors": [{"shape": list(v.shape), "values": flat(v)} for v in vectors]}
    try:
        apply(transform, f, inputs, vectors, create_graph, strict=True)
        case["strict_raises"] = False
    except RuntimeError:
        case["strict_raises"] = True
    value, results = apply(transform, f, inputs, vectors, create_graph, strict=False)
    case["value"] = None if value is None else flat(value)
    case["results"] = [{"shape": list(r.shape), "values": flat(r)} for r in results]
    if create_graph:
        weights = [uniform(list(r.shape)) for r in results]
        total = sum(torch.sum(r * w) for r, w in zip(results, weights))
        second = torch.autograd.grad(total, leaves, allow_unused=True)
        case["weights"] = [flat(w) for w in weights]
        case["second"] = [flat(torch.zeros(shape) if s is None else s) for s in second]
    return case


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    gen = torch.Generator().manual_seed(20261128)
    print(json.dumps({"torch": torch.__version__, "cases": [make_case(i, gen) for i in range(count)]}))


if __name__ == "__main__":
    main()
