# SPDX-License-Identifier: Apache-2.0
"""Compares what gpufl's NVML sampler recorded with nvidia-smi over the same run.

Usage: python3 compare_nvidia_smi.py SESSION_DIR SMI_STATIC_CSV SMI_LOG_CSV

SMI_STATIC_CSV: nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,
  memory.total,enforced.power.limit,compute_cap --format=csv,noheader,nounits
SMI_LOG_CSV: nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,
  temperature.gpu,power.draw.instant,clocks.sm,clocks.mem --format=csv,noheader,nounits -lms N
Prints one line per check and exits 1 if any check fails.
"""
import csv
import datetime
import glob
import json
import statistics
import sys


def segments(d):
    """device.log, then its numbered segments (sealed windows) in order."""
    rest = glob.glob(f"{d}/device.log.*")
    return [f"{d}/device.log"] + sorted(rest, key=lambda p: int(p.rsplit(".", 1)[1]))


def read_session(d):
    info, samples, epoch_us = {}, [], None
    lines = (line for path in segments(d) for line in open(path))
    for line in lines:
        if not line.strip():
            continue
        r = json.loads(line)
        t = r["type"]
        if t == "header":
            epoch_us = r["epoch_unix_us"]
        elif t == "gpu_info":
            info[r["device"]] = r
        elif t == "gpu_sample":
            cols = [k for k in r if k not in ("type", "v")]
            for i in range(len(r["ts_ns"])):
                samples.append({k: r[k][i] for k in cols})
    for s in samples:
        s["wall_s"] = epoch_us / 1e6 + s["ts_ns"] / 1e9
    return info, samples


def smi_time(text):
    # "2026/11/22 03:55:01.123": the machine's local time, which is UTC there.
    t = datetime.datetime.strptime(text.strip(), "%Y/%m/%d %H:%M:%S.%f")
    return t.replace(tzinfo=datetime.timezone.utc).timestamp()


def number(text):
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        return None


failures = 0


def check(name, ok, detail):
    global failures
    failures += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")


def main():
    session, static_csv, log_csv = sys.argv[1:4]
    info, samples = read_session(session)
    smi_static = [row for row in csv.reader(open(static_csv)) if row]
    whole = {g["nvml_index"]: g for g in info.values() if g.get("mig_index") is None}
    for row in smi_static:
        idx, name, uuid, bus, driver, mem_mib, plimit_w, cc = (c.strip() for c in row)
        g = whole.get(int(idx))
        if not g:
            check(f"gpu {idx} listed", False, "no gpu_info record")
            continue
        check(f"gpu {idx} name", g["name"] == name, f"{g['name']!r} vs {name!r}")
        check(f"gpu {idx} uuid", g["uuid"] == uuid, f"{g['uuid']} vs {uuid}")
        check(f"gpu {idx} pci bus id", g["pci_bus_id"].lower() == bus.lower(),
              f"{g['pci_bus_id']} vs {bus}")
        check(f"gpu {idx} driver", g["driver_version"] == driver,
              f"{g['driver_version']} vs {driver}")
        mem = g["mem_total_bytes"] / 2**20
        check(f"gpu {idx} memory total", abs(mem - float(mem_mib)) <= 1,
              f"{mem:.0f} MiB vs {mem_mib} MiB")
        pl = (g["power_limit_mw"] or 0) / 1000
        check(f"gpu {idx} power limit", abs(pl - float(plimit_w)) <= 1,
              f"{pl:.1f} W vs {plimit_w} W")
        check(f"gpu {idx} compute capability", g["compute_capability"] == cc,
              f"{g['compute_capability']} vs {cc}")

    smi = []
    for row in csv.reader(open(log_csv)):
        if len(row) < 8:
            continue
        smi.append({"wall_s": smi_time(row[0]), "index": int(row[1]),
                    "util": number(row[2]), "mem_mib": number(row[3]), "temp": number(row[4]),
                    "power_w": number(row[5]), "clock_sm": number(row[6]),
                    "clock_mem": number(row[7])})
    device_of = {g["nvml_index"]: d for d, g in info.items() if g.get("mig_index") is None}
    pairs = []
    for r in smi:
        d = device_of.get(r["index"])
        near = [s for s in samples if s["device"] == d and abs(s["wall_s"] - r["wall_s"]) <= 0.06]
        if near:
            pairs.append((r, min(near, key=lambda s: abs(s["wall_s"] - r["wall_s"]))))
    check("time-aligned pairs", len(pairs) >= 20, f"{len(pairs)} pairs within 60 ms")
    if not pairs:
        return

    def diffs(f_smi, f_gpufl):
        out = []
        for r, s in pairs:
            a, b = f_smi(r), f_gpufl(s)
            if a is not None and b is not None:
                out.append(abs(a - b))
        return out

    def report(name, d, tolerance, unit):
        if not d:
            check(name, False, "no comparable values")
            return
        med, p90 = statistics.median(d), sorted(d)[int(len(d) * 0.9)]
        check(name, med <= tolerance, f"median |diff| {med:.2f} {unit}, p90 {p90:.2f} {unit} "
              f"over {len(d)} pairs (tolerance {tolerance} {unit})")

    report("memory used", diffs(lambda r: r["mem_mib"],
                                lambda s: s["mem_used_bytes"] / 2**20 if s["mem_used_bytes"] is not None else None),
           2, "MiB")
    report("GPU temperature", diffs(lambda r: r["temp"], lambda s: s["temp_gpu_c"]), 1, "C")
    report("power draw", diffs(lambda r: r["power_w"],
                               lambda s: s["power_mw"] / 1000 if s["power_mw"] is not None else None),
           15, "W")
    report("SM clock", diffs(lambda r: r["clock_sm"], lambda s: s["clock_sm_mhz"]), 30, "MHz")
    report("memory clock", diffs(lambda r: r["clock_mem"], lambda s: s["clock_mem_mhz"]), 1, "MHz")
    report("GPU utilization", diffs(lambda r: r["util"], lambda s: s["gpu_util_pct"]), 10, "points")

    busy = [s for s in samples if (s["gpu_util_pct"] or 0) >= 90]
    idle = [s for s in samples if s["gpu_util_pct"] == 0]
    for key in ("sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "dram_bw_util_pct",
                "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s"):
        vb = [s[key] for s in busy if s[key] is not None]
        vi = [s[key] for s in idle if s[key] is not None]
        mb = statistics.median(vb) if vb else None
        mi = statistics.median(vi) if vi else None
        print(f"INFO  {key}: busy median {mb}, idle median {mi} ({len(vb)}/{len(vi)} samples)")
    reasons = {}
    for s in samples:
        bits = s["throttle_reasons"] or 0
        for b in range(64):
            if bits >> b & 1:
                reasons[b] = reasons.get(b, 0) + 1
    print(f"INFO  throttle bits seen (bit: samples): {reasons} of {len(samples)} samples")


if __name__ == "__main__":
    main()
    print(f"{failures} failed")
    sys.exit(1 if failures else 0)
