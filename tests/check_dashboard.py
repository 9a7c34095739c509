#!/usr/bin/env python3
"""Every metric the Grafana dashboard (grafana/gpushare-dashboard.json) and
the recording rules (grafana/recording-rules.yml) query is one that
the docs (docs/*.md: metrics.md, farm.md) document and the code (lib/, cli/) writes. Histogram
series (_bucket, _sum, _count) count as their family."""
import json
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
dash = json.loads((root / "grafana/gpushare-dashboard.json").read_text())
rules = (root / "grafana/recording-rules.yml").read_text()
docs = "".join(p.read_text() for p in sorted((root / "docs").glob("*.md")))
code = "".join(p.read_text(errors="replace") for d in ("lib", "cli") for p in (root / d).rglob("*.c"))

exprs = []


def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("expr", "query", "definition") and isinstance(v, str):
                exprs.append(v)
            elif isinstance(v, dict) and k == "query" and isinstance(v.get("query"), str):
                exprs.append(v["query"])
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)


walk(dash)
exprs.append(rules)
used = set()
for e in exprs:
    used.update(re.findall(r"\bgpushare_[a-z0-9_]+", e))
fail = 0
for m in sorted(used):
    family = re.sub(r"_(bucket|sum|count)$", "", m)
    in_docs = f"`{m}`" in docs or f"`{family}`" in docs
    in_code = f'"{m}"' in code or f'"{family}"' in code
    if not (in_docs and in_code):
        print(f"FAIL: {m}: queried by the dashboard or the rules but "
              f"{'not in docs/*.md' if not in_docs else ''}{' and ' if not in_docs and not in_code else ''}"
              f"{'not written by lib/ or cli/' if not in_code else ''}")
        fail += 1
    else:
        print(f"ok: {m}")
print(f"{len(used)} metric(s) queried, {fail} unknown")
sys.exit(1 if fail or not used else 0)
