#!/usr/bin/python3
"""torch.optim's answers for test_optim's differential test (tests/test_optim_pytorch.cpp): prints
JSON {"cases": [...]} on stdout. Each case is an optimiser (Adam, AdamW or SGD with its options),
parameter groups over float64 parameters of generated shapes (one of them empty in some cases),
and given gradients for every step (null: the parameter has no gradient that step). torch.optim
runs it and the case records every parameter after every step, and torch's state after step
`resume_at` in tapegrad's keys ("<parameter>.<buffer>", "<parameter>.step"). torch's SGD keeps no
step count, so its "step" is the number of updates the parameter has had. Exit 77 when torch is
missing."""
import json
import random
import sys

try:
    import torch
except ImportError:
    print("SKIPPED: python3-torch is not installed")
    sys.exit(77)

STEPS = 6
RESUME_AT = 3

OPTIONS = [
    ("adam", {"lr": 1e-3}),
    ("adam", {"lr": 0.05, "betas": [0.8, 0.95], "eps": 1e-6, "weight_decay": 0.1}),
    ("adam", {"lr": 0.02, "betas": [0.9, 0.99], "eps": 1e-8, "weight_decay": 0.01, "amsgrad": True}),
    ("adamw", {"lr": 0.01, "weight_decay": 0.01}),
    ("adamw", {"lr": 0.05, "betas": [0.5, 0.9], "eps": 1e-7, "weight_decay": 0.2, "amsgrad": True}),
    ("sgd", {"lr": 0.1}),
    ("sgd", {"lr": 0.05, "momentum": 0.9}),
    ("sgd", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.05}),
    ("sgd", {"lr": 0.02, "momentum": 0.8, "weight_decay": 0.05, "nesterov": True}),
]

SHAPE_SETS = [[[3], [2, 5]], [[37]], [[4, 3], [0], [1]], [[2, 3, 4], [5]]]


def torch_optimizer(kind, options, groups):
    cls = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}[kind]
    kwargs = dict(options)
    if "betas" in kwargs:
        kwargs["betas"] = tuple(kwargs["betas"])
    return cls(groups, **kwargs)


def flat(t):
    return t.detach().reshape(-1).tolist()


def state_in_tapegrad_keys(optimizer, names, updates):
    out = {}
    for index, (name, p) in enumerate(names):
        state = optimizer.state.get(p, {})
        if updates[index] == 0:
            continue
        out[name + ".step"] = {"shape": [], "values": [float(state["step"]) if "step" in state else updates[index]]}
        for buffer, value in state.items():
            if buffer != "step" and value is not None:
                out[name + "." + buffer] = {"shape": list(value.shape), "values": flat(value)}
    return out


def make_case(number, kind, options, rng):
    shapes = SHAPE_SETS[number % len(SHAPE_SETS)]
    names = [f"layer{i}.weight" for i in range(len(shapes))]
    starts = [[rng.uniform(-2.0, 2.0) for _ in range(torch.Size(s).numel())] for s in shapes]
    # The second parameter, when there is one, has no gradient at step 2; two groups with their own
    # lr and weight_decay when there are three parameters.
    grads = [[None if (step == 1 and i == 1) else [rng.gauss(0.0, 1.0) for _ in start] for i, start in enumerate(starts)]
             for step in range(STEPS)]
    lr, wd = options["lr"], options.get("weight_decay", 0.0)
    groups = [{"params": list(range(len(shapes))), "lr": lr, "weight_decay": wd}]
    if len(shapes) == 3:
        groups = [{"params": [0], "lr": lr, "weight_decay": wd}, {"params": [1, 2], "lr": lr * 0.5, "weight_decay": wd * 2.0}]

    tensors = [torch.tensor(start, dtype=torch.float64).reshape(shape).requires_grad_() for start, shape in zip(starts, shapes)]
    optimizer = torch_optimizer(kind, options, [{"params": [tensors[i] for i in g["params"]], "lr": g["lr"],
                                                 "weight_decay": g["weight_decay"]} for g in groups])
    after, updates, resume_state = [], [0] * len(tensors), None
    for step in range(STEPS):
        for i, (t, g) in enumerate(zip(tensors, grads[step])):
            t.grad = None if g is None else torch.tensor(g, dtype=torch.float64).reshape(t.shape)
            updates[i] += g is not None
        optimizer.step()
        after.append([flat(t) for t in tensors])
        if step + 1 == RESUME_AT:
            resume_state = state_in_tapegrad_keys(optimizer, list(zip(names, tensors)), updates)
    return {"name": f"{number}:{kind}:{json.dumps(options)}", "kind": kind, "options": options,
            "params": [{"name": n, "shape": s, "start": st} for n, s, st in zip(names, shapes, starts)],
            "groups": groups, "grads": grads, "after": after, "resume_at": RESUME_AT, "state_at_resume": resume_state}


def main():
    rng = random.Random(20261128)
    cases = [make_case(number, kind, options, rng) for number, (kind, options) in enumerate(OPTIONS)]
    json.dump({"torch": torch.__version__, "cases": cases}, sys.stdout)


if __name__ == "__main__":
    main()
