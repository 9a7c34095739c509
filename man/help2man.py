#!/usr/bin/env python3
"""Write gpushare's man pages from its own --help output.

Run by the build (cmake/install.cmake) with the freshly built binary:

    help2man.py --gpushare build/gpushare --version 0.1.0 --out build/man

It writes gpushare.1 from `gpushare --help` and gpushare-<cmd>.1 from
`gpushare <cmd> --help` for every command listed there: the help text, laid
out in roff, so the two cannot drift. With --prose docs/cli, each page also
gets the prose that docs/cli.md is written from (docs/cli/NN-<cmd>.md, as its
DETAILS; gpushare(1) the conventions, the environment and the exit
statuses), so the page, --help and docs/cli.md share one source too.

The help text follows a few layout rules (cli/*.c), which this turns into roff:
  - the lines up to the first blank line are the usage: SYNOPSIS;
  - a line at column 0 that ends with ':' and starts a paragraph is a heading;
  - a line indented by two spaces is an item: its tag up to the first run of
    two or more spaces, then its text; deeper-indented lines continue the
    text (or, when they start with '-', are items of their own);
  - other lines at column 0 are running text; a blank line ends a paragraph.
"""

import argparse
import os
import re
import subprocess
import sys


def roff_escape(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return s


def roff_line(s):
    s = roff_escape(s)
    if s.startswith(".") or s.startswith("'"):
        s = "\\&" + s
    return s


def help_of(gpushare, args):
    p = subprocess.run([gpushare] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0 or not p.stdout.startswith("usage: "):
        sys.exit("help2man: '%s %s' failed (exit %d): %s" % (gpushare, " ".join(args), p.returncode, p.stderr.strip()))
    return p.stdout.rstrip("\n").split("\n")


def split_item(text):
    """'--batch B      items per request' -> ('--batch B', 'items per request')."""
    m = re.match(r"(\S.*?)(?: {2,}(\S.*))?$", text)
    return m.group(1), (m.group(2) or "")


def body(lines):
    """Roff for the help text after the usage block."""
    out = []
    in_item = False  # the last thing written was an item (tag, maybe text)
    item_has_text = False
    nested = False  # inside the sub-items of an item (.RS)
    prev_blank = True

    def unnest():
        nonlocal nested
        if nested:
            out.append(".RE")
            nested = False

    for line in lines:
        if not line.strip():
            prev_blank = True
            continue
        indent = len(line) - len(line.lstrip(" "))
        text = line.strip()
        if indent == 0:
            unnest()
            if prev_blank and text.endswith(":") and len(text) < 70:
                out.append(".SS " + roff_line(text[:-1]))
            else:
                if prev_blank or in_item:
                    out.append(".PP")
                out.append(roff_line(text))
            in_item = False
        elif indent <= 2 or (in_item and text.startswith("-")):
            if indent <= 2:
                unnest()
            elif not nested:
                out.append(".RS")
                nested = True
            tag, rest = split_item(text)
            out.append(".TQ" if in_item and not item_has_text else ".TP")
            out.append(roff_line(tag))
            if rest:
                out.append(roff_line(rest))
            in_item, item_has_text = True, bool(rest)
        elif in_item:
            # Continuation of an item's text.
            out.append(roff_line(text))
            item_has_text = True
        else:
            # An indented line of its own.
            out += [".PP", ".RS 4", roff_line(text), ".RE"]
        prev_blank = False
    unnest()
    return out


def split_examples(lines):
    """Take the "Examples:" block of the help text (a heading at the left
    margin, its indented lines up to the next text at the margin) out of the
    description: it becomes the page's EXAMPLES section, verbatim."""
    for j, line in enumerate(lines):
        if line.strip() == "Examples:" and not line.startswith(" "):
            k = j + 1
            while k < len(lines) and (not lines[k].strip() or lines[k].startswith(" ")):
                k += 1
            block = lines[j + 1:k]
            while block and not block[-1].strip():
                block.pop()
            return lines[:j] + lines[k:], block
    return lines, []


# ---- the prose of docs/cli/*.md (the fragments docs/cli.md is written from) ----

def roff_text(s):
    """roff_escape(), and characters beyond ASCII (x, +-, >=, em dash) as
    groff's \\[uXXXX], which troff takes without a preprocessor."""
    return "".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in roff_escape(s))

def md_inline(text):
    """Roff for a line of Markdown: `code` and **strong** in bold, links as
    their text, Markdown's escapes and entities undone."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("\\|", "|").replace("\\*", "*").replace("&lt;", "<").replace("&gt;", ">")
    out = []
    for i, part in enumerate(re.split(r"(`[^`]*`)", text)):
        if part.startswith("`") and part.endswith("`") and len(part) >= 2:
            out.append("\\fB" + roff_text(part[1:-1]) + "\\fR")
            continue
        for j, piece in enumerate(re.split(r"\*\*", part)):
            out.append(("\\fB" if j % 2 else "") + roff_text(piece) + ("\\fR" if j % 2 else ""))
    line = "".join(out)
    if line.startswith(".") or line.startswith("'"):
        line = "\\&" + line
    return line


def md_cells(row):
    cells = re.split(r"(?<!\\)\|", row.strip())[1:-1]
    return [c.strip() for c in cells]


def prose(path, start=None):
    """Roff for a fragment (from its line `start` when given): its headings
    "# ..." and "## ..." (the page's own title) and the "All options" tables
    (the page lists the options from --help) left out."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if start:
        lines = lines[lines.index(start):]
    out, para, i = [], [], 0

    def flush():
        if para:
            out.append(".PP")
            out.extend(md_inline(l) for l in para)
            para.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("### All options of") or re.match(r"^@(options .+|workloads)@$", line):
            flush()
            i += 1
            continue
        if line.startswith("# ") or line.startswith("## "):
            flush()
            i += 1
            continue
        if line.startswith("### "):
            flush()
            out.append(".SS " + md_inline(line[4:]))
        elif line.startswith("```"):
            flush()
            out += [".PP", ".nf", ".RS 4"]
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                code = roff_text(lines[i])
                out.append("\\&" + code if code.startswith((".", "'")) else code)
                i += 1
            out += [".RE", ".fi"]
        elif line.startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(md_cells(lines[i]))
                i += 1
            i -= 1
            for r in rows[2:]:  # the header and the rule are left out
                tag, rest = (r[0], r[1:]) if r else ("", [])
                text = "; ".join(c for c in rest if c)
                out += [".TP", md_inline(tag) if tag else "\\&"] + ([md_inline(text)] if text else [])
        elif re.match(r"^\s*[-*] ", line):
            flush()
            item = [re.sub(r"^\s*[-*] ", "", line)]
            while i + 1 < len(lines) and lines[i + 1].startswith("  ") and lines[i + 1].strip():
                i += 1
                item.append(lines[i].strip())
            out.append(".IP \\(bu 2")
            out.extend(md_inline(l) for l in item)
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return out


def fragments(prose_dir):
    """name -> path of docs/cli/<NN>-<name>.md."""
    found = {}
    if prose_dir:
        for f in sorted(os.listdir(prose_dir)):
            m = re.match(r"^\d+-(.+)\.md$", f)
            if m:
                found[m.group(1)] = os.path.join(prose_dir, f)
    return found


def page(name, section_title, version, summary, help_lines, see_also, docdir, details=()):
    usage = []
    i = 0
    while i < len(help_lines) and help_lines[i].strip():
        usage.append(re.sub(r"^usage: ", "", help_lines[i]).strip())
        i += 1
    rest, examples = split_examples(help_lines[i:])
    out = [
        '.\\" Generated by man/help2man.py from `%s --help`; edit the help text instead.' % name.replace("-", " "),
        '.TH %s 1 "" "gpushare %s" "%s"' % (roff_escape(name.upper()), version, section_title),
        ".SH NAME",
        "%s \\- %s" % (roff_escape(name), roff_escape(summary)),
        ".SH SYNOPSIS",
        ".nf",
    ]
    out += [roff_line(u) for u in usage]
    out += [".fi", ".SH DESCRIPTION"]
    out += body(rest)
    for title, lines in details:
        out += [".SH " + title] + lines
    if examples:
        out += [".SH EXAMPLES", ".nf"] + [roff_line(e[2:] if e.startswith("  ") else e) for e in examples] + [".fi"]
    out += [".SH SEE ALSO", ",\n".join(".BR %s (1)" % roff_escape(s) for s in see_also)]
    if docdir:
        out += [".PP", "The full documentation is in", ".IR %s ." % roff_escape(docdir)]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpushare", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--docdir", default="")
    ap.add_argument("--prose", default="", help="docs/cli: the prose of docs/cli.md, one fragment per command")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    top = help_of(a.gpushare, ["--help"])
    commands = []  # (name, summary): the indented lines after "Commands:"
    on = False
    for line in top:
        if line == "Commands:":
            on = True
        elif on and not line.strip():
            break
        elif on:
            name, summary = split_item(line.strip())
            commands.append((name, summary))
    if not commands:
        sys.exit("help2man: no commands found in 'gpushare --help'")
    # The first line after the usage is the one-line description of gpushare.
    desc = next(l for l in top[1:] if l.strip()).rstrip(".")
    frag = fragments(a.prose)
    top_details = [(t, prose(frag[k], start)) for t, k, start in (("CONVENTIONS", "overview", "## Conventions"),
                                                                  ("ENVIRONMENT", "environment", None),
                                                                  ("EXIT STATUS", "exit-statuses", None)) if k in frag]
    pages = {"gpushare": page("gpushare", "gpushare manual", a.version, desc[0].lower() + desc[1:], top,
                              ["gpushare-" + c for c, _ in commands], a.docdir, top_details)}
    for c, summary in commands:
        details = [("DETAILS", prose(frag[c]))] if c in frag else []
        pages["gpushare-" + c] = page("gpushare-" + c, "gpushare manual", a.version, summary,
                                      help_of(a.gpushare, [c, "--help"]), ["gpushare"], a.docdir, details)
    for name, text in pages.items():
        with open(os.path.join(a.out, name + ".1"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
