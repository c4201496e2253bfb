#!/usr/bin/env python3
"""The floor plan, checked: every quoted #include of the project's own files must stay on the
including file's floor or go down, never up; no two folders may include each other, directly or
through others; and no installed header may include one that is not installed.

Usage: check_layers.py ROOT       checks the tree at ROOT (exit 1 and one line per violation)
       check_layers.py --self-test  shows that each kind of violation is caught
"""
import os
import re
import sys

# Bottom to top. A file's floor is the longest prefix here that its path starts with; "tapegrad.h"
# is the umbrella header at the root.
FLOORS = [
    "autograd/base",      # errors, argument checks, shapes, call sites, the Generator, scoped modes
    "autograd/memory",    # allocator, malloc policy, arena planner, step arena, step capture
    "autograd/kernels",   # loops on plain arrays: layout/, simd/, gemm/, einsum/
    "autograd/core",      # Tensor, the tape, gradient routing, make_result, custom ops, anomaly
    "autograd/ops",       # the differentiable ops by family, the functional transforms
    "autograd/testing",   # gradcheck and its GoogleTest macros
    "optim",              # optimisers, schedules, clipping (they need tensors, not modules)
    "nn",                 # modules, the probe mixin, masks, init
    "nn/io",              # safetensors, .npy, training checkpoints
    "nn/copy_task",       # the copy task's model, data and trainer (uses optim)
    "distributed",        # data-parallel training over MPI
    "study",              # the attention-study library
    "tapegrad.h",         # the umbrella header
    "examples",           # programs, and their command-line parts (examples/cli)
    "bench",
    "fuzz",
    "tests",
]

# Folders whose headers are not installed (cmake/install.cmake): an installed header including
# one of them would not compile for a user.
PRIVATE = ["autograd/kernels/", "nn/copy_task/"]
PRIVATE_FOLDER_NAME = "detail"

# Includes that go up a floor on purpose: (including file, included file): why.
EXCEPTIONS = {
    ("autograd/core/routing.cpp", "autograd/ops/operators.h"):
        "a create_graph walk sums the gradients it records with the recorded add, an op",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
SOURCE_SUFFIXES = (".h", ".cpp", ".inc", ".in")


def floor_of(path):
    best = None
    for rank, prefix in enumerate(FLOORS):
        if path == prefix or path.startswith(prefix + "/"):
            if best is None or len(prefix) > len(FLOORS[best]):
                best = rank
    return best


def folder_of(path):
    """The folder a file is in, with a detail/ folder counted as its parent's."""
    parts = path.split("/")[:-1]
    if parts and parts[-1] == PRIVATE_FOLDER_NAME:
        parts = parts[:-1]
    return "/".join(parts) or "."


def is_private(path):
    return any(path.startswith(p) for p in PRIVATE) or f"/{PRIVATE_FOLDER_NAME}/" in path


def find_cycle(edges):
    """A list of folders forming a cycle in the folder graph, or None."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    state = {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt, stack)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [])
            if cycle:
                return cycle
    return None


def check(sources, exists):
    """sources: {path: text} of the project's files; exists(path): whether an include names a
    project file. Returns the violations, one line each."""
    problems = []
    folder_edges = set()
    for path in sorted(sources):
        here = floor_of(path)
        if here is None:
            continue
        for included in INCLUDE.findall(sources[path]):
            if not exists(included):
                continue  # a third-party or generated header
            there = floor_of(included)
            if there is None:
                problems.append(f"{path}: includes {included}, which is on no floor (add it to FLOORS)")
                continue
            if there > here and (path, included) not in EXCEPTIONS:
                problems.append(f"{path} ({FLOORS[here]}) includes {included} from a higher floor "
                                f"({FLOORS[there]})")
            if path.endswith(".h") and is_installed(path) and is_private(included):
                problems.append(f"{path} is installed but includes {included}, which is not")
            if folder_of(path) != folder_of(included) and (path, included) not in EXCEPTIONS:
                folder_edges.add((folder_of(path), folder_of(included)))
    cycle = find_cycle(folder_edges)
    if cycle:
        problems.append("folders include each other: " + " -> ".join(cycle))
    return problems


def is_installed(path):
    """Whether cmake/install.cmake installs this header."""
    installed_roots = ("autograd/", "nn/", "optim/", "study/", "distributed/")
    return (path == "tapegrad.h" or path.startswith(installed_roots)) and not is_private(path)


def read_tree(root):
    sources = {}
    for top in FLOORS:
        start = os.path.join(root, top)
        if os.path.isfile(start):
            sources[top] = open(start, encoding="utf-8").read()
            continue
        for dirpath, _, names in os.walk(start):
            for name in names:
                if name.endswith(SOURCE_SUFFIXES):
                    full = os.path.join(dirpath, name)
                    sources[os.path.relpath(full, root)] = open(full, encoding="utf-8").read()
    return sources


def self_test():
    """Each kind of violation, planted in a small tree, must be reported; the clean tree must not."""
    clean = {
        "autograd/base/errors.h": "",
        "autograd/core/tensor.h": '#include "autograd/base/errors.h"\n',
        "autograd/kernels/simd/map.h": '#include "autograd/base/errors.h"\n',
        "autograd/core/tensor.cpp": '#include "autograd/kernels/simd/map.h"\n',
        "nn/module.h": '#include "autograd/core/tensor.h"\n',
    }
    planted = {
        "upward include": {"autograd/base/errors.h": '#include "autograd/core/tensor.h"\n'},
        "installed header including a kernel": {"nn/module.h": '#include "autograd/kernels/simd/map.h"\n'},
        "folder cycle": {"nn/a/x.h": '#include "nn/b/y.h"\n', "nn/b/y.h": '#include "nn/a/x.h"\n'},
        "file on no floor": {"nn/module.h": '#include "elsewhere/thing.h"\n', "elsewhere/thing.h": ""},
    }
    failures = []
    if check(clean, lambda p: p in clean):
        failures.append(f"the clean tree is reported: {check(clean, lambda p: p in clean)}")
    for what, files in planted.items():
        tree = {**clean, **files}
        if not check(tree, lambda p, tree=tree: p in tree):
            failures.append(f"a planted {what} is not reported")
    for line in failures:
        print(line)
    print("self-test:", "FAILED" if failures else "every planted violation was reported")
    return 1 if failures else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = sys.argv[1]
    problems = check(read_tree(root), lambda p: os.path.isfile(os.path.join(root, p)))
    for line in problems:
        print(line)
    print(f"{len(problems)} layering problem(s)" if problems else "every include stays on its floor or goes down")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
