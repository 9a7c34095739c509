#!/usr/bin/env python3
"""Every path of the tree that a doc, a comment or a message names exists.

A path is a token that starts with one of the tree's folders (lib/, cli/,
docs/, include/, tests/, scripts/) at a word boundary (not after '/', '.',
'$' or a letter, so /usr/lib/... and $PREFIX/include/... are not paths),
made of letters, digits and . _ - /, with an optional #anchor. A token
followed by '<', '*', '{', '$', '%' or '[' is a pattern (lib/<layer>/,
tests/cli/test_*.sh), not a path. A path after ../ in a Markdown file is
read from that file's folder. A #anchor into a Markdown file must name one
of its headings (GitHub's anchors).

Not the tree's, so not checked: files of the installed tree (lib/lib*.a,
lib/*.so*, lib/pkgconfig/...), paths git ignores (tests/k8s/node_modules),
and a program the build makes: tests/<dir>/<name> where tests/<dir>/<name>.c
or .cu is there, and tests/helpers/<name>, the folder of the build tree
that holds the programs of tests/helpers/*.c and tests/gpu/*.cu.

The files read: the tracked text files of the tree (git ls-files, or a walk
without git) whose names end in one of TEXT_EXT, or CMakeLists.txt, less
the planted breaches of tests/layers_plants/ (they name where they would
stand). --plant FILE reads that file alone, for the planted stale paths of
tests/layers_plants/stale_paths.md. Prints one line per missing path and
exits 1 when there is any.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPS = ("lib", "cli", "docs", "include", "tests", "scripts")
TEXT_EXT = (".c", ".h", ".cu", ".cuh", ".py", ".sh", ".md", ".txt", ".cmake", ".yml", ".yaml", ".sbatch", ".toml",
            ".html", ".in")
SKIP = ("tests/layers_plants/",)
PATH = re.compile(r"(?<![\w./$-])((?:\.\./)*)((?:%s)/[\w./-]*)(#[\w-]+)?(.?)" % "|".join(TOPS))
PATTERN_NEXT = set("<*{$%[")


def tree_files():
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True, capture_output=True).stdout
        files = [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, names in os.walk(ROOT):
            # what .gitignore leaves out of the tree: build outputs, the npm
            # packages of tests/k8s (a fresh root without git walks the tree)
            dirnames[:] = [d for d in dirnames if not d.startswith((".git", "build"))
                           and d not in ("node_modules", "__pycache__", "out")]
            files += [os.path.relpath(os.path.join(dirpath, n), ROOT) for n in names]
    return sorted(f for f in files if (f.endswith(TEXT_EXT) or os.path.basename(f) == "CMakeLists.txt")
                  and not f.startswith(SKIP) and os.path.isfile(os.path.join(ROOT, f)))


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    s = heading.strip().lower()
    s = re.sub(r"[`*_]", lambda m: m.group(0) if m.group(0) == "_" else "", s)
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


ANCHORS = {}


def anchors(path):
    if path not in ANCHORS:
        found, seen = set(), {}
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            fence = False
            for line in f:
                if line.startswith("```"):
                    fence = not fence
                m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m:
                    s = slug(m.group(1))
                    n = seen.get(s, 0)
                    seen[s] = n + 1
                    found.add(s if n == 0 else f"{s}-{n}")
                for a in re.findall(r'<a (?:name|id)="([^"]+)"', line):
                    found.add(a)
        ANCHORS[path] = found
    return ANCHORS[path]


INSTALLED = re.compile(r"lib/(lib[\w-]+\.(a|so)(\.[\d.]+)?|pkgconfig/.*)$")


def built_program(path):
    if not path.startswith("tests/") or "." in os.path.basename(path):
        return False
    stems = [path]
    if path.startswith("tests/helpers/"):
        stems.append("tests/gpu/" + os.path.basename(path))
    return any(os.path.isfile(os.path.join(ROOT, s + ext)) for s in stems for ext in (".c", ".cu"))


def ignored(paths):
    """The paths git ignores (a folder is asked for with something under it)."""
    if not paths:
        return set()
    asked = "".join(f"{p}\n{p}/-\n" for p in paths)
    try:
        out = subprocess.run(["git", "-C", ROOT, "check-ignore", "--no-index", "--stdin"], input=asked,
                             capture_output=True, text=True).stdout
    except OSError:
        return set()
    return {line[:-2] if line.endswith("/-") else line for line in out.splitlines()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--plant", help="read this file (relative to the tree) alone")
    args = ap.parse_args()
    errors, missing, n_paths = [], [], 0
    for f in [args.plant] if args.plant else tree_files():
        try:
            with open(os.path.join(ROOT, f), encoding="utf-8") as fh:
                text = fh.read()
        except UnicodeDecodeError:
            continue
        for lineno, line in enumerate(text.split("\n"), 1):
            for m in PATH.finditer(line):
                up, path, anchor, after = m.groups()
                if after in PATTERN_NEXT:
                    continue
                path = path.rstrip(".")
                if up:
                    if not f.endswith(".md"):
                        continue
                    path = os.path.normpath(os.path.join(os.path.dirname(f), up + path))
                n_paths += 1
                full = os.path.join(ROOT, path)
                if not os.path.exists(full):
                    if not INSTALLED.match(path) and not built_program(path):
                        missing.append((f, lineno, path))
                elif anchor and path.endswith(".md") and anchor[1:] not in anchors(path):
                    errors.append(f"{f}:{lineno}: names {path}{anchor}, a heading {path} does not have")
    gone = ignored(sorted({p for _, _, p in missing}))
    errors += [f"{f}:{n}: names {p}, which is not there" for f, n, p in missing if p not in gone]
    for e in sorted(errors):
        print(e)
    if errors:
        print(f"check_paths: {len(errors)} of {n_paths} paths named are not there")
        return 1
    print(f"check_paths: {n_paths} paths named, all there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
