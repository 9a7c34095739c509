#!/usr/bin/env python3
"""Write docs/cli.md from its prose fragments and the commands' option tables.

    gen_cli_doc.py --gpushare build/gpushare            # rewrite docs/cli.md
    gen_cli_doc.py --gpushare build/gpushare --check    # exit 1 when docs/cli.md is stale

docs/cli.md is committed (it is read on GitHub) but written by this script
(`cmake --build build --target cli-doc` runs it), in the manner of curl's
cmdline-opts folder: the prose lives in docs/cli/*.md, joined in the order of
their names, and a line `@options CMD@` there becomes the table of every
option of `gpushare CMD` with its meaning and default, as the hidden
`gpushare --doc CMD` prints it from the table that also gives the command's
parsing, its --help (so its man page) and the shell completion; a line
`@workloads@` the workloads' options (`gpushare --doc workloads`). The ctest
check.cli_doc runs --check, so a change to a table or a fragment without
the regenerated docs/cli.md fails, and so does a default that a --help
shows and the command's section of docs/cli.md does not.
"""

import argparse
import difflib
import os
import re
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRAGMENTS = os.path.join(SRC, "docs", "cli")
TARGET = os.path.join(SRC, "docs", "cli.md")
REGENERATE = "cmake --build build --target cli-doc"
HEADER = ("<!-- Written by scripts/gen_cli_doc.py from docs/cli/*.md and the option tables of cli/:\n"
          "     edit those, then run `%s`. -->\n\n" % REGENERATE)
MARKER = re.compile(r"^@(options (.+)|workloads)@$")


def doc(gpushare, what):
    p = subprocess.run([gpushare, "--doc", what], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("gen_cli_doc: '%s --doc %s' failed (exit %d): %s" % (gpushare, what, p.returncode, p.stderr.strip()))
    return p.stdout


def expand(gpushare, m):
    """The text of a marker line."""
    if m.group(2):
        return ("Every option of `gpushare %s`, from the table that gives its parsing and its `--help`:\n\n%s"
                % (m.group(2), doc(gpushare, m.group(2))))
    return ("The workloads and their options, from their tables (`gpushare bench --help` lists them too):\n\n%s"
            % doc(gpushare, "workloads"))


def generate(gpushare):
    names = sorted(n for n in os.listdir(FRAGMENTS) if n.endswith(".md"))
    if not names:
        sys.exit("gen_cli_doc: no fragments in %s" % FRAGMENTS)
    out = [HEADER]
    for i, name in enumerate(names):
        with open(os.path.join(FRAGMENTS, name), encoding="utf-8") as f:
            text = f.read()
        if not text.endswith("\n"):
            sys.exit("gen_cli_doc: %s does not end with a newline" % name)
        lines = []
        for line in text.splitlines(keepends=True):
            m = MARKER.match(line.rstrip("\n"))
            lines.append(expand(gpushare, m) if m else line)
        out.append(("\n" if i else "") + "".join(lines))
    return "".join(out)


def missing_defaults(gpushare, text):
    """'CMD: (default X)' for every default a --help shows that its command's section does not."""
    p = subprocess.run([gpushare, "--complete", "commands"], stdout=subprocess.PIPE, text=True, check=True)
    missing = []
    for cmd in p.stdout.split() + ["farm status"]:
        h = subprocess.run([gpushare] + cmd.split() + ["--help"], stdout=subprocess.PIPE, text=True).stdout
        m = re.search(r"^## gpushare %s\n(.*?)(?=^## |\Z)" % re.escape(cmd.split()[0]), text, re.S | re.M)
        section = m.group(1) if m else ""
        for d in re.findall(r"\(default ([^)]*)\)", re.sub(r"\n\s+", " ", h)):
            if d not in section:
                missing.append("%s: (default %s)" % (cmd, d))
    return missing


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpushare", required=True, help="the built gpushare binary")
    ap.add_argument("--check", action="store_true", help="compare with docs/cli.md instead of writing it")
    ap.add_argument("--out", default=TARGET, help="the file to write or check (default docs/cli.md)")
    args = ap.parse_args()
    text = generate(args.gpushare)
    if not args.check:
        with open(args.out + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(args.out + ".tmp", args.out)
        return 0
    try:
        with open(args.out, encoding="utf-8") as f:
            have = f.read()
    except OSError as e:
        sys.exit("gen_cli_doc: cannot read '%s': %s" % (args.out, e.strerror))
    if have == text:
        missing = missing_defaults(args.gpushare, text)
        if missing:
            print("gen_cli_doc: defaults --help shows that docs/cli.md does not:\n  " + "\n  ".join(missing),
                  file=sys.stderr)
            return 1
        print("gen_cli_doc: %s is up to date" % args.out)
        return 0
    diff = list(difflib.unified_diff(have.splitlines(), text.splitlines(), "docs/cli.md (committed)",
                                     "docs/cli.md (generated)", lineterm="", n=1))
    print("\n".join(diff[:60]) + ("\n..." if len(diff) > 60 else ""))
    print("gen_cli_doc: docs/cli.md is stale: it is not what docs/cli/*.md and the option tables give;\n"
          "regenerate it with `%s` (or scripts/gen_cli_doc.py --gpushare build/gpushare) and commit it"
          % REGENERATE, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
