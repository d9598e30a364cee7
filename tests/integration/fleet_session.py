# SPDX-License-Identifier: Apache-2.0
"""Generated gpufl-monitor sessions for the fleet views (tests, browser tests, bench): the
device log of a monitor on one host with several GPUs, in the library's record shapes
(docs/log-format.md): gpu_info, gpu_legend, gpu_sample batches, process_info and gpu_processes
listings, an XID, a gpu_lost event, ECC increments and a throttle span.

`monitor_session(...)` gives windows (session_id, channel, sequence, window_id, text) to post;
`scale_session(...)` a bare one (samples only, few columns) of many GPUs for timing."""
import json

EPOCH_US = 1795428900000000  # 2026-11-23T10:15:00Z
LEGEND = {"0": "gpu_idle", "1": "applications_clocks_setting", "2": "sw_power_cap",
          "3": "hw_slowdown", "5": "sw_thermal_slowdown", "6": "hw_thermal_slowdown"}
PROCS = {100: ("python3", "alice", "J100"), 101: ("torchrun", "bob", "J101"),
         200: ("python3", "alice", "J100"), 300: ("bench", "carol", None)}


def dumps(o):
    return json.dumps(o, separators=(",", ":"))


def header(sid, hostname, seq, epoch_us, job_id=None):
    h = {"type": "header", "v": 1, "format": "gpufl-log", "file": "device", "segment": seq,
         "session_id": sid, "app_name": "gpufl-monitor", "pid": 4000, "hostname": hostname,
         "epoch_ns": "1000", "epoch_unix_us": epoch_us, "clock": "monotonic",
         "gpufl_version": "0.1.0"}
    if job_id:
        h["job_id"], h["job_id_from"] = job_id, "GPUFL_JOB_ID"
    return dumps(h)


def sample(g, i, t_s, ngpus):
    """GPU g's reading at sample i (t_s seconds in): utilization and SM activity that differ per
    GPU, so a wrong bucket or GPU shows; GPU 1 is held by a process and idle."""
    util = 0 if g == 1 else (37 * i + 11 * g) % 101
    return {
        "gpu_util_pct": util,
        "sm_active_pct": round(util * ((g % 3) + 1) / 4.0, 1),
        "power_mw": 100000 + util * 5000,
        "throttle_reasons": (4 if g == 0 and 10 <= t_s < 20 else 0) | (1 if g == 2 else 0),
        "ecc_sbe_volatile": (2 if t_s >= 30 else 0) if g == 3 else 0,
        "ecc_dbe_volatile": (1 if t_s >= 40 else 0) if g == 3 else 0,
    }


def listings(seconds):
    """(t_s, device, [(pid, sm_util_pct)]): who held each GPU from t_s on."""
    half, q1, q3 = seconds // 2, seconds // 4, 3 * seconds // 4
    return sorted([(0, 0, [(100, 50)]), (half, 0, [(100, 60), (101, 20)]), (0, 1, [(200, 0)]),
                   (q1, 3, [(300, 40)]), (q3, 3, [])], key=lambda x: (x[0], x[1]))


def monitor_session(sid, hostname="gpu-node7", gpus=4, seconds=60, interval_s=1, window_s=20,
                    epoch_us=EPOCH_US, job_id=None, lost_at_s=46):
    """A monitor session of `gpus` GPUs sampled every interval_s for `seconds`, cut into windows
    of window_s. GPU 1 gets XID 79 at 45 s and is lost at lost_at_s (no samples after)."""
    out = []
    lst = listings(seconds)
    seen_pids = set()
    windows = max(1, (seconds + window_s - 1) // window_s)
    energy = [0] * gpus
    for seq in range(windows):
        lines = [header(sid, hostname, seq, epoch_us, job_id)]
        if seq == 0:
            lines.append(dumps({"type": "capabilities", "v": 1, "backend_requested": "Auto",
                                "backend": "Nvidia", "engine_requested": "Monitor",
                                "engine": "Monitor", "features": {"nvml": {"on": True}}}))
            for g in range(gpus):
                lines.append(dumps({"type": "gpu_info", "v": 1, "device": g, "nvml_index": g,
                                    "mig_index": None, "name": "NVIDIA H100 80GB HBM3",
                                    "uuid": "GPU-%s-%04d" % (hostname, g),
                                    "mem_total_bytes": 85520809984, "sm_count": 132}))
            lines.append(dumps({"type": "gpu_legend", "v": 1, "throttle_reasons": LEGEND}))
        t0, t1 = seq * window_s, min(seconds, (seq + 1) * window_s)
        for t_s, dev, procs in lst:
            if t0 <= t_s < t1 and dev < gpus:
                for pid, _ in procs:
                    if pid not in seen_pids:
                        seen_pids.add(pid)
                        comm, user, job = PROCS[pid]
                        lines.append(dumps({"type": "process_info", "v": 1,
                                            "ts_ns": t_s * 10**9, "device": dev, "pid": pid,
                                            "comm": comm, "user": user, "slurm_job_id": job}))
                lines.append(dumps({"type": "gpu_processes", "v": 1, "ts_ns": t_s * 10**9,
                                    "device": dev, "count": len(procs),
                                    "pid": [p for p, _ in procs],
                                    "used_bytes": [1 << 30] * len(procs),
                                    "sm_util_pct": [u for _, u in procs],
                                    "mem_util_pct": [0] * len(procs)}))
        cols = {k: [] for k in ("ts_ns", "device", "gpu_util_pct", "sm_active_pct", "power_mw",
                                "energy_mj", "throttle_reasons", "ecc_sbe_volatile",
                                "ecc_dbe_volatile")}
        t = t0
        while t < t1:
            i = t // interval_s
            for g in range(gpus):
                if g == 1 and t > lost_at_s:
                    continue
                s = sample(g, i, t, gpus)
                cols["ts_ns"].append(t * 10**9)
                cols["device"].append(g)
                for k, v in s.items():
                    cols[k].append(v)
                # Even GPUs have an energy counter (7 mJ more than power x time, so a view that
                # ignores the counter shows); odd ones leave it null.
                if g % 2 == 0:
                    energy[g] += s["power_mw"] * interval_s + 7
                    cols["energy_mj"].append(energy[g])
                else:
                    cols["energy_mj"].append(None)
            t += interval_s
        for a in range(0, len(cols["ts_ns"]), 4096):
            lines.append(dumps(dict({"type": "gpu_sample", "v": 1},
                                    **{k: v[a:a + 4096] for k, v in cols.items()})))
        if t0 <= 45 < t1 and gpus > 1:
            lines.append(dumps({"type": "xid", "v": 1, "ts_ns": 45 * 10**9, "device": 1,
                                "code": 79, "gpu_instance_id": None,
                                "compute_instance_id": None}))
        if t0 <= lost_at_s < t1 and gpus > 1:
            lines.append(dumps({"type": "event", "v": 1, "ts_ns": lost_at_s * 10**9,
                                "level": "error", "code": "gpu_lost",
                                "message": "GPU 1 (GPU-%s-0001) stopped answering NVML; no more "
                                           "samples from it" % hostname}))
        out.append((sid, "device", seq, "%s-device-%d" % (sid, seq), "\n".join(lines) + "\n"))
    return out


def scale_session(sid, hostname, gpus, seconds, interval_s=1, window_s=1800,
                  epoch_us=EPOCH_US):
    """Many GPUs, samples only (utilization, SM activity, power), one process per GPU."""
    for seq in range(max(1, (seconds + window_s - 1) // window_s)):
        lines = [header(sid, hostname, seq, epoch_us)]
        if seq == 0:
            for g in range(gpus):
                lines.append(dumps({"type": "gpu_info", "v": 1, "device": g, "name": "NVIDIA H100",
                                    "uuid": "GPU-%s-%04d" % (hostname, g)}))
                lines.append(dumps({"type": "gpu_processes", "v": 1, "ts_ns": 0, "device": g,
                                    "count": 1, "pid": [1000 + g], "used_bytes": [1 << 30]}))
        ts, dev, util, sm, pw = [], [], [], [], []
        t = seq * window_s
        while t < min(seconds, (seq + 1) * window_s):
            for g in range(gpus):
                u = (t // 60 * 7 + g * 13) % 101
                ts.append(t * 10**9)
                dev.append(g)
                util.append(u)
                sm.append(round(u * (g % 4 + 1) / 4.0, 1))
                pw.append(100000 + u * 5000)
            t += interval_s
        for a in range(0, len(ts), 4096):
            lines.append(dumps({"type": "gpu_sample", "v": 1, "ts_ns": ts[a:a + 4096],
                                "device": dev[a:a + 4096], "gpu_util_pct": util[a:a + 4096],
                                "sm_active_pct": sm[a:a + 4096], "power_mw": pw[a:a + 4096]}))
        yield (sid, "device", seq, "%s-device-%d" % (sid, seq), "\n".join(lines) + "\n")
