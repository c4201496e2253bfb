#!/usr/bin/python3
"""Generates seeded random programs with gradient hooks and prints them, with PyTorch's gradients, as JSON.

Usage: hook_cases.py N   (N tensor-hook cases, then the module-hook cases, on stdout)

tests/test_hooks_pytorch.cpp replays each case in tapegrad and compares with what PyTorch computed
here. Everything is float64.

A tensor-hook case is
  {"seed", "mode", "leaves": [{"shape", "data"}], "ops": [{"op", "in": [node, ...]}],
   "loss": [node, ...], "hooks": [{"node", "kind", "c", "other"}], "retain": [node, ...],
   "expected": {"walks": [{"leaf_grads": [data...], "retained": [data...]}],
                "calls": [n per hook], "observed": [[data per call] per hook]}}
Nodes are numbered leaves first, then one per op in order. loss = the sum of sum(node) over
"loss". Hook kinds (registered in list order, after the forward, on leaves and intermediates):
scale (g * c), add (g + c), mul_by (g * node `other`, whose shape broadcasts to g's), observe
(records g, returns nothing), once (g * c on its first call, then removes itself).
Modes and their walks:
  backward        one backward: the leaves' grad and the retained intermediates' grad;
  backward_twice  two backward calls on one graph: leaf grads accumulate; retained grads are the
                  latest walk's (tapegrad's rule; PyTorch's accumulate, so they are reset here);
  create_graph    first: the gradients with respect to every leaf, recorded (tapegrad:
                  gradient(..., create_graph)); second: the gradient of the sum of those.
PyTorch 1.13's torch.autograd.grad does not run hooks registered on its leaf inputs (later
versions do, and tapegrad does for gradient()'s sources), so create_graph is computed here with
backward(create_graph=True) into .grad, where leaf hooks run on each walk's total, as they do for
gradient()'s sources in PyTorch 2.x and in tapegrad.

A module case runs one nn.Linear on each of "inputs", loss = sum_k (k + 1) sum(tanh(y_k)), with
forward hooks (scale: output * c; observe: records inputs and output; return_leaf: returns the
case's own leaf "leaf") and output-gradient hooks (observe; scale: grad * c). The output-gradient
hook is PyTorch's register_full_backward_pre_hook (PyTorch 2.x; 1.13 has not got it), emulated as
it is defined: each call's output, after the forward hooks, goes through an identity node whose
gradient the hook sees and may replace.
"""
import json
import random
import sys

import torch

UNARY = ["tanh", "exp", "sigmoid"]
BINARY = ["mul", "add", "sub"]
REDUCE = ["sum", "mean"]
LEAF_SHAPES = [[2, 3], [3], [1, 3], [2, 1], [3, 2], [2, 2], []]
HOOK_KINDS = ["scale", "add", "mul_by", "observe", "once"]


def broadcast(a, b):
    """The broadcast shape of a and b, or None."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and x != 1 and y != 1:
            return None
        out.append(max(x, y))
    return out[::-1]


def random_program(rng):
    leaves = [rng.choice(LEAF_SHAPES) for _ in range(rng.randint(2, 4))]
    shapes = list(leaves)
    ops = []
    # One leaf passed twice to a binary op.
    twice = rng.randrange(len(leaves))
    ops.append({"op": rng.choice(BINARY), "in": [twice, twice]})
    shapes.append(shapes[twice])
    for _ in range(rng.randint(2, 6)):
        kind = rng.random()
        if kind < 0.3:
            a = rng.randrange(len(shapes))
            ops.append({"op": rng.choice(UNARY), "in": [a]})
            shapes.append(shapes[a])
        elif kind < 0.45:
            pairs = [(a, b) for a in range(len(shapes)) for b in range(len(shapes))
                     if len(shapes[a]) == 2 and len(shapes[b]) == 2 and shapes[a][1] == shapes[b][0]]
            if not pairs:
                continue
            a, b = rng.choice(pairs)
            ops.append({"op": "matmul", "in": [a, b]})
            shapes.append([shapes[a][0], shapes[b][1]])
        elif kind < 0.55:
            a = rng.randrange(len(leaves), len(shapes))
            ops.append({"op": rng.choice(REDUCE), "in": [a]})
            shapes.append([])
        else:
            pairs = [(a, b) for a in range(len(shapes)) for b in range(len(shapes))
                     if broadcast(shapes[a], shapes[b]) is not None]
            a, b = rng.choice(pairs)
            ops.append({"op": rng.choice(BINARY), "in": [a, b]})
            shapes.append(broadcast(shapes[a], shapes[b]))
    used = {i for op in ops for i in op["in"]}
    loss = [n for n in range(len(leaves), len(shapes)) if n not in used]
    return leaves, ops, shapes, loss


def random_hooks(rng, n_leaves, shapes):
    hooks = []
    for _ in range(rng.randint(1, 5)):
        node = rng.randrange(len(shapes))
        kind = rng.choice(HOOK_KINDS)
        hook = {"node": node, "kind": kind, "c": round(rng.uniform(-2, 2), 3), "other": -1}
        if kind == "mul_by":
            # A leaf hook multiplies by another leaf; an intermediate's by an older node.
            candidates = range(n_leaves) if node < n_leaves else range(node)
            others = [o for o in candidates if o != node and broadcast(shapes[o], shapes[node]) == shapes[node]]
            if not others:
                hook["kind"] = "scale"
            else:
                hook["other"] = rng.choice(others)
        hooks.append(hook)
    return hooks


def data(t):
    return t.detach().reshape(-1).tolist()


def evaluate(op, args):
    if op in ("sum", "mean"):
        return getattr(torch, op)(args[0])
    return getattr(torch, op)(*args)


def make_hook(spec, nodes, calls, observed, i):
    done = [False]

    def hook(g):
        kind = spec["kind"]
        # once: a handle removed from inside the hook would stop it from the next gradient on; a
        # flag is that removal without changing the hook dict while PyTorch iterates it.
        if kind == "once" and done[0]:
            return None
        calls[i] += 1
        if kind == "scale":
            return g * spec["c"]
        if kind == "add":
            return g + spec["c"]
        if kind == "mul_by":
            return g * nodes[spec["other"]]
        if kind == "observe":
            observed[i].append(data(g))
            return None
        done[0] = True
        return g * spec["c"]

    return hook


def grad_or_zeros(t):
    return data(t.grad) if t.grad is not None else [0.0] * t.numel()


def run_case(case):
    """PyTorch's walks for the case, or None when its second-order target is a constant."""
    leaves = [torch.tensor(l["data"], dtype=torch.float64).reshape(l["shape"]).requires_grad_() for l in case["leaves"]]
    nodes = list(leaves)
    for op in case["ops"]:
        nodes.append(evaluate(op["op"], [nodes[i] for i in op["in"]]))
    loss = sum(nodes[n].sum() for n in case["loss"])
    calls = [0] * len(case["hooks"])
    observed = [[] for _ in case["hooks"]]
    for i, spec in enumerate(case["hooks"]):
        nodes[spec["node"]].register_hook(make_hook(spec, nodes, calls, observed, i))
    retained = [nodes[n] for n in case["retain"]]
    for r in retained:
        r.retain_grad()  # after the hooks: PyTorch 1.13 keeps what the hooks registered before it return

    def snapshot():
        walk = {"leaf_grads": [grad_or_zeros(l) for l in leaves], "retained": [grad_or_zeros(r) for r in retained]}
        for r in retained:
            r.grad = None
        return walk

    walks = []
    mode = case["mode"]
    if mode == "backward":
        loss.backward()
        walks.append(snapshot())
    elif mode == "backward_twice":
        loss.backward(retain_graph=True)
        walks.append(snapshot())
        loss.backward()
        walks.append(snapshot())
    else:
        loss.backward(create_graph=True)
        first = [l.grad for l in leaves]
        walks.append(snapshot())
        differentiable = [g for g in first if g is not None and g.requires_grad]
        if not differentiable:
            return None
        for l in leaves:
            l.grad = None
        sum(g.sum() for g in differentiable).backward()
        walks.append({"leaf_grads": [grad_or_zeros(l) for l in leaves], "retained": []})
    return {"walks": walks, "calls": calls, "observed": observed}


def tensor_case(seed):
    rng = random.Random(seed)
    while True:
        leaves, ops, shapes, loss = random_program(rng)
        intermediates = list(range(len(leaves), len(shapes)))
        case = {
            "seed": seed,
            "mode": ["backward", "backward_twice", "create_graph"][seed % 3],
            "leaves": [{"shape": s, "data": [round(rng.uniform(-1.5, 1.5), 4) for _ in range(int(torch.Size(s).numel()))]}
                       for s in leaves],
            "ops": ops,
            "loss": loss,
            "hooks": random_hooks(rng, len(leaves), shapes),
            "retain": rng.sample(intermediates, min(len(intermediates), rng.randint(0, 2))),
        }
        expected = run_case(case)
        if expected is not None:
            case["expected"] = expected
            return case


MODULE_CASES = [
    {"name": "observe_both", "forward_hooks": ["observe"], "grad_hooks": ["observe"], "calls": 1},
    {"name": "scale_output_then_scale_gradient", "forward_hooks": ["scale", "observe"], "grad_hooks": ["scale", "observe"], "calls": 1},
    {"name": "two_calls_scaled_gradients", "forward_hooks": ["observe"], "grad_hooks": ["observe", "scale"], "calls": 2},
    {"name": "forward_hook_returns_a_leaf", "forward_hooks": ["return_leaf"], "grad_hooks": ["observe", "scale"], "calls": 2},
]


def module_case(index, spec):
    rng = random.Random(1000 + index)
    torch.manual_seed(1000 + index)
    lin = torch.nn.Linear(3, 2).double()
    inputs = [torch.tensor([[rng.uniform(-1, 1) for _ in range(3)] for _ in range(2)], dtype=torch.float64,
                           requires_grad=True) for _ in range(spec["calls"])]
    leaf = torch.tensor([[rng.uniform(-1, 1) for _ in range(2)] for _ in range(2)], dtype=torch.float64,
                        requires_grad=True)
    c = round(rng.uniform(0.5, 2), 3)
    forward_observed, grad_observed = [], []

    def forward_hook(kind):
        def hook(module, args, output):
            if kind == "scale":
                return output * c
            if kind == "return_leaf":
                return leaf
            forward_observed.append([data(a) for a in args] + [data(output)])
            return None
        return hook

    def grad_hook(kind):
        def hook(g):
            if kind == "scale":
                return g * c
            grad_observed.append(data(g))
            return None
        return hook

    def output_gradient_hooks(module, args, output):
        through = output * 1.0  # the identity node whose gradient is this call's output's
        for kind in spec["grad_hooks"]:
            through.register_hook(grad_hook(kind))
        return through

    for kind in spec["forward_hooks"]:
        lin.register_forward_hook(forward_hook(kind))
    lin.register_forward_hook(output_gradient_hooks)
    loss = sum((k + 1) * torch.tanh(lin(x)).sum() for k, x in enumerate(inputs))
    loss.backward()
    return {
        "name": spec["name"], "forward_hooks": spec["forward_hooks"], "grad_hooks": spec["grad_hooks"], "c": c,
        "weight": data(lin.weight), "bias": data(lin.bias), "inputs": [data(x) for x in inputs], "leaf": data(leaf),
        "expected": {
            "weight_grad": grad_or_zeros(lin.weight), "bias_grad": grad_or_zeros(lin.bias),
            "input_grads": [grad_or_zeros(x) for x in inputs], "leaf_grad": grad_or_zeros(leaf),
            "forward_observed": forward_observed, "grad_observed": grad_observed,
        },
    }


def main(n):
    cases = [tensor_case(seed) for seed in range(n)]
    modules = [module_case(i, spec) for i, spec in enumerate(MODULE_CASES)]
    json.dump({"torch": torch.__version__, "cases": cases, "module_cases": modules}, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: hook_cases.py N")
    main(int(sys.argv[1]))
