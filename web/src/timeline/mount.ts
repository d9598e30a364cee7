// SPDX-License-Identifier: Apache-2.0
// The session timeline as a component: mountTimeline draws it into an element of the session
// page, fetches tiles as the view changes (debounced, stale fetches aborted, a tile cache kept
// across remounts of the same session) and keeps the view (t0, t1) and selection (sel) in the
// page's URL. Keys: +/- or W/S zoom, arrows or A/D pan, Tab to the next kernel, Enter selects.
import { ApiError } from "../api";
import { h, show } from "../dom";
import { type Colors, type Hit, LABEL_PX, draw, layout, readColors } from "./draw";
import { type GpuEvent, type TileAnswer, Lanes, eventId, merge, nextKernel } from "./model";
import { formatDuration } from "./ticks";
import { TileCache, drawable, tileKey, tileQuery, tilesFor } from "./tiles";
import { type Range, clamp, pan, rangeFromParams, withView, zoom } from "./view";

export interface TimelineOptions {
  sessionId: string;
  params: URLSearchParams;
  go: (url: string, replace?: boolean) => void;
}

/** What the browser tests read: the last frames' draw times (ms) and what the last drew. */
export interface TimelineProbe {
  frames: number[];
  drawn: { events: number; spans: number; buckets: number; arrows: number };
  inView: number;
  scopesInView: number;
  view?: Range;
  pending: number;
}
declare global {
  interface Window {
    __gpuflTimeline?: TimelineProbe;
  }
}

const FETCH_DEBOUNCE_MS = 60;
const URL_DEBOUNCE_MS = 250;
const FRAMES_KEPT = 1000;

/** What outlives a remount of the same session's timeline (the page re-renders on each URL
 * change): the extent, the tiles, the lanes seen, the focused event, keyboard focus. */
interface Kept {
  sessionId: string;
  extent?: Range;
  cache: TileCache<TileAnswer>;
  lanes: Lanes;
  focused?: string;
  hadFocus: boolean;
}
let kept: Kept | undefined;

function base(id: string): string {
  return `/api/v1/sessions/${encodeURIComponent(id)}`;
}

async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  let r: Response;
  try {
    r = await fetch(path, { headers: { Accept: "application/json" }, credentials: "same-origin",
                            signal });
  } catch (e) {
    if (signal?.aborted) throw e;
    throw new ApiError(0, "the server cannot be reached");
  }
  const doc = await r.json().catch(() => null);
  if (!r.ok) throw new ApiError(r.status, (doc as { error?: string } | null)?.error ||
                                `the server answered ${r.status}`);
  return doc as T;
}

function errorText(e: unknown): string {
  if (e instanceof ApiError)
    return e.status === 0 ? "The server cannot be reached. Is gpufl-server running?"
      : `The server answered ${e.status}: ${e.message}`;
  return String(e);
}

/** Mounts the timeline into el; returns a function that unmounts it (listeners, timers,
 * fetches). */
export function mountTimeline(el: HTMLElement, opts: TimelineOptions): () => void {
  if (!kept || kept.sessionId !== opts.sessionId)
    kept = { sessionId: opts.sessionId, cache: new TileCache(), lanes: new Lanes(),
             hadFocus: false };
  const k = kept;
  const probe: TimelineProbe = window.__gpuflTimeline ?? {
    frames: [], drawn: { events: 0, spans: 0, buckets: 0, arrows: 0 }, inView: 0,
    scopesInView: 0, pending: 0,
  };
  window.__gpuflTimeline = probe;
  let view: Range | undefined = rangeFromParams(opts.params);
  let sel: string | undefined = opts.params.get("sel") || undefined;
  let colors: Colors = readColors(el);
  let hits: Hit[] = [];
  let frameReq = 0, fetchTimer = 0, urlTimer = 0, dead = false, emptyShown = false;
  const inflight = new Map<string, AbortController>();
  let failed: unknown;

  const status = h("div", { class: "state", role: "status", "data-testid": "timeline-status" });
  const summary = h("p", { class: "muted", "data-testid": "timeline-summary" });
  const canvas = h("canvas", {
    tabindex: 0, "data-testid": "timeline-canvas", class: "timeline-canvas",
    "aria-label": "Session timeline. Plus and minus zoom, arrows pan, Tab moves to the next " +
      "kernel, Enter selects it, Escape clears the selection.",
  });
  const details = h("div", { class: "timeline-details", "data-testid": "timeline-details" });
  show(el, h("section", { class: "timeline", "data-testid": "timeline" }, status, summary,
    canvas, details,
    h("p", { class: "muted small" },
      "Wheel or +/− zoom · drag, ←/→ or A/D pan · Tab/Shift+Tab next/previous kernel · " +
      "Enter select · Esc clear · 0 whole session")));
  const ctx = canvas.getContext("2d")!;

  function setStatus(kind: "loading" | "error" | "empty" | "", text = "", retry = false) {
    status.className = kind ? `state state-${kind}` : "state";
    status.hidden = !kind;
    show(status, text, retry ? h("button", { type: "button", onclick: () => {
      failed = undefined;
      start();
    } }, "Retry") : null);
  }

  // ---- drawing -----------------------------------------------------------------------------
  function requestDraw() {
    if (!frameReq && !dead) frameReq = requestAnimationFrame(frame);
  }

  function frame() {
    frameReq = 0;
    if (!view || !k.extent) return;
    const t = performance.now();
    const tiles = tilesFor(view, k.extent);
    const merged = merge(drawable(tiles, k.cache), view);
    k.lanes.add(merged);
    const lanes = k.lanes.list();
    const width = Math.max(200, el.clientWidth || 800);
    const height = layout(lanes).height;
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(height * dpr)) {
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(height * dpr);
      canvas.style.width = `${width}px`;
      canvas.style.height = `${height}px`;
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const stats = draw({ ctx, width, height, view, origin: k.extent.t0, merged, lanes, colors,
                         selected: sel, focused: k.focused });
    hits = stats.hits;
    probe.frames.push(performance.now() - t);
    if (probe.frames.length > FRAMES_KEPT) probe.frames.splice(0, probe.frames.length - FRAMES_KEPT);
    probe.drawn = { events: stats.events, spans: stats.spans, buckets: stats.buckets,
                    arrows: stats.arrows };
    probe.inView = merged.inView;
    probe.scopesInView = merged.scopesInView;
    probe.view = { ...view };
    summary.textContent = `${merged.inView} GPU events · ${merged.scopesInView} scopes in ` +
      `${formatDuration(view.t1 - view.t0)}` +
      (merged.density.length ? " · shaded strips count events too short to draw one by one" : "");
    const answered = tiles.every((t) => k.cache.has(tileKey(t)));
    if (answered && !emptyShown && !merged.events.length && !merged.spans.length &&
        !merged.counters.size && view.t1 - view.t0 >= k.extent.t1 - k.extent.t0) {
      emptyShown = true;
      void showEmpty();
    }
  }

  async function showEmpty() {
    let why = "";
    try {
      const s = await getJson<{ capabilities?: { features?: Record<string,
        { on?: boolean; why?: string }> } }>(base(opts.sessionId));
      const f = s.capabilities?.features?.cupti_trace;
      if (f && !f.on) why = ` GPU tracing was off: ${f.why ?? "no reason recorded"}.`;
    } catch {
      /* the empty state says enough without the reason */
    }
    if (!dead) setStatus("empty", "This session recorded no GPU activity, scopes or GPU " +
      "samples." + why);
  }

  // ---- fetching ------------------------------------------------------------------------------
  function scheduleFetch() {
    clearTimeout(fetchTimer);
    fetchTimer = window.setTimeout(fetchTiles, FETCH_DEBOUNCE_MS);
  }

  function fetchTiles() {
    if (!view || !k.extent || dead) return;
    const want = tilesFor(view, k.extent);
    const keys = new Set(want.map(tileKey));
    for (const [key, ac] of inflight) if (!keys.has(key)) {
      ac.abort(); // a tile this view no longer needs
      inflight.delete(key);
    }
    for (const t of want) {
      const key = tileKey(t);
      if (k.cache.has(key) || inflight.has(key)) continue;
      const ac = new AbortController();
      inflight.set(key, ac);
      getJson<TileAnswer>(`${base(opts.sessionId)}/timeline?${tileQuery(t)}`, ac.signal)
        .then((a) => {
          k.cache.set(key, a);
          setStatus("");
          requestDraw();
        })
        .catch((e) => {
          if (ac.signal.aborted) return;
          failed = e;
          setStatus("error", errorText(e), true);
        })
        .finally(() => {
          if (inflight.get(key) === ac) inflight.delete(key);
          probe.pending = inflight.size;
        });
    }
    probe.pending = inflight.size;
  }

  // ---- the view and the URL --------------------------------------------------------------------
  function setView(v: Range) {
    if (!k.extent) return;
    view = clamp(v, k.extent);
    requestDraw();
    scheduleFetch();
    scheduleUrl();
  }

  function scheduleUrl() {
    clearTimeout(urlTimer);
    urlTimer = window.setTimeout(() => {
      if (!view || dead) return;
      if (drag) return scheduleUrl(); // the page re-renders on a URL change: not mid-drag
      opts.go(withView(location.pathname, new URLSearchParams(location.search), view, sel), true);
    }, URL_DEBOUNCE_MS);
  }

  function select(id: string | undefined) {
    sel = id;
    if (id) k.focused = id;
    requestDraw();
    scheduleUrl();
    void showDetails();
  }

  async function showDetails() {
    const id = sel;
    if (!id) {
      show(details);
      return;
    }
    const [kind, device, stream, start] = id.split(":");
    show(details, h("p", { class: "muted" }, "Loading the event…"));
    try {
      const a = await getJson<{ events: (GpuEvent & Record<string, number>)[] }>(
        `${base(opts.sessionId)}/timeline?kinds=gpu,launches,details&from=${start}` +
        `&to=${Number(start) + 1}&max_events=1000`);
      if (sel !== id || dead) return;
      const e = a.events.find((x) => x.kind === kind && String(x.device ?? "") === device &&
                                     String(x.stream ?? "") === stream);
      if (!e) {
        show(details, h("p", { class: "muted" }, "The selected event is not in this session."));
        return;
      }
      const rows: [string, string][] = [
        ["Name", e.name ?? e.kind], ["Kind", e.kind],
        ["Duration", formatDuration((e.end_ns ?? e.start_ns) - e.start_ns)],
        ["Start", formatDuration(e.start_ns - (k.extent?.t0 ?? 0)) + " into the session"],
        ["Device", String(e.device ?? "")], ["Stream", String(e.stream ?? "")],
      ];
      if (e.grid_x !== undefined)
        rows.push(["Grid", `${e.grid_x} × ${e.grid_y ?? 1} × ${e.grid_z ?? 1}`]);
      if (e.block_x !== undefined)
        rows.push(["Block", `${e.block_x} × ${e.block_y ?? 1} × ${e.block_z ?? 1}`]);
      if (e.registers !== undefined) rows.push(["Registers", String(e.registers)]);
      if (e.bytes !== undefined) rows.push(["Bytes", String(e.bytes)]);
      if (e.correlation !== undefined) rows.push(["Correlation", String(e.correlation)]);
      if (e.tid !== undefined) rows.push(["Thread", String(e.tid)]);
      if (e.launch_ns !== undefined)
        rows.push(["Launch to start", formatDuration(e.start_ns - e.launch_ns)]);
      show(details, h("h3", {}, "Selected event"),
        h("dl", { class: "facts" }, ...rows.flatMap(([a2, b]) =>
          [h("dt", {}, a2), h("dd", { "data-field": a2.toLowerCase() }, b)])));
    } catch (e) {
      if (sel === id && !dead)
        show(details, h("p", { class: "state-error", role: "alert" }, errorText(e)));
    }
  }

  // ---- input -------------------------------------------------------------------------------------
  const plotShare = (clientX: number) => {
    const r = canvas.getBoundingClientRect();
    return Math.min(1, Math.max(0, (clientX - r.left - LABEL_PX) / Math.max(1, r.width - LABEL_PX)));
  };

  function onWheel(ev: WheelEvent) {
    if (!view) return;
    ev.preventDefault();
    setView(zoom(view, Math.exp(ev.deltaY * 0.002), plotShare(ev.clientX), k.extent!));
  }

  let drag: { x: number; view: Range; moved: boolean } | undefined;
  function onDown(ev: PointerEvent) {
    if (!view || ev.button !== 0) return;
    drag = { x: ev.clientX, view: { ...view }, moved: false };
    canvas.setPointerCapture?.(ev.pointerId);
  }
  function onMove(ev: PointerEvent) {
    if (!drag) return;
    const dx = ev.clientX - drag.x;
    if (Math.abs(dx) > 3) drag.moved = true;
    if (drag.moved) {
      const w = canvas.getBoundingClientRect().width - LABEL_PX;
      setView(pan(drag.view, -dx / Math.max(1, w), k.extent!));
    }
  }
  function onUp(ev: PointerEvent) {
    if (!drag) return;
    const wasClick = !drag.moved;
    drag = undefined;
    if (!wasClick) return;
    const r = canvas.getBoundingClientRect();
    const px = ev.clientX - r.left, py = ev.clientY - r.top;
    const hit = hits.find((b) => px >= b.x0 && px <= b.x1 && py >= b.y0 && py <= b.y1);
    select(hit?.id);
  }

  function navEvents(): GpuEvent[] {
    if (!view || !k.extent) return [];
    // The tiles drawn reach past the view: the next kernel may be just outside it.
    return merge(drawable(tilesFor(view, k.extent), k.cache), k.extent).events;
  }

  function onKey(ev: KeyboardEvent) {
    if (!view || !k.extent) return;
    const key = ev.key;
    if (key === "+" || key === "=" || key === "w" || key === "W")
      setView(zoom(view, 0.5, 0.5, k.extent));
    else if (key === "-" || key === "_" || key === "s" || key === "S")
      setView(zoom(view, 2, 0.5, k.extent));
    else if (key === "ArrowLeft" || key === "a" || key === "A") setView(pan(view, -0.2, k.extent));
    else if (key === "ArrowRight" || key === "d" || key === "D") setView(pan(view, 0.2, k.extent));
    else if (key === "0" || key === "Home") setView({ ...k.extent });
    else if (key === "Tab") {
      const next = nextKernel(navEvents(), k.focused ?? sel, ev.shiftKey ? -1 : 1, view.t0);
      if (!next) return; // past the last kernel: Tab leaves the timeline
      k.focused = eventId(next);
      canvas.setAttribute("aria-label", `Kernel ${next.name ?? ""}, ` +
        formatDuration((next.end_ns ?? next.start_ns) - next.start_ns) + ". Enter selects it.");
      if (next.start_ns < view.t0 || next.start_ns >= view.t1) {
        const span = view.t1 - view.t0;
        setView({ t0: next.start_ns - span / 2, t1: next.start_ns + span / 2 });
      } else requestDraw();
    } else if (key === "Enter") {
      if (k.focused) select(k.focused);
    } else if (key === "Escape") select(undefined);
    else return;
    ev.preventDefault();
  }

  const themeWatch = new MutationObserver(() => {
    colors = readColors(el);
    requestDraw();
  });
  themeWatch.observe(document.documentElement, { attributes: true,
                                                 attributeFilter: ["data-theme"] });
  const resize = new ResizeObserver(() => requestDraw());
  resize.observe(el);
  canvas.addEventListener("wheel", onWheel, { passive: false });
  canvas.addEventListener("pointerdown", onDown);
  canvas.addEventListener("pointermove", onMove);
  canvas.addEventListener("pointerup", onUp);
  canvas.addEventListener("keydown", onKey);
  canvas.addEventListener("focus", () => (k.hadFocus = true));
  canvas.addEventListener("blur", () => {
    // A page re-render removes the canvas (blur) and mounts the next one in the same task:
    // only a blur that leaves this canvas in the page is the user moving on.
    setTimeout(() => {
      if (canvas.isConnected) k.hadFocus = document.activeElement === canvas;
    }, 0);
  });

  // ---- start -------------------------------------------------------------------------------------
  async function start() {
    if (!k.extent) {
      setStatus("loading", "Loading the timeline…");
      try {
        // The cheapest answer that tells the session's extent: one counter bucket.
        const a = await getJson<TileAnswer>(
          `${base(opts.sessionId)}/timeline?kinds=counters&points=1&counters=gpu_util_pct`);
        if (dead) return;
        k.extent = { t0: a.from_ns, t1: Math.max(a.to_ns, a.from_ns + 1) };
      } catch (e) {
        if (dead) return;
        failed = e;
        setStatus("error", errorText(e) + (e instanceof ApiError && e.status === 404
          ? "" : " The timeline could not be loaded."), !(e instanceof ApiError &&
          e.status === 404));
        return;
      }
    }
    view = clamp(view ?? { ...k.extent }, k.extent);
    if (!failed) setStatus(tilesFor(view, k.extent).every((t) => k.cache.has(tileKey(t)))
      ? "" : "loading", "Loading the timeline…");
    if (k.hadFocus) canvas.focus();
    requestDraw();
    fetchTiles();
    if (sel) void showDetails();
  }
  void start();

  return () => {
    dead = true;
    cancelAnimationFrame(frameReq);
    clearTimeout(fetchTimer);
    clearTimeout(urlTimer);
    for (const ac of inflight.values()) ac.abort();
    inflight.clear();
    themeWatch.disconnect();
    resize.disconnect();
    canvas.removeEventListener("wheel", onWheel);
    canvas.removeEventListener("pointerdown", onDown);
    canvas.removeEventListener("pointermove", onMove);
    canvas.removeEventListener("pointerup", onUp);
    canvas.removeEventListener("keydown", onKey);
  };
}
