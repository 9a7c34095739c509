#!/usr/bin/env python3
"""No struct of lib/ is shared by more than three files.

A struct defined in an internal header of lib/ (lib/<folder>/*.h; the public
ones, include/gpushare/, are an interface by design) is shared by the files
that access its members: a file that only passes a pointer on does not
count. The check asks the compiler: every .c file of lib/ is parsed by
clang (-fsyntax-only -Xclang -ast-dump), and each member access
(MemberExpr) is charged to the record its base has (the type of the
expression left of '.' or '->', typedefs seen through) and to the file of
the function it is in (a static inline function of a header counts as that
header). A struct whose members more than three files access is a breach.
Not counted: an initializer's designators (`{ .a = 1 }`, which clang keeps
as an initializer list, not a member access) and offsetof().

An exemption names the struct and its reason in lib/LAYERS, one line each:
    shared struct <name>: <why more than three files must see inside it>
An entry for a struct that is no longer shared by more than three files is
stale and refused too.

--plant DIR checks the .c and .h files of DIR alone, as if they were in
lib/ (tests/layers_plants/shared_struct/: a planted breach), without
lib/LAYERS's entries. --table prints each internal struct with the files
that access its members.

Prints one line per breach and exits 1 when there is any.
"""
import argparse
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMIT = 3
# A location clang prints with its file: path:line:col.
FILE_LOC = re.compile(r"([^\s<>,:']+\.(?:c|h|inc|def)):\d+:\d+")
RECORD = re.compile(r"RecordDecl 0x[0-9a-f]+ .*? (?:struct|union) (\S+) definition$")
MEMBER = re.compile(r"MemberExpr 0x[0-9a-f]+ .* (?:\.|->)(\w+) 0x[0-9a-f]+$")
# The type of a node: its first quoted string, and the desugared one after ':' when given.
TYPE = re.compile(r"'([^']*)'(?::'([^']*)')?")
RECORD_TYPE = re.compile(r"^(?:(?:const|volatile|restrict)\s+)*(?:struct|union)\s+(.+?)[\s*]*(?:(?:const|volatile|restrict)[\s*]*)*$")
EXEMPT = re.compile(r"^shared struct\s+(\w+)\s*:\s*(.*)$")


def flags(extra_dirs):
    out = ["-fsyntax-only", "-std=c17", "-D_GNU_SOURCE", "-DGPUSHARE_VERSION=\"check\"",
           "-I" + os.path.join(ROOT, "include"), "-Xclang", "-ast-dump", "-fno-color-diagnostics"]
    for d in sorted(glob.glob(os.path.join(ROOT, "lib", "*", ""))) + extra_dirs:
        out.append("-I" + d.rstrip("/"))
    # cJSON's headers, and the plots' cairo (lib/report/report_plot.c) where
    # it is installed, as the build finds them.
    for pkg in ("libcjson", "cairo"):
        try:
            p = subprocess.run(["pkg-config", "--cflags", pkg], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
            if p.returncode == 0:
                out += p.stdout.split()
        except OSError:
            pass
    return out


def rel(path):
    path = os.path.normpath(path if os.path.isabs(path) else os.path.join(ROOT, path))
    return os.path.relpath(path, ROOT)


def record_key(type_str):
    """The record a base expression's type names, or None."""
    m = RECORD_TYPE.match(type_str.strip())
    if not m:
        return None
    name = m.group(1)
    if name.startswith("("):   # unnamed: '(unnamed struct at path:l:c)'
        return name
    return name.split("::")[0]


def scan(path, args):
    """(records: name -> defining file, uses: name -> set of files, error)."""
    p = subprocess.run(["clang"] + args + [path], cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors="replace")
    if p.returncode != 0:
        first = next((l for l in p.stderr.splitlines() if "error" in l), p.stderr.strip()[:200])
        return {}, {}, f"{rel(path)}: clang cannot parse it: {first}"
    records, uses = {}, {}
    cur = path                 # the file of the last location printed
    top = path                 # the file of the top-level declaration we are in
    lines = p.stdout.splitlines()
    for i, line in enumerate(lines):
        # clang prints a location's file when it differs from the last one
        # printed: following them all gives the file of every location. A
        # declaration's is the one of its name, the last on its line.
        if ".h:" in line or ".c:" in line or ".inc:" in line or ".def:" in line:
            locs = FILE_LOC.findall(line)
            if locs:
                cur = locs[-1]
        if line.startswith(("|-", "`-")):
            top = cur
        if "RecordDecl" in line:
            r = RECORD.search(line)
            if r:
                records.setdefault(r.group(1), cur)
        elif "MemberExpr" in line and i + 1 < len(lines):
            if MEMBER.search(line):
                t = TYPE.search(lines[i + 1][lines[i + 1].find("<"):] if "<" in lines[i + 1] else lines[i + 1])
                if t:
                    key = record_key(t.group(2) or t.group(1))
                    if key:
                        uses.setdefault(key, set()).add(top)
    return records, uses, None


def unnamed_file(key):
    m = re.search(r" at ([^:]+):\d+:\d+\)", key)
    return m.group(1) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plant", action="append", default=[], help="a folder of planted files, as if in lib/")
    ap.add_argument("--table", action="store_true", help="print every internal struct and its files")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    opt = ap.parse_args()
    t0 = time.monotonic()
    plants = [os.path.abspath(d) for d in opt.plant]
    sources = [] if plants else sorted(glob.glob(os.path.join(ROOT, "lib", "*", "*.c")))
    for d in plants:
        sources += sorted(glob.glob(os.path.join(d, "*.c")))
    args = flags(plants)
    errors, records, uses = [], {}, {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opt.j)) as ex:
        for rec, use, err in ex.map(lambda s: scan(s, args), sources):
            if err:
                errors.append(err)
            for k, v in rec.items():
                records.setdefault(k, v)
            for k, v in use.items():
                uses.setdefault(k, set()).update(v)

    def internal(key):
        f = records.get(key) or unnamed_file(key)
        if not f:
            return None
        f = os.path.normpath(f if os.path.isabs(f) else os.path.join(ROOT, f))
        if not f.endswith(".h"):
            return None
        if f.startswith(os.path.join(ROOT, "lib") + os.sep) or any(f.startswith(d + os.sep) for d in plants):
            return f
        return None

    exempt = {}
    with open(os.devnull if plants else os.path.join(ROOT, "lib", "LAYERS"), encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            m = EXEMPT.match(raw.split("#", 1)[0].strip())
            if m:
                exempt[m.group(1)] = n
    table = []
    for key in sorted(uses):
        home = internal(key)
        if not home:
            continue
        files = sorted(rel(u) for u in uses[key])
        table.append((key, rel(home), files))
        name = f"struct {key}"
        if len(files) > LIMIT and key not in exempt:
            errors.append(f"{name} ({rel(home)}): its members are used by {len(files)} files, "
                          f"more than {LIMIT}: {', '.join(files)}")
    shared = {k for k, _, files in table if len(files) > LIMIT}
    for key, n in sorted(exempt.items()):
        if key not in shared:
            errors.append(f"lib/LAYERS:{n}: struct {key} is not shared by more than {LIMIT} files: a stale entry")
    if opt.table:
        for key, home, files in sorted(table, key=lambda t: (-len(t[2]), t[0])):
            print(f"{len(files)}  struct {key} ({home}): {' '.join(files)}")
    for e in errors:
        print(e)
    took = time.monotonic() - t0
    if errors:
        print(f"check_structs: {len(errors)} breach(es) over {len(sources)} files ({took:.1f} s)")
        return 1
    print(f"check_structs: {len(table)} internal structs over {len(sources)} files, none shared by more "
          f"than {LIMIT} but the {len(exempt)} lib/LAYERS names ({took:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
