#!/usr/bin/env python3
"""Write the results.jsonl fixtures of the gpushare plan tests (committed;
run again only to change them): records as `gpushare sweep` writes them
(docs/sweep.md), reduced to what the report reads, with deterministic noise.

  mps-h100/        matmul:size=4096 on an H100: timeslice, mps, mps-split,
                   mig (7 x 1g.10gb), sequential at 1, 2, 4, 7 workers, 7 repeats;
                   mps wins from 4 workers on, tied with mps-split
  timeslice-a100/  a launch-bound workload on an A100 where time-slicing wins
                   at 4 workers (MPS adds latency, no throughput)
  failed/          every run failed
  one-worker/      sharing never beats one process
  mig-mixed/       an H100 split 1g.10gb x2 + 2g.20gb + 3g.40gb, one worker
                   per instance, beside timeslice at 1 and 4 workers
  unsettled/       2 noisy runs a cell: timeslice 2780/2800 items/s at 1 worker
                   vs 4300/6240 at 4 (the runs cannot tell them apart)
"""
import json, os, random, sys

here = os.path.dirname(os.path.abspath(__file__))


def record(f, shape, workload, strategy, workers, repeat, ips, mean, p99, status="ok", gpu="NVIDIA H100 80GB HBM3",
           host="gpu-node-01", mem=None, device=None, ndev=1, cmd=None, date=0, devices=None):
    key = f"{shape}|{strategy}|w{workers}|b1"
    meta = {"gpushare_version": "0.1.0", "date": f"2026-11-20T10:{date // 60:02d}:{date % 60:02d}Z", "host": host,
            "gpu": {"index": 0, "name": gpu, "uuid": "GPU-5f1c2a8e-0000-4000-8000-000000000001"},
            "driver_version": "580.95.05", "cuda_driver_version": 13000, "command_line": cmd}
    rec = {"gpushare_sweep_record": 1,
           "cell": {"key": key, "shape": shape, "workload": workload, "strategy": strategy, "workers": workers,
                    "batch": 1},
           "repeat": repeat, "status": status, "error": None if status == "ok" else
           {"code": "worker failed", "message": "worker 0 exited with status 1"}, "metadata": meta,
           "peak_search": None}
    if status == "ok":
        dn = device or gpu
        ws = [{"index": i, "device_name": dn, "visible_devices": f"MIG-{i % ndev}" if ndev > 1 else "0"}
              for i in range(workers)]
        if devices:  # per worker: (device_name, visible_devices)
            ws = [{"index": i, "device_name": d, "visible_devices": v} for i, (d, v) in enumerate(devices)]
        rec["bench"] = {"results": [{"strategy": strategy, "aggregate": {
            "items_per_second": ips, "requests_per_second": ips, "mean_seconds": mean, "p50_seconds": mean * 0.95,
            "p90_seconds": mean * 1.3, "p99_seconds": p99, "p999_seconds": p99 * 1.3, "fairness": 0.97,
            "histogram": {"le_seconds": [mean * 0.9, mean, p99], "counts": [50, 40, 10]}},
            "telemetry": {"samples": 20, "util_mean_percent": min(99.0, 30.0 * workers),
                          "mem_used_max_bytes": mem if mem is not None else workers * (3 << 30)},
            "workers": ws}]}
    else:
        rec["bench"] = {"results": [{"strategy": strategy, "aggregate": None}]}
    f.write(json.dumps(rec, separators=(",", ":")) + "\n")


def write(name, cells, repeats=6, **kw):
    d = os.path.join(here, name)
    os.makedirs(d, exist_ok=True)
    rnd = random.Random(name)
    n = 0
    with open(os.path.join(d, "results.jsonl"), "w") as f:
        for r in range(repeats):  # round robin, as the sweep runs them
            for c in cells:
                shape, wl, strat, w, ips, mean, p99 = c[:7]
                extra = c[7] if len(c) > 7 else {}
                noise = 1 + rnd.uniform(-0.01, 0.01)
                record(f, shape, wl, strat, w, r, round(ips * noise, 1), mean / noise, p99 / noise, date=n,
                       **{**kw, **extra})
                n += 1


H100_CMD = ["gpushare", "sweep", "--out", "sw", "--workload", "matmul:size=4096",
            "--strategy", "timeslice,mps,mps-split,mig,sequential", "--workers", "1,2,4,7", "--repeats", "7"]
mps = []
for w, ts, m, ms in [(1, 1000, 1000, 1000), (2, 1010, 1800, 1790), (4, 1020, 2600, 2590), (7, 1015, 2610, 2580)]:
    mps += [("matmul:size=4096", "matmul", "timeslice", w, ts, w / ts, 3 * w / ts),
            ("matmul:size=4096", "matmul", "mps", w, m, w / m, 1.5 * w / m),
            ("matmul:size=4096", "matmul", "mps-split", w, ms, w / ms, 1.4 * w / ms),
            ("matmul:size=4096", "matmul", "sequential", w, 995, 1 / 995, 1.5 / 995)]
mps.append(("matmul:size=4096", "matmul", "mig", 7, 2300, 7 / 2300, 1.2 * 7 / 2300,
            {"device": "NVIDIA H100 80GB HBM3 MIG 1g.10gb", "ndev": 7, "mem": 7 * (9 << 30)}))
write("mps-h100", mps, repeats=7, cmd=H100_CMD)

A100_CMD = ["gpushare", "sweep", "--out", "sw", "--workload", "tiny", "--strategy", "timeslice,mps", "--workers",
            "1,2,4,8", "--repeats", "6"]
ts = []
for w, t, m in [(1, 50000, 50000), (2, 88000, 70000), (4, 120000, 80000), (8, 121000, 79000)]:
    ts += [("tiny", "tiny", "timeslice", w, t, w / t, 2 * w / t), ("tiny", "tiny", "mps", w, m, w / m, 3 * w / m)]
write("timeslice-a100", ts, gpu="NVIDIA A100-SXM4-40GB", host="a100-07", cmd=A100_CMD)

write("failed", [("tiny", "tiny", "timeslice", 2, 0, 0, 0, {"status": "failed"}),
                 ("tiny", "tiny", "mps", 2, 0, 0, 0, {"status": "failed"})], repeats=2, cmd=A100_CMD)
one = []
for w, t in [(1, 5000), (2, 3000), (4, 2000)]:
    one += [("big", "matmul", "timeslice", w, t, w / t, 2 * w / t), ("big", "matmul", "mps", w, t * 0.98, w / t, 2 * w / t)]
write("one-worker", one, cmd=H100_CMD)

MIXED_CMD = ["gpushare", "sweep", "--out", "sw", "--workload", "matmul:size=2048", "--strategy", "timeslice,mig",
             "--workers", "1,4", "--repeats", "5"]
MIG = "NVIDIA H100 80GB HBM3 MIG "
mixed_devices = [(MIG + "3g.40gb", "MIG-3g"), (MIG + "2g.20gb", "MIG-2g"), (MIG + "1g.10gb", "MIG-1a"),
                 (MIG + "1g.10gb", "MIG-1b")]
write("mig-mixed", [("matmul:size=2048", "matmul", "timeslice", 1, 3000, 1 / 3000, 2 / 3000),
                    ("matmul:size=2048", "matmul", "timeslice", 4, 3100, 4 / 3100, 8 / 3100),
                    ("matmul:size=2048", "matmul", "mig", 4, 3900, 4 / 3900, 6 / 3900,
                     {"devices": mixed_devices, "mem": 70 << 30})], repeats=5, cmd=MIXED_CMD)

# Two noisy runs a cell, each figure as given (no added noise).
UNSETTLED_CMD = ["gpushare", "sweep", "--out", "sw", "--workload", "tiny", "--strategy", "timeslice", "--workers",
                 "1,4", "--repeats", "2"]
d = os.path.join(here, "unsettled")
os.makedirs(d, exist_ok=True)
with open(os.path.join(d, "results.jsonl"), "w") as f:
    n = 0
    for r, (one, four) in enumerate([(2780, 4300), (2800, 6240)]):
        for w, ips in [(1, one), (4, four)]:
            record(f, "tiny", "tiny", "timeslice", w, r, float(ips), w / ips, 2 * w / ips, gpu="NVIDIA A100-SXM4-40GB",
                   host="a100-07", cmd=UNSETTLED_CMD, date=n)
            n += 1
