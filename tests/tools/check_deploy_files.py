#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks gpufl-monitor's deployment files (deploy/, docs/monitor.md) with what this machine has:
systemd-analyze on the unit, a parse of the Dockerfile's instructions, the Compose file through
`docker compose config` where installed and a YAML parse and checks always, and the Kubernetes
manifest's schema, mounts and resource sizes. Every GPUFL_MONITOR_* variable the files set must
be one of docs/monitor.md's flag table, and 0.0.0.0 may appear in the Dockerfile only.

Usage: check_deploy_files.py [--self-test] [REPO]   (REPO defaults to the current directory)
--self-test first plants faults in a copy of the files and fails unless each is found.
Exits 1 listing the problems.
"""
import copy
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

UNIT = "deploy/systemd/gpufl-monitor.service"
AGENT_UNIT = "deploy/systemd/gpufl-agent.service"
DOCKERFILE = "deploy/docker/Dockerfile"
COMPOSE = "deploy/docker/docker-compose.yml"
KUBE = "deploy/kubernetes/gpufl-monitor.yaml"
DOC = "docs/monitor.md"
AGENT_DOC = "docs/upload.md"
PORT = 9464
# The targets of the issue: 1 % of a core and 12 MiB of RSS.
CPU_REQUEST_MAX = 0.010
MEMORY_REQUEST_MAX = 12 * 1024 * 1024
# systemd-analyze security's exposure (0 best, 10 worst); the unit scores 1.8 on Debian 12.
EXPOSURE_MAX = 2.5


NOTES = set()  # what could not be checked here, printed once


def read(repo, path):
    with open(os.path.join(repo, path)) as f:
        return f.read()


def documented_variables(repo):
    """The GPUFL_MONITOR_* names of docs/monitor.md's flag table, each checked against its
    flag's name (--interval-ms is GPUFL_MONITOR_INTERVAL_MS)."""
    names, errors = set(), []
    for m in re.finditer(r"^\| `--([a-z-]+)[^`]*` \| `(GPUFL_MONITOR_[A-Z_]+)` \|",
                         read(repo, DOC), re.M):
        flag, var = m.groups()
        if var != "GPUFL_MONITOR_" + flag.upper().replace("-", "_"):
            errors.append(f"{DOC}: --{flag} is documented as {var}")
        names.add(var)
    if not names:
        errors.append(f"{DOC}: no flag table (| `--flag` | `GPUFL_MONITOR_...` |)")
    return names, errors


def check_variables(repo, allowed):
    errors = []
    agent_vars = set(re.findall(r"GPUFL_AGENT_[A-Z_]+", read(repo, AGENT_DOC)))
    for path in (UNIT, AGENT_UNIT, DOCKERFILE, COMPOSE, KUBE):
        text = read(repo, path)
        for var in sorted(set(re.findall(r"GPUFL_MONITOR_[A-Z_]+", text)) - allowed):
            errors.append(f"{path}: sets {var}, not a documented variable ({DOC})")
        for var in sorted(set(re.findall(r"GPUFL_AGENT_[A-Z_]+", text)) - agent_vars):
            errors.append(f"{path}: sets {var}, not a documented variable ({AGENT_DOC})")
        # A key is a file (a credential, a secret), never a variable others can read.
        if re.search(r"GPUFL_API_KEY\b(?!_FILE)", text):
            errors.append(f"{path}: sets GPUFL_API_KEY: pass the key as a file")
        if "0.0.0.0" in text and path != DOCKERFILE:
            errors.append(f"{path}: names 0.0.0.0; only the Dockerfile listens beyond loopback")
    return errors


# -- systemd --------------------------------------------------------------------------------

def unit_settings(text):
    settings = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")) and "=" in line:
            key, value = line.split("=", 1)
            settings.setdefault(key, []).append(value)
    return settings


def check_unit(repo):
    text = read(repo, UNIT)
    s = unit_settings(text)
    errors = []

    def want(key, value):
        if value not in s.get(key, []):
            errors.append(f"{UNIT}: wants {key}={value}")

    want("ExecStart", "/usr/local/bin/gpufl-monitor")
    want("DynamicUser", "yes")
    want("ProtectSystem", "strict")
    want("NoNewPrivileges", "yes")
    want("LogsDirectory", "gpufl-monitor")
    want("DevicePolicy", "closed")
    want("DeviceAllow", "char-nvidia-frontend rw")
    want("ExecReload", "/bin/kill -HUP $MAINPID")
    want("KillSignal", "SIGTERM")
    want("Environment", "GPUFL_MONITOR_LOG_PATH=/var/log/gpufl-monitor")
    want("Environment", f"GPUFL_MONITOR_LISTEN=127.0.0.1:{PORT}")
    for key in ("ReadWritePaths", "PrivateDevices", "ProtectProc", "User"):
        if key in s:
            errors.append(f"{UNIT}: sets {key}= (the log directory is its only writable place; "
                          "the GPUs and /proc/<pid> must stay visible)")

    return errors + analyze_unit(UNIT, text)


def analyze_unit(path, text):
    """systemd-analyze verify (no output at all) and security (exposure under EXPOSURE_MAX)."""
    errors = []
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        NOTES.add("no systemd-analyze: the units checked by their settings only")
        return errors
    # verify wants ExecStart's program to exist: the unit as written, with /bin/true in it.
    with tempfile.TemporaryDirectory() as tmp:
        unit = os.path.join(tmp, os.path.basename(path))
        with open(unit, "w") as f:
            f.write(re.sub(r"^ExecStart=\S+", "ExecStart=/bin/true", text, flags=re.M))
        r = subprocess.run([analyze, "verify", unit], capture_output=True, text=True)
        # Unknown keys are only warnings (exit 0): any output at all is a problem.
        out = (r.stdout + r.stderr).strip()
        if r.returncode or out:
            errors.append(f"{path}: systemd-analyze verify: {out or r.returncode}")
        r = subprocess.run([analyze, "security", "--offline=yes", "--no-pager", unit],
                           capture_output=True, text=True)
        m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", r.stdout)
        if not m:
            errors.append(f"{path}: systemd-analyze security gave no exposure level: "
                          f"{r.stderr.strip()}")
        elif float(m.group(1)) > EXPOSURE_MAX:
            errors.append(f"{path}: systemd-analyze security rates its exposure {m.group(1)}, "
                          f"over {EXPOSURE_MAX}")
    return errors


def check_agent_unit(repo):
    text = read(repo, AGENT_UNIT)
    s = unit_settings(text)
    errors = []
    for key, value in (("ExecStart", "/usr/local/bin/gpufl-agent"), ("DynamicUser", "yes"),
                       ("User", "gpufl-monitor"), ("LogsDirectory", "gpufl-monitor"),
                       ("ProtectSystem", "strict"), ("NoNewPrivileges", "yes"),
                       ("PrivateDevices", "yes"),
                       ("Environment", "GPUFL_AGENT_API_KEY_FILE=%d/api-key"),
                       ("Environment", "GPUFL_AGENT_LOG_PATH=/var/log/gpufl-monitor")):
        if value not in s.get(key, []):
            errors.append(f"{AGENT_UNIT}: wants {key}={value}")
    if not any(v.startswith("api-key:") for v in s.get("LoadCredential", [])):
        errors.append(f"{AGENT_UNIT}: wants LoadCredential=api-key:... (the key as a credential)")
    return errors + analyze_unit(AGENT_UNIT, text)


# -- Dockerfile -----------------------------------------------------------------------------

def dockerfile_instructions(text):
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out, pending = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        word, _, rest = pending.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        pending = ""
    return out


def check_dockerfile(repo):
    text = read(repo, DOCKERFILE)
    ins = dockerfile_instructions(text)
    errors = []
    froms = [i for i, (w, _) in enumerate(ins) if w == "FROM"]
    if not froms:
        return [f"{DOCKERFILE}: no FROM"]
    stages = set()
    for i, (w, a) in enumerate(ins):
        if w == "FROM":
            parts = a.split()
            if not parts[0].startswith("debian:"):
                errors.append(f"{DOCKERFILE}: stage from {parts[0]}, not a Debian image")
            if len(parts) == 3 and parts[1].upper() == "AS":
                stages.add(parts[2])
        m = re.search(r"--from=(\S+)", a) if w == "COPY" else None
        if m and m.group(1) not in stages:
            errors.append(f"{DOCKERFILE}: COPY --from={m.group(1)}: no such earlier stage")
    build = " ".join(a for w, a in ins if w == "RUN")
    for step in ("scripts/deps.sh", "cmake -S . -B build", "cmake --build build",
                 "cmake --install build"):
        if step not in build:
            errors.append(f"{DOCKERFILE}: the README's step '{step}' is not run")
    final = ins[froms[-1]:]
    users = [a for w, a in final if w == "USER"]
    if not users or users[-1].split(":")[0] in ("root", "0"):
        errors.append(f"{DOCKERFILE}: the final stage must run as a non-root USER")
    if not any(w == "EXPOSE" and str(PORT) in a.split() for w, a in final):
        errors.append(f"{DOCKERFILE}: no EXPOSE {PORT}")
    if not any(w == "ENTRYPOINT" and "gpufl-monitor" in a for w, a in final):
        errors.append(f"{DOCKERFILE}: ENTRYPOINT is not gpufl-monitor")
    listen = [a for w, a in final if w == "ENV" and "GPUFL_MONITOR_LISTEN=" in a]
    if listen != [f"GPUFL_MONITOR_LISTEN=0.0.0.0:{PORT}"]:
        errors.append(f"{DOCKERFILE}: wants ENV GPUFL_MONITOR_LISTEN=0.0.0.0:{PORT} alone, "
                      f"has {listen}")
    elif "non-loopback" not in text:
        errors.append(f"{DOCKERFILE}: the 0.0.0.0 listen address is not explained")
    return errors


# -- Compose --------------------------------------------------------------------------------

def compose_tool():
    """The command that runs Compose here, or None."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def check_compose(repo, data, run_tool=True):
    errors = []
    services = data.get("services") or {}
    mon = services.get("gpufl-monitor")
    if not isinstance(mon, dict):
        return [f"{COMPOSE}: no gpufl-monitor service"]
    agent = services.get("gpufl-agent")
    if not isinstance(agent, dict):
        errors.append(f"{COMPOSE}: no gpufl-agent service")
    else:
        if agent.get("entrypoint") != ["/usr/local/bin/gpufl-agent"]:
            errors.append(f"{COMPOSE}: gpufl-agent does not run /usr/local/bin/gpufl-agent")
        if agent.get("ports"):
            errors.append(f"{COMPOSE}: gpufl-agent publishes ports; its /metrics stays inside")
        vols = [str(v) for v in agent.get("volumes") or []]
        if "gpufl-logs:/var/log/gpufl-monitor" not in vols:
            errors.append(f"{COMPOSE}: gpufl-agent lacks the logs volume, writable (its cursor)")
        aenv = agent.get("environment") or {}
        if isinstance(aenv, list):
            aenv = dict(e.split("=", 1) for e in aenv)
        if aenv.get("GPUFL_AGENT_API_KEY_FILE", "").startswith("/run/secrets/") is False or \
                not agent.get("secrets"):
            errors.append(f"{COMPOSE}: gpufl-agent's key must come from a secret file")
        if agent.get("read_only") is not True or agent.get("cap_drop") != ["ALL"]:
            errors.append(f"{COMPOSE}: gpufl-agent must run read-only with no capabilities")
    build = mon.get("build") or {}
    base = os.path.join(repo, os.path.dirname(COMPOSE))
    dockerfile = os.path.join(base, build.get("context", "."), build.get("dockerfile", "-"))
    if os.path.realpath(dockerfile) != os.path.realpath(os.path.join(repo, DOCKERFILE)):
        errors.append(f"{COMPOSE}: build does not name {DOCKERFILE} in the repository root")
    if mon.get("pid") != "host":
        errors.append(f"{COMPOSE}: pid: host is missing (per-process attribution)")
    ports = [str(p) for p in mon.get("ports") or []]
    if ports != [f"127.0.0.1:{PORT}:{PORT}"]:
        errors.append(f"{COMPOSE}: ports {ports}: publish {PORT} on the host's loopback only")
    env = mon.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env)
    if "GPUFL_MONITOR_LISTEN" in env:
        errors.append(f"{COMPOSE}: overrides the image's listen address")
    tool = compose_tool() if run_tool else None
    if tool:
        r = subprocess.run(tool + ["-f", os.path.join(repo, COMPOSE), "config", "-q"],
                           capture_output=True, text=True)
        if r.returncode:
            errors.append(f"{COMPOSE}: {' '.join(tool)} config: {r.stderr.strip()}")
    elif run_tool:
        NOTES.add("no docker compose: the Compose file checked as YAML only")
    return errors


# -- Kubernetes -----------------------------------------------------------------------------

def quantity(q, memory):
    """A Kubernetes quantity in cores or bytes."""
    m = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", str(q))
    if not m:
        raise ValueError(f"bad quantity {q!r}")
    n, unit = float(m.group(1)), m.group(2)
    scale = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    if unit not in scale or (unit == "m") == memory and unit:
        raise ValueError(f"bad {'memory' if memory else 'cpu'} quantity {q!r}")
    return n * scale[unit]


def check_kube(docs):
    errors = []
    by_kind = {}
    for d in docs:
        if not isinstance(d, dict) or not d.get("kind") or not d.get("apiVersion"):
            errors.append(f"{KUBE}: a document without kind and apiVersion")
            continue
        if not (d.get("metadata") or {}).get("name"):
            errors.append(f"{KUBE}: {d['kind']} without metadata.name")
        by_kind.setdefault(d["kind"], []).append(d)
    ds = (by_kind.get("DaemonSet") or [None])[0]
    svc = (by_kind.get("Service") or [None])[0]
    if not ds or ds["apiVersion"] != "apps/v1":
        return errors + [f"{KUBE}: no apps/v1 DaemonSet"]
    spec = ds.get("spec") or {}
    tmpl = spec.get("template") or {}
    labels = (tmpl.get("metadata") or {}).get("labels") or {}
    pod = tmpl.get("spec") or {}
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    if not selector or any(labels.get(k) != v for k, v in selector.items()):
        errors.append(f"{KUBE}: the DaemonSet's selector does not match its pods' labels")
    if pod.get("hostPID") is not True:
        errors.append(f"{KUBE}: hostPID: true is missing (per-process attribution)")
    if pod.get("hostNetwork"):
        errors.append(f"{KUBE}: hostNetwork would listen on every interface of the node")
    containers = pod.get("containers") or []
    mon = next((c for c in containers if c.get("name") == "gpufl-monitor"), None)
    if not mon:
        return errors + [f"{KUBE}: no gpufl-monitor container"]
    agent = next((c for c in containers if c.get("name") == "gpufl-agent"), None)
    if not agent:
        errors.append(f"{KUBE}: no gpufl-agent container")
    else:
        if agent.get("command") != ["/usr/local/bin/gpufl-agent"]:
            errors.append(f"{KUBE}: gpufl-agent does not run /usr/local/bin/gpufl-agent")
        avols = {m.get("name"): m for m in agent.get("volumeMounts") or []}
        if "logs" not in avols or avols["logs"].get("readOnly"):
            errors.append(f"{KUBE}: gpufl-agent lacks the logs volume, writable (its cursor)")
        key_vol = next((v for v in pod.get("volumes") or [] if v.get("secret")), None)
        if not key_vol or key_vol.get("name") not in avols:
            errors.append(f"{KUBE}: gpufl-agent's key must come from a Secret mounted as a file")
    gpu_limit = ((mon.get("resources") or {}).get("limits") or {}).get("nvidia.com/gpu")
    if pod.get("runtimeClassName") != "nvidia" and not gpu_limit:
        errors.append(f"{KUBE}: neither the nvidia runtime class nor nvidia.com/gpu")

    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    for c in containers + (pod.get("initContainers") or []):
        for vm in c.get("volumeMounts") or []:
            if vm.get("name") not in volumes:
                errors.append(f"{KUBE}: {c.get('name')} mounts an undefined volume "
                              f"{vm.get('name')!r}")
        sc = c.get("securityContext") or {}
        if sc.get("privileged") or sc.get("allowPrivilegeEscalation") is not False:
            errors.append(f"{KUBE}: {c.get('name')} may gain privileges")
    mounts = {}
    for vm in mon.get("volumeMounts") or []:
        host = ((volumes.get(vm.get("name")) or {}).get("hostPath") or {}).get("path")
        mounts[host] = vm
    for host in ("/proc", "/var/lib/kubelet/pod-resources"):
        if host not in mounts:
            errors.append(f"{KUBE}: the host's {host} is not mounted")
        elif mounts[host].get("readOnly") is not True:
            errors.append(f"{KUBE}: the host's {host} is mounted writable")
    sc = {**(pod.get("securityContext") or {}), **(mon.get("securityContext") or {})}
    if sc.get("runAsNonRoot") is not True or sc.get("runAsUser") in (None, 0):
        errors.append(f"{KUBE}: gpufl-monitor must run as a non-root user")
    if (sc.get("capabilities") or {}).get("drop") != ["ALL"]:
        errors.append(f"{KUBE}: gpufl-monitor keeps capabilities")

    res = mon.get("resources") or {}
    try:
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        cpu, mem = quantity(req.get("cpu", "x"), False), quantity(req.get("memory", "x"), True)
        if cpu > CPU_REQUEST_MAX or mem > MEMORY_REQUEST_MAX:
            errors.append(f"{KUBE}: requests {req} exceed 10m CPU and 12Mi")
        if quantity(lim.get("cpu", "x"), False) < cpu or quantity(lim.get("memory", "x"),
                                                                   True) < mem:
            errors.append(f"{KUBE}: limits {lim} below the requests")
    except ValueError as e:
        errors.append(f"{KUBE}: gpufl-monitor's resources: {e}")

    ports = {p.get("name"): p.get("containerPort") for p in mon.get("ports") or []}
    if ports.get("metrics") != PORT:
        errors.append(f"{KUBE}: no container port metrics: {PORT}")
    for where, meta in (("pod", tmpl.get("metadata") or {}),
                        ("Service", (svc or {}).get("metadata") or {})):
        ann = meta.get("annotations") or {}
        if ann.get("prometheus.io/scrape") != "true" or ann.get("prometheus.io/port") != str(PORT):
            errors.append(f"{KUBE}: the {where} lacks prometheus.io/scrape and /port {PORT}")
    if not svc:
        errors.append(f"{KUBE}: no Service")
    else:
        ss = svc.get("spec") or {}
        if any(labels.get(k) != v for k, v in (ss.get("selector") or {"": None}).items()):
            errors.append(f"{KUBE}: the Service's selector does not match the pods")
        if not any(p.get("targetPort") in ("metrics", PORT) for p in ss.get("ports") or []):
            errors.append(f"{KUBE}: the Service does not target the metrics port")
    return errors


# -- all ------------------------------------------------------------------------------------

def check(repo, compose_tool_too=True):
    """The problems found, one string each (empty: all pass). compose_tool_too=False leaves out
    Compose's own check, the slowest part (the self-test runs it for its own fault only)."""
    errors = []
    allowed, e = documented_variables(repo)
    errors += e + check_variables(repo, allowed)
    errors += check_unit(repo)
    errors += check_agent_unit(repo)
    errors += check_dockerfile(repo)
    try:
        errors += check_compose(repo, yaml.safe_load(read(repo, COMPOSE)) or {},
                                compose_tool_too)
    except yaml.YAMLError as e:
        errors.append(f"{COMPOSE}: not YAML: {e}")
    try:
        errors += check_kube(list(yaml.safe_load_all(read(repo, KUBE))))
    except yaml.YAMLError as e:
        errors.append(f"{KUBE}: not YAML: {e}")
    return errors


def _edit(path, old, new):
    def apply(repo):
        p = os.path.join(repo, path)
        with open(p) as f:
            text = f.read()
        if old not in text:
            raise AssertionError(f"self-test: {old!r} not in {path}")
        with open(p, "w") as f:
            f.write(text.replace(old, new, 1))
    return apply


def _edit_kube(change):
    def apply(repo):
        p = os.path.join(repo, KUBE)
        docs = list(yaml.safe_load_all(read(repo, KUBE)))
        change(copy.deepcopy(docs[1])["spec"]["template"]["spec"])  # must not raise
        change(docs[1]["spec"]["template"]["spec"])
        with open(p, "w") as f:
            yaml.safe_dump_all(docs, f)
    return apply


def _mon(pod):
    return next(c for c in pod["containers"] if c["name"] == "gpufl-monitor")


# Each fault, and a word of the problem it must raise.
FAULTS = [
    (_edit(UNIT, "ProtectSystem=strict", "ProtectSystm=strict"), "ProtectSystem"),
    (_edit(UNIT, "LogsDirectory=gpufl-monitor", "ReadWritePaths=/var/log"), "LogsDirectory"),
    (_edit(UNIT, "CapabilityBoundingSet=\n", "CapabilityBoundingSet=\nPrivateNetwork=no\n"
           "ProtectHome=no\nProtectKernelTunables=no\nRestrictNamespaces=no\n"
           "SystemCallFilter=\nCapabilityBoundingSet=~\n"), "security"),
    (_edit(UNIT, "GPUFL_MONITOR_LISTEN=127.0.0.1", "GPUFL_MONITOR_LISTEN=0.0.0.0"), "0.0.0.0"),
    (_edit(UNIT, "GPUFL_MONITOR_LOG_PATH=", "GPUFL_MONITOR_LOGPATH="), "GPUFL_MONITOR_LOGPATH"),
    (_edit(DOCKERFILE, "USER 10001:10001", "USER root"), "non-root"),
    (_edit(DOCKERFILE, "EXPOSE 9464", "EXPOSE 9090"), "EXPOSE"),
    (_edit(DOCKERFILE, "COPY --from=build", "COPY --from=builder"), "no such earlier stage"),
    (_edit(DOCKERFILE, "RUN scripts/deps.sh \\\n &&", "RUN"), "scripts/deps.sh"),
    (_edit(COMPOSE, '"127.0.0.1:9464:9464"', '"9464:9464"'), "loopback"),
    (_edit(COMPOSE, "GPUFL_AGENT_API_KEY_FILE: /run/secrets/gpufl_api_key",
           "GPUFL_API_KEY: gpfl_abcdefghij_secret"), "GPUFL_API_KEY"),
    (_edit(COMPOSE, "lives in the log root.\n      - gpufl-logs:/var/log/gpufl-monitor\n",
           "lives in the log root.\n      - gpufl-logs:/var/log/gpufl-monitor:ro\n"),
     "writable"),
    (_edit(AGENT_UNIT, "LoadCredential=api-key:", "#LoadCredential=api-key:"), "LoadCredential"),
    (_edit(AGENT_UNIT, "ProtectSystem=strict", "ProtectSystem=no"), "ProtectSystem"),
    (_edit(AGENT_UNIT, "GPUFL_AGENT_LISTEN", "GPUFL_AGENT_LISTEN_ON"), "GPUFL_AGENT_LISTEN_ON"),
    (_edit_kube(lambda p: p["containers"].pop(1)), "no gpufl-agent"),
    (_edit(COMPOSE, "    pid: host\n", ""), "pid: host"),
    (_edit(COMPOSE, "services:\n", "services:\n  - [\n"), "not YAML"),
    # Valid YAML that only Compose's own schema rejects; skipped where Compose is not installed.
    (_edit(COMPOSE, "mem_limit: 64m", "mem_limit: [64m]"), "config"),
    (_edit(DOC, "`GPUFL_MONITOR_WINDOW_S`", "`GPUFL_MONITOR_WINDOW`"), "--window-s"),
    (_edit_kube(lambda p: p.update(hostNetwork=True)), "hostNetwork"),
    (_edit_kube(lambda p: p.pop("hostPID")), "hostPID"),
    (_edit_kube(lambda p: _mon(p)["volumeMounts"][1].pop("readOnly")), "/proc is mounted"),
    (_edit_kube(lambda p: p["volumes"].pop(2)), "undefined volume"),
    (_edit_kube(lambda p: _mon(p)["resources"]["requests"].update(memory="64Mi")), "12Mi"),
    (_edit_kube(lambda p: _mon(p)["resources"]["requests"].update(cpu="0.5")), "10m"),
    (_edit_kube(lambda p: _mon(p)["resources"]["limits"].update(memory="8Mi")), "below"),
    (_edit_kube(lambda p: p["securityContext"].update(runAsUser=0)), "non-root"),
    (_edit_kube(lambda p: p.pop("runtimeClassName")), "runtime class"),
    (_edit_kube(lambda p: _mon(p)["env"].append({"name": "GPUFL_MONITOR_LISTEN",
                                                  "value": "0.0.0.0:9464"})), "0.0.0.0"),
]


def self_test(repo):
    """Each planted fault, in a fresh copy of the files, must be reported."""
    missed = []
    for i, (plant, word) in enumerate(FAULTS):
        if word == "config" and not compose_tool():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            for path in (UNIT, AGENT_UNIT, DOCKERFILE, COMPOSE, KUBE, DOC, AGENT_DOC):
                os.makedirs(os.path.join(tmp, os.path.dirname(path)), exist_ok=True)
                shutil.copy(os.path.join(repo, path), os.path.join(tmp, path))
            plant(tmp)
            errors = check(tmp, compose_tool_too=word == "config")
            if not any(word in e for e in errors):
                missed.append(f"fault {i} ({word!r}) not found; reported: {errors}")
            elif os.environ.get("VERBOSE"):
                print(f"fault {i}: {errors}")
    return missed


def main():
    args = [a for a in sys.argv[1:] if a != "--self-test"]
    repo = args[0] if args else "."
    if len(args) != len(sys.argv) - 1:
        missed = self_test(repo)
        for m in missed:
            print("check_deploy_files --self-test: " + m)
        if missed:
            return 1
        print(f"check_deploy_files: self-test found all {len(FAULTS)} planted faults")
    errors = check(repo)
    for n in sorted(NOTES):
        print("check_deploy_files: " + n)
    for e in errors:
        print("check_deploy_files: " + e)
    if errors:
        return 1
    print("check_deploy_files: deploy/ and docs/monitor.md pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
