"""What the checks of the documents share: a tree of files to plant problems in, and the report."""
import os
import tempfile


def make_tree(files):
    """A new folder holding `files` ({relative path: text}); its path."""
    root = tempfile.mkdtemp()
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w", encoding="utf-8") as f:
            f.write(text)
    return root


def report(problems, prefix=""):
    """Prints one line per problem; the exit status: 1 when there is any."""
    for problem in problems:
        print(prefix + problem)
    return 1 if problems else 0
