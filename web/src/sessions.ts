// SPDX-License-Identifier: Apache-2.0
// The sessions list's data shaping, kept free of the DOM so that it is unit-tested: the filters
// as they sit in the URL, the query they make for GET /api/v1/sessions, the text search and
// state filter done in the browser, and the figures a row shows.

/** One row of GET /api/v1/sessions (docs/server-api.md). */
export interface Session {
  session_id: string;
  app_name: string | null;
  hostname: string | null;
  pid: number | null;
  job_id: string | null;
  engine: string | null;
  gpufl_version: string | null;
  start_unix_us: number | null;
  end_ns: number | null;
  state: string;
  first_seen: number | null;
  last_window_at: number | null;
  completed_at: number | null;
  /** The session_end line's time (the session clock starts at 0); null while unknown. */
  duration_ns?: number | null;
  /** The stored report's top insight severity and insight count; null before a report. */
  top_severity?: string | null;
  insights?: number | null;
}

export interface SessionPage {
  sessions: Session[];
  next_cursor: string | null;
}

/** The server's filters (equality on a column) and the browser's (search text, state). */
export interface Filters {
  q: string;
  app: string;
  host: string;
  job: string;
  engine: string;
  state: string;
  since: string; // a key of SINCE, "" for any time
  sort: "start_desc" | "start_asc";
  dmin: string; // duration range in seconds ("" for no bound), asked of the server
  dmax: string;
  severity: string; // a minimum insight severity (SEVERITIES), "" for any
}

/** Insight severities, lowest first (the API's severity filter is a minimum). */
export const SEVERITIES = ["LOW", "MEDIUM", "HIGH"] as const;

/** A duration bound as typed in the URL: seconds, a non-negative decimal; "" when not one. */
function secondsOrEmpty(v: string): string {
  return /^\d+(\.\d+)?$/.test(v) && Number.isFinite(Number(v)) ? v : "";
}

export const SERVER_FILTERS = ["app", "host", "job", "engine"] as const;
export type ServerFilter = (typeof SERVER_FILTERS)[number];

/** The column of a session each server filter compares (the API's parameter → row field). */
export const FILTER_FIELD: Record<ServerFilter, keyof Session> = {
  app: "app_name",
  host: "hostname",
  job: "job_id",
  engine: "engine",
};

export const SINCE: Record<string, { label: string; us: number }> = {
  "1h": { label: "last hour", us: 3600e6 },
  "24h": { label: "last 24 hours", us: 86400e6 },
  "7d": { label: "last 7 days", us: 7 * 86400e6 },
  "30d": { label: "last 30 days", us: 30 * 86400e6 },
};

export const STATES = ["live", "ended", "complete"] as const;

/** Sessions loaded at most for one view: 4 of the API's 500-session pages. */
export const MAX_SESSIONS = 2000;
export const PAGE_LIMIT = 500;

/** The filters a URL's query names; unknown or malformed values fall back to the default. */
export function parseFilters(params: URLSearchParams): Filters {
  const get = (k: string) => (params.get(k) ?? "").trim();
  const since = get("since");
  const state = get("state");
  return {
    q: get("q"),
    app: get("app"),
    host: get("host"),
    job: get("job"),
    engine: get("engine"),
    state: (STATES as readonly string[]).includes(state) ? state : "",
    since: since in SINCE ? since : "",
    sort: get("sort") === "start_asc" ? "start_asc" : "start_desc",
    dmin: secondsOrEmpty(get("dmin")),
    dmax: secondsOrEmpty(get("dmax")),
    severity: (SEVERITIES as readonly string[]).includes(get("severity")) ? get("severity") : "",
  };
}

/** The URL query of filters: defaults left out, so the plain list has the plain URL. */
export function filtersToQuery(f: Filters): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of ["q", "app", "host", "job", "engine", "state", "since", "dmin", "dmax", "severity"] as const)
    if (f[k]) out[k] = f[k];
  if (f.sort !== "start_desc") out.sort = f.sort;
  return out;
}

/** The query of GET /api/v1/sessions for filters at time nowUs (µs since the epoch). */
export function apiQuery(f: Filters, nowUs: number, cursor?: string): URLSearchParams {
  const p = new URLSearchParams();
  p.set("limit", String(PAGE_LIMIT));
  p.set("sort", f.sort);
  for (const k of SERVER_FILTERS) if (f[k]) p.set(k, f[k]);
  if (f.since) p.set("from", String(Math.floor(nowUs - SINCE[f.since].us)));
  if (f.dmin) p.set("min_duration_ns", String(Math.round(Number(f.dmin) * 1e9)));
  if (f.dmax) p.set("max_duration_ns", String(Math.round(Number(f.dmax) * 1e9)));
  if (f.severity) p.set("severity", f.severity);
  if (cursor) p.set("cursor", cursor);
  return p;
}

/** The state a row shows: "live" for a session still sending (neither ended nor complete). */
export function displayState(s: Session): string {
  if (s.state === "complete" || s.completed_at !== null) return "complete";
  if (s.state === "ended") return "ended";
  return "live";
}

function haystack(s: Session): string {
  return [s.session_id, s.app_name, s.hostname, s.job_id, s.engine, s.pid]
    .filter((v) => v !== null && v !== undefined)
    .join(" ")
    .toLowerCase();
}

/** Whether a session matches search text: every word is in its id, app, host, job, engine or
 * pid (case-insensitive). */
export function matchesSearch(s: Session, q: string): boolean {
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return true;
  const text = haystack(s);
  return words.every((w) => text.includes(w));
}

/** The filters the browser applies to the server's answer. */
export function applyLocalFilters(list: Session[], f: Filters): Session[] {
  return list.filter((s) => matchesSearch(s, f.q) && (!f.state || displayState(s) === f.state));
}

/** The distinct non-empty values of a field, sorted: a filter's choices. */
export function distinctValues(list: Session[], field: keyof Session): string[] {
  const seen = new Set<string>();
  for (const s of list) {
    const v = s[field];
    if (v !== null && v !== undefined && v !== "") seen.add(String(v));
  }
  return [...seen].sort((a, b) => a.localeCompare(b));
}

/** Whether any filter narrows the list (the empty state then offers to clear them). */
export function isFiltered(f: Filters): boolean {
  return Object.keys(filtersToQuery({ ...f, sort: "start_desc" })).length > 0;
}

/** A start time as "2026-11-23 10:15:00 UTC" (the logs' clock is UTC; so is the list). */
export function formatStart(us: number | null): string {
  if (us === null || us <= 0) return "unknown";
  const d = new Date(Math.floor(us / 1000));
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

/** How long ago, from a start in µs, at now in µs: "3 min ago", "2 h ago", "5 d ago". */
export function formatAgo(us: number | null, nowUs: number): string {
  if (us === null || us <= 0) return "";
  const s = Math.max(0, (nowUs - us) / 1e6);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** Walks the API's pages (next_cursor) until the end or MAX_SESSIONS: the sessions and whether
 * some were left out. fetchPage answers one page of the query it is given. */
export async function loadAll(
  fetchPage: (query: URLSearchParams) => Promise<SessionPage>,
  f: Filters,
  nowUs: number,
): Promise<{ sessions: Session[]; capped: boolean }> {
  const out: Session[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await fetchPage(apiQuery(f, nowUs, cursor));
    out.push(...page.sessions);
    if (!page.next_cursor) return { sessions: out, capped: false };
    if (out.length >= MAX_SESSIONS) return { sessions: out.slice(0, MAX_SESSIONS), capped: true };
    cursor = page.next_cursor;
  }
}

/** A session's duration for the list: "4.20 s", "3 min 20 s"; "running" while it is live and
 * "unknown" for one that ended without its session_end line (killed). */
export function formatDuration(s: Session): string {
  const ns = s.duration_ns;
  if (ns === null || ns === undefined) return displayState(s) === "live" ? "running" : "unknown";
  if (ns < 1e6) return `${(ns / 1e3).toFixed(0)} µs`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(1)} ms`;
  if (ns < 60e9) return `${(ns / 1e9).toFixed(2)} s`;
  const sec = Math.round(ns / 1e9);
  if (sec < 3600) return `${Math.floor(sec / 60)} min ${sec % 60} s`;
  return `${Math.floor(sec / 3600)} h ${Math.floor((sec % 3600) / 60)} min`;
}

/** The insights cell: "HIGH · 3", "none" for a report without findings, "" before a report. */
export function formatInsights(s: Session): string {
  if (s.insights === null || s.insights === undefined) return "";
  if (!s.insights) return "none";
  return `${s.top_severity ?? "?"} · ${s.insights}`;
}
