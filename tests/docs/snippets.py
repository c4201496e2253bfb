#!/usr/bin/env python3
"""The C++ code of README.md and docs/*.md, compiled by tests as written.

Every ```cpp block carries a name, ```cpp NAME (GitHub shows the first word of the info string as
the language and ignores the rest). `extract` copies each named block into OUT/NAME.inc, with a
#line directive, so that a compile error in it names the document and its line; a test compiles
the block by including "doc_snippets/NAME.inc" where the block's variables exist (a namespace-scope
block at namespace scope, statements inside a test). `check` fails for a block that no test under
tests/ includes, and for what would let one slip by: a C++ block without a name, a fence without a
language (write ```text for output), a name used twice, an include of a name no block has.

Usage: snippets.py extract ROOT OUT   writes OUT/NAME.inc for every named cpp block (at configure time)
       snippets.py check ROOT         exit 1 and one line per problem, naming the document and line
       snippets.py --self-test        shows that each kind of problem is caught
"""
import os
import re
import sys
import tempfile

from markdown import documents, parse
from tool import make_tree, report

CPP_LANGUAGES = {"cpp", "c++", "cxx", "cc", "c", "h", "hpp"}
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"doc_snippets/([^"]+)\.inc"', re.MULTILINE)
TEST_SUFFIXES = (".cpp", ".h", ".inc")


def cpp_blocks(root):
    for path in documents(root):
        for block in parse(root, path)[0]:
            if block.language.lower() in CPP_LANGUAGES:
                yield block


def extract(root, out):
    os.makedirs(out, exist_ok=True)
    wanted = {}
    for block in cpp_blocks(root):
        if NAME.match(block.name) and block.name not in wanted:
            wanted[block.name] = (f"// Generated from {block.path} by tests/docs/snippets.py: edit the document.\n"
                                  f'#line {block.first_line} "{block.path}"\n{block.code}')
    for name, text in wanted.items():
        target = os.path.join(out, name + ".inc")
        if not os.path.exists(target) or open(target, encoding="utf-8").read() != text:
            with open(target, "w", encoding="utf-8") as f:  # rewritten only when it changed
                f.write(text)
    for stale in os.listdir(out):
        if stale.endswith(".inc") and stale[:-4] not in wanted:
            os.remove(os.path.join(out, stale))


def included_snippets(root):
    """{name: "tests/file.cpp:line"} of every doc_snippets include under tests/."""
    found = {}
    for folder, _, files in os.walk(os.path.join(root, "tests")):
        for file in sorted(files):
            if not file.endswith(TEST_SUFFIXES):
                continue
            path = os.path.join(folder, file)
            text = open(path, encoding="utf-8").read()
            for match in INCLUDE.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.setdefault(match.group(1), f"{os.path.relpath(path, root)}:{line}")
    return found


def check(root):
    problems, named = [], {}
    for path in documents(root):
        for block in parse(root, path)[0]:
            where = f"{block.path}:{block.line}"
            if not block.language:
                problems.append(f"{where}: a code block without a language: write ```cpp NAME for C++ (compiled "
                                "by a test), or ```text, ```sh, ... for anything else")
    for block in cpp_blocks(root):
        where = f"{block.path}:{block.line}"
        if not NAME.match(block.name):
            problems.append(f"{where}: a ```{block.language} block without a name: write ```cpp NAME and include "
                            f'"doc_snippets/NAME.inc" in a test (tests/test_doc_snippets.cpp)')
        elif block.name in named:
            problems.append(f"{where}: the snippet name '{block.name}' is also the name of the block at "
                            f"{named[block.name]}")
        else:
            named[block.name] = where
    included = included_snippets(root)
    for name, where in named.items():
        if name not in included:
            problems.append(f"{where}: the ```cpp block '{name}' is compiled by no test: include "
                            f'"doc_snippets/{name}.inc" in a test (tests/test_doc_snippets.cpp)')
    for name, where in included.items():
        if name not in named:
            problems.append(f"{where}: includes doc_snippets/{name}.inc, but no ```cpp block of README.md or "
                            "docs/*.md has that name")
    return problems


def self_test():
    """Each kind of problem, planted in a small tree, is reported with its document and line."""
    good_doc = "# Doc\n\n```cpp compiled\nint x = 1;\n```\n\n```text\noutput\n```\n\n- a list\n\n  ```cpp nested\n  int y = 2;\n  ```\n"
    good_test = '#include "doc_snippets/compiled.inc"\nvoid f() {\n#include "doc_snippets/nested.inc"\n}\n'
    base = {"README.md": "# R\n", "docs/page.md": good_doc, "tests/test_x.cpp": good_test}
    failures = []
    problems = check(make_tree(base))
    if problems:
        failures.append(f"a tree whose blocks are all compiled gave {problems}")
    cases = [
        ("a block no test includes", {"docs/page.md": good_doc + "\n```cpp orphan\nint z;\n```\n"},
         "docs/page.md:17: the ```cpp block 'orphan' is compiled by no test"),
        ("a C++ block without a name", {"README.md": "# R\n\n```cpp\nint z;\n```\n"},
         "README.md:3: a ```cpp block without a name"),
        ("a fence without a language", {"README.md": "# R\n\n```\nint z;\n```\n"},
         "README.md:3: a code block without a language"),
        ("a name used twice", {"README.md": "# R\n\n```cpp compiled\nint z;\n```\n"},
         "docs/page.md:3: the snippet name 'compiled' is also the name of the block at README.md:3"),
        ("an include of no block", {"tests/test_y.cpp": '#include "doc_snippets/gone.inc"\n'},
         "tests/test_y.cpp:1: includes doc_snippets/gone.inc"),
    ]
    for what, changes, expected in cases:
        problems = check(make_tree({**base, **changes}))
        if not any(p.startswith(expected) for p in problems):
            failures.append(f"{what}: expected a problem starting with {expected!r}, got {problems}")

    root, out = make_tree(base), tempfile.mkdtemp()
    with open(os.path.join(out, "removed_block.inc"), "w") as f:
        f.write("stale\n")
    extract(root, out)
    nested = open(os.path.join(out, "nested.inc")).read()
    if sorted(os.listdir(out)) != ["compiled.inc", "nested.inc"]:
        failures.append(f"extract wrote {sorted(os.listdir(out))}, not the two named blocks alone")
    if '#line 14 "docs/page.md"\nint y = 2;\n' not in nested:
        failures.append(f"the nested block's file lacks its #line and unindented code: {nested!r}")
    return report(failures, "self-test: ")


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) == 4 and argv[1] == "extract":
        extract(argv[2], argv[3])
        return 0
    if len(argv) == 3 and argv[1] == "check":
        return report(check(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
