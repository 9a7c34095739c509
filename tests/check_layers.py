#!/usr/bin/env python3
"""The layering of lib/ (lib/LAYERS), checked over every include, every
extern declaration and, given the built objects, every symbol.

Sources:
- A file under lib/<folder>/ includes headers of its own folder, of folders of
  lower rank, and public headers (include/gpushare/) of its rank or lower;
  folders of one rank (peers) never include each other. Quoted and angle
  includes alike; an include through a macro (`#include NAME`) is refused,
  as the check cannot follow it.
- A file under lib/ declares by `extern` nothing that a peer or a higher
  layer defines (an upward call the includes would not show).
- Public headers include only public headers of their rank or lower; the
  internal ones (include/gpushare/internal/, not installed: what only cli/
  uses) are placed and checked as public ones.
- cli/, workloads/, inject/, bench/ and examples/ include no header of lib/.
- Basenames are unique across lib/, and no include climbs with "../".
- A file under lib/ of more than 900 lines names its reason in lib/LAYERS
  (a `long` line); an entry for a file that is gone or no longer long is
  stale and refused too.

Objects (--objects FILE, written by lib/CMakeLists.txt: one line per layer,
its name then its object files separated by ';'): every undefined symbol of
a layer's objects that some layer defines is defined in that layer or one of
lower rank (nm, from binutils). --plant-objects LAYER=OBJ[;OBJ] adds objects
to a layer, for the planted breaches of tests/layers_plants/.

--plant FILE adds a source file to the tree at the path its first line names
(`plant: lib/<folder>/<name>`), for the same plants.

Prints one line per breach and exits 1 when there is any.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LONG_LINES = 900
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include(?:[ \t]*"([^"\n]+)"|[ \t]*<([^>\n]+)>|[ \t]+([A-Za-z_]\w*))', re.M)
PLANT = re.compile(r"plant:\s*(\S+)")
SOURCE_EXT = (".c", ".h")


class Layers:
    """lib/LAYERS: the ranks, the public headers of each folder, the long files."""

    def __init__(self, errors):
        self.rank, self.public, self.long = {}, {}, {}
        with open(os.path.join(ROOT, "lib", "LAYERS"), encoding="utf-8") as f:
            rank = -1
            for n, raw in enumerate(f, 1):
                line = raw.split("#", 1)[0].strip()
                if not line:
                    continue
                if line.startswith("shared "):
                    continue  # a shared struct's reason: tests/check_structs.py reads those
                if line.startswith("long "):
                    path, colon, reason = line[len("long "):].partition(":")
                    if not colon or not reason.strip():
                        errors.append(f"lib/LAYERS:{n}: a long line is 'long lib/<folder>/<file>: <reason>'")
                    self.long[path.strip()] = n
                    continue
                if not line.startswith("+"):
                    rank += 1
                folder, _, publics = line.lstrip("+").partition(":")
                self.rank[folder.strip()] = rank
                for h in publics.split():
                    self.public[h] = folder.strip()


def strip_c(text):
    """The text with comments, string and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def top_level(code):
    """The declarations at file scope of comment-free C: (text, ends with '{')."""
    depth, start, stmts = 0, 0, []
    code = re.sub(r"^[ \t]*#.*(?:\\\n.*)*", "", code, flags=re.M)
    code = re.sub(r'\bextern\s*"\s*"\s*\{', "", code)  # extern "C" { ... }: its inside is file scope
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                stmts.append((code[start:i], True))
            depth += 1
        elif c == "}":
            depth = max(depth - 1, 0)
            if depth == 0:
                start = i + 1
        elif c == ";" and depth == 0:
            stmts.append((code[start:i], False))
            start = i + 1
    return stmts


def declared_name(decl):
    """The name a declaration declares: the function before its '(', else the last identifier."""
    head = decl.split("=", 1)[0]
    m = re.search(r"\b([A-Za-z_]\w*)\s*\(", head)
    if m and not re.search(r"\(\s*\*", head):
        return m.group(1)
    names = re.findall(r"\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*$", head.strip())
    return names[-1] if names else None


def definitions(code):
    """Names a .c file defines with external linkage."""
    names = set()
    for decl, body in top_level(code):
        words = decl.split()
        if not words or words[0] in ("static", "extern", "typedef") or "static" in words[:3]:
            continue
        if body and "(" not in decl:
            continue  # a struct, enum or union
        name = declared_name(decl)
        if name:
            names.add(name)
    return names


def externs(code):
    """Names a file declares with `extern` (not extern "C")."""
    names = []
    for decl, _ in top_level(code):
        if re.match(r"\s*extern\b(?!\s*\")", decl):
            name = declared_name(decl)
            if name:
                names.append(name)
    return names


def relation(layers, own, other):
    """How folder `other` stands to folder `own`: None when `own` may use it."""
    if other == own or layers.rank[other] < layers.rank[own]:
        return None
    if layers.rank[other] == layers.rank[own]:
        return "a peer (peers never use each other)"
    return "a higher layer"


def check_sources(layers, plants, errors):
    lib = os.path.join(ROOT, "lib")
    files = {}  # path -> folder
    home = {}  # basename -> folder
    for d in sorted(os.listdir(lib)):
        if not os.path.isdir(os.path.join(lib, d)):
            continue
        if d not in layers.rank:
            errors.append(f"lib/{d}/: a folder that lib/LAYERS does not list")
            continue
        for name in sorted(os.listdir(os.path.join(lib, d))):
            if name in home:
                errors.append(f"lib/{d}/{name}: the basename is also lib/{home[name]}/{name}")
            home[name] = d
            files[f"lib/{d}/{name}"] = d
    texts = {}
    for path in files:
        if path.endswith(SOURCE_EXT):
            with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                texts[path] = f.read()
    for path, text in plants.items():
        parts = path.split("/")
        if len(parts) != 3 or parts[0] != "lib" or parts[1] not in layers.rank:
            errors.append(f"{path}: a plant names no lib/<folder>/<file> of lib/LAYERS")
            continue
        texts[path] = text
        files[path] = parts[1]
        home.setdefault(parts[2], parts[1])
    publics = public_headers()
    for h in publics:
        if h not in layers.public:
            errors.append(f"include/gpushare/{h}: a public header that lib/LAYERS does not place")

    def check_folder(where, own, inc, other):
        """A file of folder `own` includes `inc`, a header of folder `other`."""
        why = relation(layers, own, other)
        if why:
            errors.append(f"{where}: includes {inc} of {other}/, {why}")

    def check_public(where, own, inc):
        h = inc.strip('<>"')[len("gpushare/"):]
        if h not in layers.public:
            errors.append(f"{where}: includes {inc}, which is not a public header")
        else:
            check_folder(where, own, inc, layers.public[h])

    defined = {}  # name -> folders
    codes = {}
    for path, text in texts.items():
        codes[path] = strip_c(text)
        if path.endswith(".c"):
            for name in definitions(codes[path]):
                defined.setdefault(name, set()).add(files[path])

    for path in sorted(texts):
        d, text = files[path], texts[path]
        n = text.count("\n")
        if n > LONG_LINES and path not in layers.long:
            errors.append(f"{path}: {n} lines; a lib file over {LONG_LINES} lines names its reason in lib/LAYERS "
                          f"('long {path}: <reason>')")
        for quoted, angle, macro in INCLUDE.findall(text):
            if macro:
                errors.append(f"{path}: includes through the macro {macro}; include a header by its name")
                continue
            inc = quoted or angle
            shown = f'"{inc}"' if quoted else f"<{inc}>"
            if inc.startswith("gpushare/"):
                check_public(path, d, shown)
            elif ".." in inc.split("/"):
                errors.append(f"{path}: includes {shown} by climbing with '..'; include by name")
            elif "/" in inc:
                if quoted:
                    errors.append(f"{path}: includes {shown} by a path; include by name")
            elif inc in home:
                check_folder(path, d, shown, home[inc])
            elif quoted:
                errors.append(f"{path}: includes {shown}, found nowhere under lib/")
        for name in externs(codes[path]):
            for other in sorted(defined.get(name, ())):
                why = relation(layers, d, other)
                if why:
                    errors.append(f"{path}: declares extern {name}, defined in {other}/, {why}")
    for path, line in sorted(layers.long.items(), key=lambda kv: kv[1]):
        full = os.path.join(ROOT, path)
        if not os.path.isfile(full):
            errors.append(f"lib/LAYERS:{line}: names {path}, which is not there; drop the line")
            continue
        with open(full, encoding="utf-8") as f:
            n = f.read().count("\n")
        if n <= LONG_LINES:
            errors.append(f"lib/LAYERS:{line}: {path} has {n} lines, no more than {LONG_LINES}; drop the line")
    for h in publics:
        with open(os.path.join(ROOT, "include", "gpushare", h), encoding="utf-8") as f:
            text = f.read()
        where = f"include/gpushare/{h}"
        for quoted, angle, macro in INCLUDE.findall(text):
            if macro:
                errors.append(f"{where}: includes through the macro {macro}; include a header by its name")
            elif quoted and not quoted.startswith("gpushare/"):
                errors.append(f'{where}: includes "{quoted}", not a public header')
            elif (quoted or angle).startswith("gpushare/") and h in layers.public:
                check_public(where, layers.public[h], f'"{quoted}"' if quoted else f"<{angle}>")
    for top in ("cli", "workloads", "inject", "bench", "examples"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for name in names:
                if not name.endswith((".c", ".h", ".cu", ".cuh")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), ROOT)
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    text = f.read()
                for quoted, angle, macro in INCLUDE.findall(text):
                    inc = quoted or angle
                    if macro:
                        errors.append(f"{path}: includes through the macro {macro}; include a header by its name")
                    elif inc.startswith("gpushare/"):
                        if inc[len("gpushare/"):] not in layers.public:
                            errors.append(f"{path}: includes {inc}, which is not a public header")
                    elif (quoted and "/" in inc) or inc in home:
                        errors.append(f"{path}: includes {inc} of lib/; use the public headers")
    return len(home)


def check_objects(layers, lists, errors):
    """Every undefined symbol of a layer is defined in it or below it."""
    objects = {}  # object path -> layer
    for layer, objs in lists:
        if layer not in layers.rank:
            errors.append(f"objects of '{layer}': a layer that lib/LAYERS does not list")
            continue
        for o in objs:
            if not os.path.isfile(o):
                errors.append(f"{o}: an object of {layer}/ that is not built (build before the check)")
            else:
                objects[o] = layer
    listed = {layer for layer, _ in lists}
    for d in sorted(layers.rank):
        folder = os.path.join(ROOT, "lib", d)
        if lists and d not in listed and os.path.isdir(folder) and any(n.endswith(".c") for n in os.listdir(folder)):
            errors.append(f"lib/{d}/: no objects of it to check (lib/CMakeLists.txt lists its layers)")
    if not objects:
        return 0
    try:
        out = subprocess.run(["nm", "-A", "-P"] + sorted(objects), check=True, capture_output=True,
                             text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        errors.append(f"nm over the objects of lib/ failed: {e}")
        return 0
    defined, undefined = {}, []
    for line in out.splitlines():
        obj, _, rest = line.partition(": ")
        fields = rest.split()
        if obj not in objects or len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind == "U":
            undefined.append((obj, name))
        elif kind.isupper() and kind not in "UVW":
            defined.setdefault(name, set()).add(objects[obj])
    for obj, name in undefined:
        own = objects[obj]
        homes = defined.get(name)
        if not homes or own in homes or any(layers.rank[h] < layers.rank[own] for h in homes):
            continue
        for other in sorted(homes):
            why = relation(layers, own, other)
            errors.append(f"{own}/ {os.path.basename(obj)}: uses {name}, defined in {other}/, {why}")
    return len(objects)


def read_object_lists(args):
    lists = []
    if args.objects:
        with open(args.objects, encoding="utf-8") as f:
            for line in f:
                layer, _, objs = line.strip().partition(" ")
                if layer:
                    lists.append((layer, [o for o in objs.split(";") if o]))
    for spec in args.plant_objects:
        layer, _, objs = spec.partition("=")
        lists.append((layer, [o for o in objs.split(";") if o]))
    return lists


def public_headers():
    """The headers under include/gpushare/, by path from there: "bench.h", and
    "internal/bench.h" for the uninstalled ones only the command line uses."""
    top = os.path.join(ROOT, "include", "gpushare")
    found = []
    for dirpath, _, names in os.walk(top):
        for name in names:
            found.append(os.path.relpath(os.path.join(dirpath, name), top))
    return sorted(found)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--objects", help="the objects of each layer (lib/CMakeLists.txt writes it)")
    ap.add_argument("--plant", action="append", default=[], help="a planted source file (tests/layers_plants/)")
    ap.add_argument("--plant-objects", action="append", default=[], metavar="LAYER=OBJ[;OBJ]",
                    help="planted objects counted as the layer's")
    args = ap.parse_args()
    errors = []
    layers = Layers(errors)
    plants = {}
    for p in args.plant:
        with open(p, encoding="utf-8") as f:
            text = f.read()
        m = PLANT.search(text.split("\n", 1)[0])
        if not m:
            errors.append(f"{p}: a plant's first line names where it stands ('plant: lib/<folder>/<file>')")
        else:
            plants[m.group(1)] = text
    n_files = check_sources(layers, plants, errors)
    n_objects = check_objects(layers, read_object_lists(args), errors)
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} breach(es) of lib/LAYERS")
        return 1
    print(f"check_layers: {n_files} files in {len(layers.rank)} layers, {n_objects} objects, no breach")
    return 0


if __name__ == "__main__":
    sys.exit(main())
