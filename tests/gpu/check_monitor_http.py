# SPDX-License-Identifier: Apache-2.0
"""Checks what gpufl-monitor served on the GPU machine (run_monitor_check.sh's
OUT_DIR) against nvidia-smi: every GPU's identity on /api/v1/gpus and in the
labels of /metrics, readings taken at the same moment within tolerances, the
exposition accepted by the OpenMetrics parser's rules (the EOF line), and the
scrape times (p99 of 200 scrapes during the load).

Usage: python3 check_monitor_http.py OUT_DIR   (exit 1 when a check fails)
"""
import csv
import json
import re
import statistics
import sys

failures = 0


def check(name, ok, detail):
    global failures
    failures += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")


def series(text, name):
    """{labels dict as a frozenset of items: value} of one series name."""
    out = {}
    for m in re.finditer(r"^%s\{([^}]*)\} (\S+)$" % re.escape(name), text, re.M):
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1)))
        out[frozenset(labels.items())] = float(m.group(2))
    return out


def check_process_util(out):
    """The load's SM utilization on /api/v1/gpus against nvidia-smi pmon's over the same 6 s."""
    pid = int(open(f"{out}/load_pid.txt").read().strip())
    ours = []
    for line in open(f"{out}/proc_api.jsonl"):
        if line.strip():
            for g in json.loads(line)["gpus"]:
                ours += [p["sm_util_pct"] for p in g.get("processes", [])
                         if p["pid"] == pid and p.get("sm_util_pct") is not None]
    pmon = []
    for line in open(f"{out}/pmon.txt"):
        f = line.split()
        if len(f) >= 4 and not line.startswith("#") and f[1] == str(pid) and f[3] != "-":
            pmon.append(int(f[3]))
    if not ours or not pmon:
        check("per-process SM utilization served and seen by nvidia-smi pmon", False,
              f"ours {ours}, pmon {pmon}")
        return
    a, b = statistics.mean(ours), statistics.mean(pmon)
    check("the load's SM utilization within 15 points of nvidia-smi pmon's (mean of 6 readings)",
          abs(a - b) <= 15, f"ours {ours} mean {a:.1f}, pmon {pmon} mean {b:.1f}")


def smaps_summary(out):
    """Prints the daemon's resident memory per mapping, largest first (no check: a study)."""
    try:
        text = open(f"{out}/monitor_smaps.txt").read()
    except OSError:
        return
    rss, name = {}, None
    for line in text.splitlines():
        f = line.split()
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            name = f[5] if len(f) > 5 else "[anon]"
        elif f and f[0] == "Rss:" and name:
            rss[name] = rss.get(name, 0) + int(f[1])
    total = sum(rss.values())
    print(f"INFO  RSS {total / 1024:.1f} MiB by mapping (KiB):")
    for k, v in sorted(rss.items(), key=lambda x: -x[1])[:12]:
        print(f"INFO    {v:8d}  {k}")


def main():
    out = sys.argv[1]
    static = [[c.strip() for c in row] for row in csv.reader(open(f"{out}/smi_static.csv"))]
    at_scrape = {int(r[0]): [float(x) for x in r[1:]]
                 for r in csv.reader(open(f"{out}/smi_at_scrape.csv"))}
    api = json.load(open(f"{out}/gpus.json"))
    metrics = open(f"{out}/metrics.txt").read()
    devices = [d for d in api.get("devices", api.get("gpus", [])) if d.get("mig_instance", -1) in (-1, None)]
    check("one device per GPU", len(devices) == len(static), f"{len(devices)} served, {len(static)} in nvidia-smi")
    mem = series(metrics, "gpufl_gpu_memory_used_bytes")
    power = series(metrics, "gpufl_gpu_power_watts")
    for row in static:
        index, name, uuid, bus = int(row[0]), row[1], row[2], row[3]
        d = next((d for d in devices if d.get("uuid") == uuid), None)
        check(f"gpu {index}: served with its uuid", d is not None, uuid)
        if d is None:
            continue
        check(f"gpu {index}: name", d.get("model") == name, f"{d.get('model')} / {name}")
        check(f"gpu {index}: PCI bus id", str(d.get("pci_bus_id", "")).lower() == bus.lower(),
              f"{d.get('pci_bus_id')} / {bus}")
        labels = [dict(k) for k in mem if dict(k).get("uuid") == uuid]
        check(f"gpu {index}: /metrics labels", len(labels) == 1 and labels[0].get("pci_bus_id", "").lower() == bus.lower()
              and labels[0].get("model") == name, str(labels))
        util_smi, mem_mib, power_w = at_scrape[index][0], at_scrape[index][1], at_scrape[index][2]
        served_mem = next((v for k, v in mem.items() if dict(k).get("uuid") == uuid), None)
        served_w = next((v for k, v in power.items() if dict(k).get("uuid") == uuid), None)
        if served_mem is not None:
            check(f"gpu {index}: memory used within 512 MiB of nvidia-smi",
                  abs(served_mem / 2**20 - mem_mib) <= 512, f"{served_mem / 2**20:.0f} MiB / {mem_mib:.0f} MiB")
        if served_w is not None:
            check(f"gpu {index}: power within 25 % of nvidia-smi (sampled apart in time)",
                  abs(served_w - power_w) <= 0.25 * max(power_w, 50), f"{served_w:.1f} W / {power_w:.1f} W")
    procs = series(metrics, "gpufl_process_memory_used_bytes")
    if procs:
        pid = open(f"{out}/load_pid.txt").read().strip()
        mine = [dict(k) for k in procs if dict(k).get("pid") == pid]
        check("the PyTorch load's process is served with its memory, command and user",
              len(mine) == 1 and mine[0].get("comm", "").startswith("python") and mine[0].get("user"),
              str(mine or sorted(dict(k).get("pid") for k in procs)))
    else:
        check("per-process series served", False, "no gpufl_process_memory_used_bytes series")
    check_process_util(out)
    smaps_summary(out)
    om = open(f"{out}/metrics_om.txt").read()
    check("OpenMetrics ends in # EOF", om.endswith("# EOF\n"), om[-20:].strip())
    times = sorted(float(t) for t in open(f"{out}/scrape_times.txt") if t.strip())
    if times:
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        check("scrape p99 <= 5 ms (200 scrapes, one at a time, during the load)", p99 <= 0.005,
              f"p99 {p99 * 1e3:.2f} ms, median {statistics.median(times) * 1e3:.2f} ms")
    check("healthz", open(f"{out}/healthz.txt").read().startswith("200"), open(f"{out}/healthz.txt").read().strip())
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
