#!/usr/bin/env python3
"""No dangling reference in README.md and docs/*.md: every path they name exists.

Checked in the prose (code blocks are a test's business, see snippets.py):
- a Markdown link or image, [text](target): the target, relative to the document's folder, must
  exist, and its #anchor, if any, must be a heading of the target document (GitHub's anchors);
- a repository path written in the text, in backticks or not: a word that starts with one of the
  repository's top-level folders or files (autograd/..., tests/..., tapegrad.h, ...), relative to
  the root. `*` is a wildcard, {a,b} an alternative, a trailing :LINE is dropped; a word holding a
  <placeholder> is not checked. Build trees (a folder with a CMakeCache.txt) are not the
  repository's, so build/... is not checked.

Usage: links.py ROOT          exit 1 and one line per dangling reference, naming the document and line
       links.py --self-test   shows that each kind of dangling reference is caught
"""
import glob
import os
import re
import sys

from markdown import anchors, documents, parse
from tool import make_tree, report

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
WORD = re.compile(r"[A-Za-z0-9_.\-/{},*<>:]+")


def top_level_names(root):
    names = set()
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if name.startswith(".") and name != ".ci":
            continue
        if os.path.isdir(path) and os.path.exists(os.path.join(path, "CMakeCache.txt")):
            continue
        names.add(name)
    return names


def expand_braces(word):
    match = re.search(r"\{([^{}]*)\}", word)
    if not match:
        return [word]
    return [expanded for choice in match.group(1).split(",")
            for expanded in expand_braces(word[:match.start()] + choice + word[match.end():])]


def repository_paths(text, tops):
    """The words of `text` that name a path in the repository."""
    for word in WORD.findall(text.replace("`", " ")):
        word = re.sub(r":\d+$", "", word).rstrip(".,:;")
        if "<" in word or ">" in word:
            continue
        first = word.split("/")[0]
        if first in tops and (word == first or "/" in word):
            yield word


def exists(root, path):
    return all(glob.glob(os.path.join(root, candidate)) for candidate in expand_braces(path))


def check(root):
    problems = []
    tops = top_level_names(root)
    for doc in documents(root):
        folder = os.path.dirname(doc)
        for line, text in parse(root, doc)[1]:
            for target in LINK.findall(text):
                if re.match(r"^[a-z]+:", target):
                    continue  # a web address
                path, _, fragment = target.partition("#")
                resolved = os.path.normpath(os.path.join(folder, path)) if path else doc
                if not os.path.exists(os.path.join(root, resolved)):
                    problems.append(f"{doc}:{line}: the link {target} names {resolved}, which does not exist")
                elif fragment and resolved.endswith(".md") and fragment not in anchors(root, resolved):
                    problems.append(f"{doc}:{line}: the link {target}: {resolved} has no heading with the anchor "
                                    f"#{fragment}")
            without_links = LINK.sub(" ", text)
            for path in repository_paths(without_links, tops):
                if not exists(root, path):
                    problems.append(f"{doc}:{line}: {path} does not exist")
    return problems


def self_test():
    """Each kind of dangling reference, planted in a small tree, is reported with its line."""
    root = make_tree({"docs/other.md": "# Other page\n\n## A section\n", "autograd/core/tape.h": "",
                      "autograd/ops/a.h": "", "autograd/ops/a.cpp": "", "build/CMakeCache.txt": ""})
    good = ("# Page\n\nSee [the other](other.md#a-section), `autograd/core/tape.h:12`, autograd/ops/a.{h,cpp},\n"
            "`autograd/ops/*.h`, `autograd/<floor>/x.h`, `build/tests/test_x` and [a site](https://example.org).\n"
            "\n```sh\nautograd/missing_in_a_code_block.h\n```\n")
    failures = []
    for path, text in {"README.md": "# R\n\n[page](docs/page.md)\n", "docs/page.md": good}.items():
        with open(os.path.join(root, path), "w") as f:
            f.write(text)
    if check(root):
        failures.append(f"a tree without dangling references gave {check(root)}")
    cases = [
        ("a missing file in backticks", "`autograd/core/gone.h`", "docs/page.md:10: autograd/core/gone.h does not exist"),
        ("a missing file in plain text", "see autograd/core/gone.h.", "docs/page.md:10: autograd/core/gone.h does not exist"),
        ("a link to a missing page", "[x](missing.md)", "docs/page.md:10: the link missing.md names docs/missing.md"),
        ("a link to a missing anchor", "[x](other.md#no-such-section)",
         "docs/page.md:10: the link other.md#no-such-section: docs/other.md has no heading"),
        ("an alternative that is missing", "autograd/ops/a.{h,inc}", "docs/page.md:10: autograd/ops/a.{h,inc} does not exist"),
    ]
    for what, text, expected in cases:
        with open(os.path.join(root, "docs/page.md"), "w") as f:
            f.write(good + "\n" + text + "\n")
        problems = check(root)
        if not any(p.startswith(expected) for p in problems):
            failures.append(f"{what}: expected a problem starting with {expected!r}, got {problems}")
    return report(failures, "self-test: ")


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) == 2:
        return report(check(argv[1]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
