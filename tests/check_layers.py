#!/usr/bin/env python3
"""The layering of lib/ (lib/LAYERS), checked over every include.

- A file under lib/<folder>/ includes headers of its own folder, of folders of
  lower rank, and public headers (include/gpushare/) of its rank or lower;
  folders of one rank (the engines) never include each other.
- Public headers include only public headers of their rank or lower; the
  internal ones (include/gpushare/internal/, not installed: what only cli/
  uses) are placed and checked as public ones.
- cli/, workloads/, bench/ and examples/ include no header of lib/.
- Basenames are unique across lib/, and no include climbs with "../".
- No file under lib/ is longer than 1,200 lines.
Prints one line per breach and exits 1 when there is any.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LINES = 1200
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_layers():
    rank_of_folder, folder_of_public = {}, {}
    with open(os.path.join(ROOT, "lib", "LAYERS")) as f:
        rank = -1
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if not line.startswith("+"):
                rank += 1
            folder, _, publics = line.lstrip("+").partition(":")
            rank_of_folder[folder.strip()] = rank
            for h in publics.split():
                folder_of_public[h] = folder.strip()
    return rank_of_folder, folder_of_public


def public_headers():
    """The headers under include/gpushare/, by path from there: "bench.h", and
    "internal/bench.h" for the uninstalled ones only the command line uses."""
    top = os.path.join(ROOT, "include", "gpushare")
    found = []
    for dirpath, _, files in os.walk(top):
        for name in files:
            found.append(os.path.relpath(os.path.join(dirpath, name), top))
    return sorted(found)


def main():
    rank_of_folder, folder_of_public = read_layers()
    errors = []
    lib = os.path.join(ROOT, "lib")
    home = {}  # basename -> folder
    for d in sorted(os.listdir(lib)):
        if not os.path.isdir(os.path.join(lib, d)):
            continue
        if d not in rank_of_folder:
            errors.append(f"lib/{d}/: a folder that lib/LAYERS does not list")
            continue
        for name in sorted(os.listdir(os.path.join(lib, d))):
            if name in home:
                errors.append(f"lib/{d}/{name}: the basename is also lib/{home[name]}/{name}")
            home[name] = d
    for h in public_headers():
        if h not in folder_of_public:
            errors.append(f"include/gpushare/{h}: a public header that lib/LAYERS does not place")

    def check_folder(where, own, inc, other):
        """A file of folder `own` includes `inc`, a header of folder `other`."""
        if other == own:
            return
        if rank_of_folder[other] == rank_of_folder[own]:
            errors.append(f"{where}: includes {inc} of {other}/: engines of one layer never include each other")
        elif rank_of_folder[other] > rank_of_folder[own]:
            errors.append(f"{where}: includes {inc} of {other}/, a higher layer")

    def check_public(where, own, inc):
        h = inc[len("gpushare/"):]
        if h not in folder_of_public:
            errors.append(f"{where}: includes {inc}, which is not a public header")
        else:
            check_folder(where, own, inc, folder_of_public[h])

    for name, d in sorted(home.items()):
        path = f"lib/{d}/{name}"
        if not name.endswith((".c", ".h")):
            continue
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        n = text.count("\n")
        if n > MAX_LINES:
            errors.append(f"{path}: {n} lines, more than {MAX_LINES}")
        for inc in INCLUDE.findall(text):
            if inc.startswith("gpushare/"):
                check_public(path, d, inc)
            elif "/" in inc:
                errors.append(f"{path}: includes \"{inc}\" by a path; include by name")
            elif inc not in home:
                errors.append(f"{path}: includes \"{inc}\", found nowhere under lib/")
            else:
                check_folder(path, d, inc, home[inc])
    for h in public_headers():
        text = open(os.path.join(ROOT, "include", "gpushare", h), encoding="utf-8").read()
        for inc in INCLUDE.findall(text):
            if not inc.startswith("gpushare/"):
                errors.append(f"include/gpushare/{h}: includes \"{inc}\", not a public header")
            elif h in folder_of_public:
                check_public(f"include/gpushare/{h}", folder_of_public[h], inc)
    for top in ("cli", "workloads", "bench", "examples"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not name.endswith((".c", ".h", ".cu", ".cuh")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), ROOT)
                text = open(os.path.join(dirpath, name), encoding="utf-8").read()
                for inc in INCLUDE.findall(text):
                    if inc.startswith("gpushare/"):
                        if inc[len("gpushare/"):] not in folder_of_public:
                            errors.append(f"{path}: includes {inc}, which is not a public header")
                    elif "/" in inc or inc in home:
                        errors.append(f"{path}: includes \"{inc}\" of lib/; use the public headers")
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} breach(es) of lib/LAYERS")
        return 1
    print(f"check_layers: {len(home)} files in {len(rank_of_folder)} layers, no breach")
    return 0


if __name__ == "__main__":
    sys.exit(main())
