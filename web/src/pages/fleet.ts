// SPDX-License-Identifier: Apache-2.0
// The fleet page: a GPU x time heatmap (utilization, SM activity or "wasted") on canvas with GPUs
// grouped by host, the health strip on the same time axis, GPU time and energy per process and
// job, and live tiles fed by the server's SSE stream. The range and metric live in the URL.
import { ApiError, call } from "../api";
import { h, show } from "../dom";
import {
  type HealthEvent, type Heatmap, type LiveReading, type Metric, METRICS, PRESETS, type UsageRow,
  cellValue, colour, fmtHours, fmtKwh, fmtTile, hit, mergeLive, parseMetric, parseRange, rowsByHost,
  tileKey, xOf,
} from "../fleet/shape";
import { formatLocation } from "../router";

type Go = (url: string, replace?: boolean) => void;

const METRIC_LABEL: Record<Metric, string> = {
  util: "GPU utilization", sm: "SM active", wasted: "Wasted",
};
const KIND_LABEL: Record<HealthEvent["kind"], string> = {
  xid: "XID", ecc_sbe: "ECC corrected", ecc_dbe: "ECC uncorrected", throttle: "Throttle",
  gpu_lost: "GPU lost",
};
const ROW_PX_MAX = 14;
const HEAT_PX_MAX = 640; // the heatmap's height at most: rows shrink past ~45 GPUs

let live: EventSource | undefined; // one stream, closed when the page is left or redrawn

interface FleetGpu { session_id: string; device: number; hostname: string | null; name: string | null; uuid: string }

function fmtTime(us: number): string {
  return new Date(us / 1000).toISOString().replace("T", " ").slice(0, 19) + "Z";
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function renderFleet(root: HTMLElement, params: URLSearchParams, go: Go): void {
  live?.close();
  live = undefined;
  const t0 = performance.now();
  const range = parseRange(params, Date.now() * 1000);
  const metric = parseMetric(params);
  const set = (changes: Record<string, string | undefined>) => {
    const p: Record<string, string | undefined> = Object.fromEntries(params.entries());
    go(formatLocation("/fleet", { ...p, ...changes }), true);
  };
  const presets = h("div", { class: "seg", role: "group", "aria-label": "Time range" },
    ...Object.keys(PRESETS).map((k) => h("button", {
      type: "button", class: range.preset === k ? "on" : "", "aria-pressed": range.preset === k ? "true" : "false",
      onclick: () => set({ range: k, from: undefined, to: undefined }),
    }, k)));
  const metrics = h("div", { class: "seg", role: "group", "aria-label": "Metric", "data-testid": "fleet-metric" },
    ...METRICS.map((m) => h("button", {
      type: "button", class: metric === m ? "on" : "", "aria-pressed": metric === m ? "true" : "false",
      "data-metric": m, onclick: () => set({ metric: m }),
    }, METRIC_LABEL[m])));
  const tiles = h("div", { class: "tiles", "data-testid": "fleet-tiles" },
    h("p", { class: "muted tiles-empty" }, "Live tiles appear when a GPU's samples arrive."));
  const heat = h("div", { class: "heat-body" },
    h("div", { class: "state state-loading", role: "status", "data-testid": "fleet-loading" },
      h("span", { class: "spinner" }), "Loading the fleet…"));
  const loading = (what: string) => h("p", { class: "muted", role: "status" }, h("span", { class: "spinner" }), `Loading ${what}…`);
  const health = h("div", { class: "health-body" }, loading("health events"));
  const usage = h("div", { class: "usage-body" }, loading("usage"));
  show(root, h("section", { class: "fleet-page" },
    h("h1", {}, "Fleet"),
    h("div", { class: "filters" }, presets, metrics,
      h("span", { class: "muted", "data-testid": "fleet-range" },
        `${fmtTime(range.from_us)} – ${fmtTime(range.to_us)}`)),
    h("h2", {}, "Live"), tiles,
    h("h2", {}, "GPUs over time"), heat,
    h("h2", {}, "Health"), health,
    h("h2", {}, "Usage"), usage));

  const q = `from=${range.from_us}&to=${range.to_us}`;
  const failed = (where: HTMLElement, what: string) => (e: unknown) => {
    if (!root.isConnected) return;
    if (e instanceof ApiError && e.status === 401) {
      go(formatLocation("/login", { next: location.pathname + location.search }), true);
      return;
    }
    show(where, h("div", { class: "state state-error", role: "alert", "data-testid": "fleet-error" },
      h("h2", {}, `The ${what} could not be loaded`), h("p", {}, errorText(e)),
      h("button", { type: "button", onclick: () => renderFleet(root, params, go) }, "Retry")));
  };
  // Each part draws when its own answer comes: the heatmap never waits for usage.
  const heatmap = call<Heatmap>("GET", `/api/v1/fleet/heatmap?${q}&points=720`).then((hm) => {
    if (root.isConnected) return { hm, width: drawHeatmap(heat, hm, metric, t0) };
    return undefined;
  });
  heatmap.catch(failed(heat, "fleet"));
  // Health and usage read every sample of the range (the heatmap reads rollups): asked once the
  // heatmap has its answer, so they do not compete with it for the server.
  const after = heatmap.catch(() => undefined);
  after.then((drawn) => call<{ events: HealthEvent[]; truncated: boolean }>("GET", `/api/v1/fleet/health?${q}`)
    .then((hl) => {
      if (root.isConnected && drawn) drawHealth(health, hl.events, hl.truncated, drawn.hm, drawn.width);
      else if (root.isConnected) health.replaceChildren();
    }, failed(health, "health events")));
  after.then(() => Promise.all([
    call<{ rows: UsageRow[] }>("GET", `/api/v1/fleet/usage?${q}&group=process`),
    call<{ rows: UsageRow[] }>("GET", `/api/v1/fleet/usage?${q}&group=job`),
    call<{ jobs: { job_id: string }[] }>("GET", "/api/v1/fleet/jobs"),
  ]).then(([byProc, byJob, jobs]) => {
    if (root.isConnected) drawUsage(usage, byProc.rows, byJob.rows, new Set(jobs.jobs.map((j) => j.job_id)));
  }, failed(usage, "usage")));
  // The live stream and its names wait for the heatmap too (fleet/gpus reads every device).
  void after.then(() => { if (root.isConnected) startLive(root, tiles); });
}

function drawHeatmap(body: HTMLElement, hm: Heatmap, metric: Metric, t0: number): number {
  if (!hm.gpus.length) {
    show(body, h("div", { class: "state state-empty", "data-testid": "fleet-empty" },
      h("h2", {}, "No GPU samples in this range"),
      h("p", {}, "GPUs appear here once gpufl-monitor runs on a host and gpufl-agent ships its logs; ",
        "pick a longer range above.")));
    return 0;
  }
  const { rows, hosts } = rowsByHost(hm.gpus);
  const rowPx = Math.max(2, Math.min(ROW_PX_MAX, Math.floor(HEAT_PX_MAX / rows.length)));
  const canvas = h("canvas", { class: "heatmap", "data-testid": "fleet-heatmap", "data-gpus": rows.length,
    "data-points": hm.points, "aria-label": `${METRIC_LABEL[metric]} of ${rows.length} GPUs over time`, role: "img" });
  const labels = h("div", { class: "heat-hosts" },
    ...hosts.map((g) => {
      const el = h("div", { class: "heat-host", title: g.hostname }, `${g.hostname} (${g.count})`);
      el.style.height = `${g.count * rowPx}px`; // CSSOM, not an inline style attribute
      return el;
    }));
  const tip = h("div", { class: "heat-tip", "data-testid": "fleet-tooltip", hidden: true });
  const wrap = h("div", { class: "heat-wrap" }, labels, h("div", { class: "heat-canvas" }, canvas, tip));
  const sm = hm.gpus.some((g) => g.sm_active_pct.some((v) => v !== null));
  show(body, wrap, legend(metric),
    !sm ? h("p", { class: "muted", "data-testid": "fleet-no-sm" },
      "SM activity was not recorded (GPM metrics need a Hopper or newer GPU; each session's capability record says why): ",
      "“wasted” counts only GPUs held by a process while idle.") : null,
    hm.truncated ? h("p", { class: "muted" }, "Only the first GPUs are shown: narrow the range.") : null);
  const cssW = Math.max(200, canvas.parentElement!.clientWidth || 720);
  const cssH = rows.length * rowPx;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(cssW * dpr);
  canvas.height = Math.round(cssH * dpr);
  canvas.style.width = `${cssW}px`;
  canvas.style.height = `${cssH}px`;
  const ctx = canvas.getContext("2d")!;
  // One pixel per cell into an ImageData, scaled by drawImage: 64 x 720 cells in one blit.
  const img = new ImageData(hm.points, rows.length);
  const bg = getComputedStyle(document.documentElement).getPropertyValue("--panel").trim();
  rows.forEach((g, r) => {
    for (let b = 0; b < hm.points; b++) {
      const v = cellValue(g, b, metric);
      const i = (r * hm.points + b) * 4;
      if (v === null) continue; // transparent: the panel shows through
      const [cr, cg, cb] = colour(v);
      img.data[i] = cr; img.data[i + 1] = cg; img.data[i + 2] = cb; img.data[i + 3] = 255;
    }
  });
  const off = document.createElement("canvas");
  off.width = hm.points;
  off.height = rows.length;
  off.getContext("2d")!.putImageData(img, 0, 0);
  ctx.fillStyle = bg || "transparent";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(off, 0, 0, canvas.width, canvas.height);
  ctx.strokeStyle = "rgba(127,127,127,0.8)";
  for (const g of hosts.slice(1)) { // a line between hosts
    ctx.beginPath();
    ctx.moveTo(0, g.first * rowPx * dpr);
    ctx.lineTo(canvas.width, g.first * rowPx * dpr);
    ctx.stroke();
  }
  canvas.dataset.renderMs = (performance.now() - t0).toFixed(1);
  canvas.addEventListener("mousemove", (e) => {
    const rect = canvas.getBoundingClientRect();
    const c = hit(e.clientX - rect.left, e.clientY - rect.top, rect.width, rect.height, hm.points, rows.length);
    if (!c) { tip.hidden = true; return; }
    const g = rows[c.row];
    const at = hm.from_unix_us + c.col * hm.bucket_us;
    const f = (v: number | null | undefined) => (v == null ? "no sample" : `${v} %`);
    tip.replaceChildren(
      h("strong", {}, `${g.hostname ?? "?"} · GPU ${g.device}`), h("br"),
      h("span", { class: "muted" }, g.uuid ?? g.session_id), h("br"),
      `${fmtTime(at)} (+${Math.round(hm.bucket_us / 1e6)} s)`, h("br"),
      h("span", { "data-testid": "tip-util" }, `utilization ${f(g.gpu_util_pct[c.col])}`), h("br"),
      h("span", { "data-testid": "tip-sm" }, `SM active ${f(g.sm_active_pct[c.col])}`), h("br"),
      g.held[c.col] ? "held by a process" : g.held[c.col] === 0 ? "no process" : "");
    tip.dataset.row = String(c.row);
    tip.dataset.col = String(c.col);
    tip.hidden = false;
    tip.style.left = `${Math.min(e.clientX - rect.left + 12, rect.width - 220)}px`;
    tip.style.top = `${e.clientY - rect.top + 12}px`;
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  return cssW;
}

function legend(metric: Metric): HTMLElement {
  const c = h("canvas", { class: "legend-bar", width: 200, height: 10, "aria-hidden": "true" });
  const ctx = c.getContext("2d");
  for (let x = 0; ctx && x < 200; x++) {
    const [r, g, b] = colour(x / 2);
    ctx.fillStyle = `rgb(${r},${g},${b})`;
    ctx.fillRect(x, 0, 1, 10);
  }
  const what = metric === "wasted"
    ? "held but idle (100), or utilization the SMs did not back"
    : metric === "sm" ? "share of SMs active" : "time a kernel ran";
  return h("div", { class: "legend", "data-testid": "fleet-legend" },
    h("span", {}, `${METRIC_LABEL[metric]}: 0 %`), c, h("span", {}, "100 %"),
    h("span", { class: "muted" }, ` ${what}; blank: no sample`));
}

function drawHealth(body: HTMLElement, events: HealthEvent[], truncated: boolean, hm: Heatmap, width: number) {
  if (!events.length) {
    show(body, h("p", { class: "muted", "data-testid": "fleet-health-empty" },
      "No XID, ECC, throttling or lost-GPU events in this range."));
    return;
  }
  const strip = h("canvas", { class: "health-strip", "data-testid": "fleet-health-strip",
    "data-events": events.length, role: "img", "aria-label": `${events.length} health events` });
  const w = width || 720;
  const dpr = window.devicePixelRatio || 1;
  strip.width = Math.round(w * dpr);
  strip.height = Math.round(18 * dpr);
  strip.style.width = `${w}px`;
  strip.style.height = "18px";
  const ctx = strip.getContext("2d")!;
  const css = getComputedStyle(document.documentElement);
  const colours: Record<HealthEvent["kind"], string> = {
    xid: css.getPropertyValue("--error").trim() || "red", gpu_lost: css.getPropertyValue("--error").trim() || "red",
    ecc_dbe: "#d9822b", ecc_sbe: "#c9a227", throttle: css.getPropertyValue("--accent").trim() || "blue",
  };
  for (const e of events) {
    const x = xOf(e.unix_us, hm.from_unix_us, hm.to_unix_us, w) * dpr;
    const x2 = e.end_unix_us ? xOf(e.end_unix_us, hm.from_unix_us, hm.to_unix_us, w) * dpr : x;
    ctx.fillStyle = colours[e.kind];
    if (e.kind === "throttle") ctx.fillRect(x, 10 * dpr, Math.max(2 * dpr, x2 - x), 6 * dpr);
    else ctx.fillRect(x - dpr, 0, 3 * dpr, 18 * dpr);
  }
  const table = h("table", { class: "sessions", "data-testid": "fleet-health-table" },
    h("thead", {}, h("tr", {}, ...["Time", "Kind", "Host", "GPU", "Detail"].map((t) => h("th", {}, t)))),
    h("tbody", {}, ...events.slice(0, 200).map((e) => h("tr", { "data-kind": e.kind, "data-unix-us": e.unix_us },
      h("td", {}, fmtTime(e.unix_us)), h("td", {}, KIND_LABEL[e.kind]), h("td", {}, e.hostname ?? "?"),
      h("td", { class: "mono" }, e.uuid ?? `device ${e.device}`),
      h("td", {}, e.detail + (e.end_unix_us ? ` until ${fmtTime(e.end_unix_us)}` : ""))))));
  show(body, strip, table,
    events.length > 200 || truncated ? h("p", { class: "muted" }, "More events than shown: narrow the range.") : null);
}

function drawUsage(body: HTMLElement, procs: UsageRow[], jobs: UsageRow[], known: Set<string>) {
  if (!procs.length) {
    show(body, h("p", { class: "muted", "data-testid": "fleet-usage-empty" },
      "No GPU process was listed in this range (gpufl-monitor lists them per GPU)."));
    return;
  }
  const num = (s: string) => h("td", { class: "num" }, s);
  const head = (...t: string[]) => h("thead", {}, h("tr", {}, ...t.map((x) => h("th", {}, x))));
  const procTable = h("table", { class: "sessions", "data-testid": "fleet-usage-process" },
    head("Host", "PID", "Command", "User", "Job", "GPUs", "GPU-hours", "kWh"),
    h("tbody", {}, ...procs.map((r) => h("tr", { "data-pid": r.pid ?? "" },
      h("td", {}, r.hostname ?? ""), num(String(r.pid)), h("td", {}, r.comm ?? "?"), h("td", {}, r.user ?? "?"),
      h("td", {}, r.job_id ?? "–"), num(String(r.gpus)), num(fmtHours(r.gpu_hours)), num(fmtKwh(r.energy_kwh))))));
  const jobTable = h("table", { class: "sessions", "data-testid": "fleet-usage-job" },
    head("Job", "GPUs", "GPU-hours", "kWh"),
    h("tbody", {}, ...jobs.map((r) => h("tr", { "data-job": r.job_id ?? "" },
      h("td", {}, r.job_id && known.has(r.job_id)
        ? h("a", { href: `/jobs/${encodeURIComponent(r.job_id)}`, "data-link": true }, r.job_id)
        : r.job_id ?? "(no job)"),
      num(String(r.gpus)), num(fmtHours(r.gpu_hours)), num(fmtKwh(r.energy_kwh))))));
  show(body, h("div", { class: "usage-grid" },
    h("div", {}, h("h3", {}, "Per process"), procTable),
    h("div", {}, h("h3", {}, "Per job"), jobTable)),
    h("p", { class: "muted" }, "A GPU's time and energy between two samples go to the processes listed on it then, ",
      "split by their SM utilization (equally when it is not known)."));
}

function startLive(root: HTMLElement, tiles: HTMLElement) {
  const state = new Map<string, LiveReading>();
  const els = new Map<string, Record<"util" | "mem" | "power" | "temp", HTMLElement>>();
  let names: Map<string, FleetGpu> | undefined;
  const labels = new Map<string, HTMLElement>();
  const label = (k: string) => {
    const g = names?.get(k);
    return g ? `${g.hostname ?? "?"} · GPU ${g.device}` : `GPU ${k}`;
  };
  // A GPU first seen live may be newer than the list: ask again, then name its tile. An older
  // answer that comes after a newer one is dropped.
  let asked = 0, applied = 0;
  const loadNames = () => {
    const n = ++asked;
    return call<{ gpus: FleetGpu[] }>("GET", "/api/v1/fleet/gpus").then((d) => {
      if (n < applied) return;
      applied = n;
      names = new Map(d.gpus.map((g) => [tileKey(g.session_id, g.device), g]));
      for (const [k, el] of labels) el.textContent = label(k);
    }, () => { names = names ?? new Map(); });
  };
  void loadNames();
  const es = new EventSource("/api/v1/live");
  live = es;
  es.addEventListener("sample", (ev) => {
    if (!root.isConnected) { es.close(); return; }
    const doc = JSON.parse((ev as MessageEvent).data) as { session_id: string; devices: LiveReading[] };
    for (const k of mergeLive(state, doc.session_id, doc.devices)) {
      let cells = els.get(k);
      if (!cells) {
        tiles.querySelector(".tiles-empty")?.remove();
        const g = names?.get(k);
        cells = { util: h("dd", {}), mem: h("dd", {}), power: h("dd", {}), temp: h("dd", {}) };
        const name = h("div", { class: "tile-name", title: k }, label(k));
        labels.set(k, name);
        tiles.append(h("div", { class: "tile", "data-testid": "fleet-tile", "data-key": k }, name,
          h("dl", {}, h("dt", {}, "util"), cells.util, h("dt", {}, "mem"), cells.mem,
            h("dt", {}, "power"), cells.power, h("dt", {}, "temp"), cells.temp)));
        els.set(k, cells);
        if (!g) void loadNames();
      }
      const t = fmtTile(state.get(k)!);
      cells.util.textContent = t.util; // text only: the tile's size is fixed in CSS
      cells.mem.textContent = t.mem;
      cells.power.textContent = t.power;
      cells.temp.textContent = t.temp;
    }
  });
  es.addEventListener("error", () => {
    if (!root.isConnected) es.close();
    tiles.dataset.stream = es.readyState === EventSource.CLOSED ? "closed" : "reconnecting";
  });
  es.addEventListener("open", () => { tiles.dataset.stream = "open"; });
}
