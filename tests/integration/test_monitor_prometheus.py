#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpufl-monitor scraped by a real Prometheus (prom_harness.py), on the fake libnvidia-ml with 8
GPUs, two of them in MIG mode: every series docs/metrics.md documents that the fake can give
arrives in Prometheus with its documented labels and values consistent with the fake's script;
with --dcgm-compat every DCGM twin the doc lists as served arrives with dcgm-exporter's labels;
`promtool check metrics` passes on the live /metrics; the daemon's own-cost histogram grows with
its samples and its buckets are cumulative. Exit 77 without prometheus (prom_harness).

usage: test_monitor_prometheus.py GPUFL_MONITOR FAKE_NVML_LIB SCRIPT_8GPUS METRICS_DOC LOG_ROOT
"""
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prom_harness as ph  # noqa: E402

MONITOR, FAKE_LIB, SCRIPT, METRICS_DOC, LOG_ROOT = sys.argv[1:6]
failures = []

# Documented series this run cannot produce, and why. Everything else in the doc must arrive.
NOT_PRODUCED = {
    "gpufl_gpu_xid_errors_total": "the fake NVML has no event set, so no XID event is ever seen",
    "gpufl_monitor_gpu_backend_info": "served only when the GPU backend does not run; here it does",
    "gpufl_gpu_sm_active_ratio": "GPM ratios: the sampled rows keep sm_active_pct null on the fake",
    "gpufl_gpu_sm_occupancy_ratio": "GPM ratios: the sampled rows keep sm_occupancy_pct null",
    "gpufl_gpu_tensor_active_ratio": "GPM ratios: the sampled rows keep tensor_active_pct null",
    "gpufl_gpu_dram_active_ratio": "GPM ratios: the sampled rows keep dram_bw_util_pct null",
    "gpufl_gpu_estimated_flops": "its inputs are the GPM ratios above",
}
# Host series read from this machine, not the fake: served only where the machine has them.
HOST_DEPENDENT = {
    "gpufl_host_cgroup_memory_used_bytes", "gpufl_host_cgroup_memory_limit_bytes",
    "gpufl_host_cgroup_cpu_utilization_ratio", "gpufl_host_cgroup_cpu_limit_cores",
}
DCGM_NOT_PRODUCED = {
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "GPM ratio (see gpufl_gpu_tensor_active_ratio)",
    "DCGM_FI_PROF_DRAM_ACTIVE": "GPM ratio (see gpufl_gpu_dram_active_ratio)",
    "DCGM_FI_PROF_SM_ACTIVE": "GPM ratio (see gpufl_gpu_sm_active_ratio)",
    "DCGM_FI_PROF_SM_OCCUPANCY": "GPM ratio (see gpufl_gpu_sm_occupancy_ratio)",
}

# Log column -> (script sample key, scale to the gpufl series' base unit).
SCRIPT_KEYS = {
    "gpu_util_pct": ("util_gpu", 0.01), "mem_util_pct": ("util_mem", 0.01),
    "mem_used_bytes": ("mem_used", 1), "mem_free_bytes": ("mem_free", 1),
    "temp_gpu_c": ("temp_gpu", 1), "temp_mem_c": ("temp_mem", 1),
    "power_mw": ("power_mw", 0.001), "power_limit_mw": ("power_limit_mw", 0.001),
    "clock_sm_mhz": ("clock_sm", 1e6), "clock_gfx_mhz": ("clock_gfx", 1e6),
    "clock_mem_mhz": ("clock_mem", 1e6), "fan_pct": ("fan", 0.01),
    "ecc_sbe_volatile": ("ecc_sbe", 1), "ecc_dbe_volatile": ("ecc_dbe", 1),
}


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def doc_tables(path):
    """(gpufl rows, DCGM rows) of the generated tables: dicts of the cells, backticks removed."""
    text = open(path).read()
    m = re.search(r"<!-- BEGIN generated.*?-->\n(.*?)<!-- END generated -->", text, re.S)
    if not m:
        raise SystemExit(f"no generated table in {path}")
    tables, cur = [], None
    for line in m.group(1).splitlines():
        if not line.startswith("|"):
            cur = None
            continue
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if cur is None:
            cur = {"head": cells, "rows": []}
            tables.append(cur)
        elif not set(cells[0]) <= set("-"):
            cur["rows"].append(dict(zip(cur["head"], cells)))
    return tables[0]["rows"], tables[1]["rows"]


def enriched_script(path):
    """The 8-GPU script plus what its GPUs 0 and 1 also answer (fan, memory temperature, ECC,
    NVLink, GPM), and a process list on GPU 0 naming this test's own process, so that the
    series of those readings arrive too."""
    d = json.load(open(path))
    d["gpus"][0]["samples"]["procs"] = [[[os.getpid(), 268435456]]]
    # Two driver samples of it per list: utilization is their mean, 45 % and 10 %.
    d["gpus"][0]["samples"]["proc_util"] = [[[os.getpid(), 40, 8], [os.getpid(), 50, 12]]]
    for g in d["gpus"][:2]:
        g.update(gpm=True, ecc=True, nvlink_links=18, nvlink_active=4)
        g["samples"].update(fan=[40], temp_mem=[60], ecc_sbe=[3], ecc_dbe=[1], gpm={
            "sm_util": [50.0], "sm_occupancy": [25.0], "tensor": [40.0], "dram_bw": [30.0],
            "pcie_tx_mib": [100.0], "pcie_rx_mib": [50.0], "nvlink_tx_mib": [200.0],
            "nvlink_rx_mib": [100.0]})
    return d


def expected_devices(script):
    """uuid -> identity and latest script values (the last element repeats) of each device."""
    out = {}
    for gi, g in enumerate(script["gpus"]):
        last = {k: v[-1] for k, v in g["samples"].items() if isinstance(v, list) and v}
        out[g["uuid"]] = dict(pci=g["pci_bus_id"], model=g["name"], mig=None, parent=g["uuid"],
                              last=last, mem_total=g["memory_total"])
        for mg in g.get("mig", []):
            mlast = {k: v[-1] for k, v in mg["samples"].items() if isinstance(v, list) and v}
            out[mg["uuid"]] = dict(pci=g["pci_bus_id"], model=mg["name"], parent=g["uuid"],
                                   mig=(mg["name"].split()[-1], str(mg["slot"])), last=mlast,
                                   mem_total=mg["memory_total"])
    return out


class Daemon:
    def __init__(self, script_path, log_path, extra=()):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
        env.update(GPUFL_FAKE_NVML=script_path, GPUFL_NVML_LIBRARY=FAKE_LIB)
        self.err = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen([MONITOR, "--listen", "127.0.0.1:0", "--interval-ms", "100",
                                   "--log-path", log_path, *extra], env=env,
                                  stdout=subprocess.DEVNULL, stderr=self.err)
        self.port = None
        deadline = time.time() + 20
        while time.time() < deadline and self.p.poll() is None and self.port is None:
            self.err.seek(0)
            m = re.search(r"listening on http://[^:]+:(\d+)/", self.err.read())
            self.port = int(m.group(1)) if m else None
            time.sleep(0.05)
        if self.port is None:
            self.stop()
            self.err.seek(0)
            raise SystemExit("gpufl-monitor did not start: " + self.err.read())

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            self.p.wait(timeout=30)
        return self.p.returncode


def by_uuid(rows, key="uuid"):
    return {r["metric"].get(key): r for r in rows}


def check_device_labels(name, row, exp, hostname, gpu_index_of, dcgm=False):
    lab = row["metric"]
    uuid = lab.get("UUID" if dcgm else "uuid")
    parent_idx = gpu_index_of[exp["parent"]]
    want = {"pci_bus_id": exp["pci"], "device": "nvidia%s" % parent_idx,
            ("modelName" if dcgm else "model"): exp["model"],
            ("Hostname" if dcgm else "hostname"): hostname}
    if dcgm:
        want["gpu"] = parent_idx  # dcgm-exporter names the whole GPU on a MIG instance
    if exp["mig"]:
        want[("GPU_I_PROFILE" if dcgm else "mig_profile")] = exp["mig"][0]
        want[("GPU_I_ID" if dcgm else "mig_instance")] = exp["mig"][1]
    else:
        for k in (("GPU_I_PROFILE", "GPU_I_ID") if dcgm else ("mig_profile", "mig_instance")):
            check(k not in lab, f"{name} {uuid}: no {k} on a whole GPU")
    for k, v in want.items():
        check(lab.get(k) == v, f"{name} {uuid}: label {k}={lab.get(k)!r}, want {v!r}")
    check("gpu" in lab, f"{name} {uuid}: a gpu label")


def arrived(prom, query, name):
    """The series of query once it has any; [] and a failure when none comes within 15 s."""
    try:
        return prom.wait_for_series(query, timeout_s=15)
    except AssertionError as e:
        check(False, f"{name} arrives: {e}")
        return []


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def test_own_names(prom, devices, rows_doc, hostname, mon_addr):
    n_dev = len(devices)
    # gpufl's index of each device, from a series every device has.
    used = prom.wait_for_series("gpufl_gpu_memory_used_bytes", min_count=n_dev)
    gpu_index_of = {r["metric"]["uuid"]: r["metric"]["gpu"] for r in used}
    check(len(gpu_index_of) == n_dev, f"{n_dev} devices, got {sorted(gpu_index_of)}")
    check(set(gpu_index_of) == set(devices), "the script's devices")
    for row in rows_doc:
        name, labels_doc, column = row["Series"], row["Labels"], row["Log column"]
        if name in NOT_PRODUCED:
            print(f"not produced: {name}: {NOT_PRODUCED[name]}")
            continue
        query = name + ("_count" if row["Type"] == "histogram" else "")
        if name in HOST_DEPENDENT:
            rows = prom.query(query)
            print(f"host-dependent: {name}: {len(rows)} series")
        else:
            rows = arrived(prom, query, name)
        for r in rows:
            lab, value = r["metric"], float(r["value"][1])
            check(lab.get("instance") == mon_addr, f"{name}: scraped from the daemon")
            if labels_doc.startswith("device labels"):
                exp = devices.get(lab.get("uuid"))
                check(exp is not None, f"{name}: a known uuid {lab.get('uuid')!r}")
                if not exp:
                    continue
                check_device_labels(name, r, exp, hostname, gpu_index_of)
                extra = labels_doc.split(", ")[1:]
                for k in extra:
                    check(lab.get(k), f"{name}: label {k}")
                key = SCRIPT_KEYS.get(column)
                if key and key[0] in exp["last"]:
                    want = exp["last"][key[0]] * key[1]
                    check(close(value, want), f"{name} {lab['uuid']}: {value}, want {want}")
                elif column == "mem_total_bytes":
                    check(value == exp["mem_total"], f"{name} {lab['uuid']}: {value}")
                elif row["Type"] == "counter":
                    check(value >= 0, f"{name} {lab['uuid']}: a counter >= 0: {value}")
            elif name.startswith("gpufl_process_"):
                # This test's own process, on GPU 0 of the script: who it is comes from /proc;
                # container, pod and Slurm job labels are left out where unknown, as here.
                check(lab.get("uuid") in devices, f"{name}: a known uuid {lab.get('uuid')!r}")
                check(lab.get("pid") == str(os.getpid()), f"{name}: pid {lab.get('pid')!r}")
                check(lab.get("comm", "").startswith("python"), f"{name}: comm {lab.get('comm')!r}")
                check(bool(lab.get("user")), f"{name}: user {lab.get('user')!r}")
                want = {"gpufl_process_memory_used_bytes": 268435456,
                        "gpufl_process_sm_utilization_ratio": 0.45,
                        "gpufl_process_memory_utilization_ratio": 0.10}.get(name)
                check(want is not None and close(value, want), f"{name}: {value}, want {want}")
            else:
                check(lab.get("hostname") == hostname, f"{name}: hostname label")
                for k in labels_doc.split(", ")[1:]:
                    if k != "le":
                        check(lab.get(k), f"{name}: label {k}")

    # Consistency the script fixes beyond the latest values.
    for uuid, exp in devices.items():
        energy = exp["last"].get("energy_mj")
        if energy is None or exp["mig"]:
            continue
        # The script's energy counter starts at 1000000 mJ: no more than its rise is counted.
        r = by_uuid(prom.query("gpufl_gpu_energy_joules_total")).get(uuid)
        check(r is not None and 0 <= float(r["value"][1]) <= (energy - 1000000) / 1000,
              f"{uuid}: energy within the script's counter delta: {r and r['value']}")
    tx = by_uuid(prom.query("gpufl_gpu_pcie_transmit_bytes_total"))
    check(any(float(r["value"][1]) > 0 for r in tx.values()), "PCIe bytes add up")
    reasons = prom.query('gpufl_gpu_throttle_seconds_total{reason="sw_power_cap"}')
    check(len(reasons) >= 8 and all(float(r["value"][1]) > 0 for r in reasons
                                    if not devices[r["metric"]["uuid"]]["mig"]),
          "throttle reason 4 (sw_power_cap) counts time on every whole GPU")
    peak = prom.query("gpufl_gpu_peak_flops")
    check(len(peak) == 8 and all(float(r["value"][1]) == 989e12 for r in peak),
          "H100 peak on the 8 whole GPUs, none on MIG instances")
    lost = prom.query("gpufl_gpu_lost")
    check(len(lost) == n_dev and all(r["value"][1] == "0" for r in lost), "no device lost")
    up = prom.query("gpufl_monitor_gpu_backend_up")
    check(len(up) == 1 and up[0]["value"][1] == "1", "the GPU backend is up")
    check(prom.query("gpufl_monitor_log_write_errors_total")[0]["value"][1] == "0",
          "no write errors")


def histogram_state(prom):
    out = {}
    for r in prom.query("gpufl_monitor_sample_seconds_bucket"):
        src = r["metric"]["source"]
        out.setdefault(src, {})[r["metric"]["le"]] = float(r["value"][1])
    counts = {r["metric"]["source"]: float(r["value"][1])
              for r in prom.query("gpufl_monitor_sample_seconds_count")}
    sums = {r["metric"]["source"]: float(r["value"][1])
            for r in prom.query("gpufl_monitor_sample_seconds_sum")}
    samples = prom.query("gpufl_monitor_samples_total")
    return out, counts, sums, float(samples[0]["value"][1]) if samples else -1


def test_own_cost(prom):
    b1, c1, s1, n1 = histogram_state(prom)
    check(set(c1) == {"gpu", "host"}, f"sample-time histograms for gpu and host: {sorted(c1)}")
    for src, buckets in b1.items():
        les = sorted(buckets, key=lambda x: math.inf if x == "+Inf" else float(x))
        vals = [buckets[le] for le in les]
        check(len(les) == 13 and les[-1] == "+Inf", f"{src}: 12 buckets and +Inf: {les}")
        check(all(a <= b for a, b in zip(vals, vals[1:])), f"{src}: buckets cumulative {vals}")
        check(vals[-1] == c1[src], f"{src}: +Inf bucket equals the count")
        check(c1[src] > 0 and s1[src] > 0, f"{src}: samples timed ({c1[src]}, {s1[src]} s)")
        check(s1[src] / c1[src] < 1.0, f"{src}: a step takes under a second on average")
    check(n1 > 0, f"samples counted: {n1}")
    # Later scrapes: the counts grow with the samples (10 per second at --interval-ms 100).
    deadline = time.time() + 20
    while time.time() < deadline:
        b2, c2, s2, n2 = histogram_state(prom)
        if all(c2.get(s, 0) >= c1[s] + 5 for s in c1) and n2 > n1:
            break
        time.sleep(0.5)
    check(all(c2.get(s, 0) >= c1[s] + 5 for s in c1), f"histogram counts grow: {c1} -> {c2}")
    check(n2 > n1, f"samples_total grows: {n1} -> {n2}")
    scrapes = prom.query("gpufl_monitor_scrapes_total")
    check(scrapes and float(scrapes[0]["value"][1]) >= 2, "scrapes counted")


def test_dcgm(prom, devices, dcgm_doc, hostname):
    n_dev = len(devices)
    used = prom.wait_for_series("gpufl_gpu_memory_used_bytes", min_count=n_dev)
    own_index = {r["metric"]["uuid"]: r["metric"]["gpu"] for r in used}
    for row in dcgm_doc:
        name = row["DCGM series"]
        if name in DCGM_NOT_PRODUCED:
            print(f"not produced: {name}: {DCGM_NOT_PRODUCED[name]}")
            continue
        for r in arrived(prom, name, name):
            exp = devices.get(r["metric"].get("UUID"))
            check(exp is not None, f"{name}: a known UUID {r['metric'].get('UUID')!r}")
            if exp:
                check_device_labels(name, r, exp, hostname, own_index, dcgm=True)
                check("uuid" not in r["metric"] and "model" not in r["metric"],
                      f"{name}: dcgm-exporter's label names only")
    fb = by_uuid(prom.query("DCGM_FI_DEV_FB_USED"), "UUID")
    power = by_uuid(prom.query("DCGM_FI_DEV_POWER_USAGE"), "UUID")
    util = by_uuid(prom.query("DCGM_FI_DEV_GPU_UTIL"), "UUID")
    for uuid, exp in devices.items():
        last = exp["last"]
        if "mem_used" in last and uuid in fb:
            check(float(fb[uuid]["value"][1]) == last["mem_used"] // 1048576,
                  f"{uuid}: FB_USED in whole MiB")
        if "power_mw" in last:
            check(uuid in power and close(float(power[uuid]["value"][1]), last["power_mw"] / 1000),
                  f"{uuid}: POWER_USAGE in W")
        if "util_gpu" in last:
            check(uuid in util and float(util[uuid]["value"][1]) == last["util_gpu"],
                  f"{uuid}: GPU_UTIL in %")


def promtool_live(port, dcgm):
    status, headers, body = ph.http_get(f"http://127.0.0.1:{port}/metrics")
    check(status == 200, "/metrics answers")
    ok, out = ph.promtool_check_metrics(body)
    if dcgm:  # dcgm-exporter's names break the naming rules on purpose: only those lines
        other = [x for x in out.splitlines() if x.strip() and not x.startswith("DCGM_")]
        check(not other, "promtool on the live --dcgm-compat exposition: " + "\n".join(other))
    else:
        check(ok and not out.strip(), "promtool check metrics on the live exposition: " + out)


def run(script_path, dcgm, body):
    log_path = os.path.join(LOG_ROOT, "dcgm" if dcgm else "own")
    shutil.rmtree(log_path, ignore_errors=True)
    d = Daemon(script_path, log_path, ["--dcgm-compat"] if dcgm else [])
    try:
        addr = f"127.0.0.1:{d.port}"
        with ph.Prometheus([addr], scrape_interval_s=0.5) as prom:
            prom.wait_for_scrapes()
            body(prom, addr)
        promtool_live(d.port, dcgm)
    finally:
        rc = d.stop()
    check(rc == 0, f"the daemon exits 0 on SIGTERM, got {rc}")


def main():
    ph.require_prometheus()
    rows_doc, dcgm_doc = doc_tables(METRICS_DOC)
    names = {r["Series"] for r in rows_doc}
    check(len(rows_doc) > 30, f"the doc's series table parsed: {len(rows_doc)} rows")
    stale = (set(NOT_PRODUCED) | HOST_DEPENDENT) - names
    check(not stale, f"listed as not produced but not documented: {sorted(stale)}")
    check(not set(DCGM_NOT_PRODUCED) - {r["DCGM series"] for r in dcgm_doc},
          "DCGM exceptions are documented twins")
    os.makedirs(LOG_ROOT, exist_ok=True)
    script = enriched_script(SCRIPT)
    script_path = os.path.join(LOG_ROOT, "script.json")
    with open(script_path, "w") as f:
        json.dump(script, f)
    devices = expected_devices(script)
    check(len(devices) == 12, "8 GPUs and 4 MIG devices in the script")
    hostname = socket.gethostname()

    print("-- own names", flush=True)
    run(script_path, False, lambda prom, addr: (
        test_own_names(prom, devices, rows_doc, hostname, addr), test_own_cost(prom)))
    print("-- --dcgm-compat", flush=True)
    run(script_path, True, lambda prom, addr: test_dcgm(prom, devices, dcgm_doc, hostname))
    print("%d failures" % len(failures))
    sys.exit(1 if failures else 0)


main()
