"""What the documentation checks read of a Markdown file: its fenced code blocks, its prose (the
lines outside them) and its headings' anchors, as CommonMark and GitHub read them.

The documents checked are README.md and docs/*.md (documents()).
"""
import glob
import os
import re
from dataclasses import dataclass

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")


@dataclass
class Block:
    path: str        # the document, relative to the repository root
    line: int        # the opening fence's line, from 1
    language: str    # the info string's first word ("" when none)
    name: str        # its second word ("" when none): a snippet's name
    first_line: int  # the line of the code's first line
    code: str        # the code, the fence's indentation removed


def documents(root):
    """README.md and docs/*.md, relative to root."""
    docs = sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))
    return ["README.md"] + docs


def _lines(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read().split("\n")


def parse(root, path):
    """(blocks, prose): the fenced blocks, and (line number, text) of every line outside them."""
    blocks, prose = [], []
    lines = _lines(root, path)
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening or "`" in opening.group(3):
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        indent, fence, info = len(opening.group(1)), opening.group(2), opening.group(3).split()
        closing = re.compile(r"^\s*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
        end = i + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        code = [line[min(indent, len(line) - len(line.lstrip())):] for line in lines[i + 1:end]]
        blocks.append(Block(path, i + 1, info[0] if info else "", info[1] if len(info) > 1 else "",
                            i + 2, "\n".join(code) + "\n"))
        i = end + 1
    return blocks, prose


def anchor(heading_text):
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading_text)  # a link's text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(root, path):
    """Every anchor a document's headings give, duplicates numbered as GitHub numbers them."""
    seen, result = {}, set()
    for _, text in parse(root, path)[1]:
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", text)
        if not heading:
            continue
        base = anchor(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result
