// SPDX-License-Identifier: Apache-2.0
// The sessions page: the workspace's sessions from GET /api/v1/sessions, filtered by column on
// the server and searched in the browser, every filter in the URL; loading, empty and error
// states say what is happening.
import { ApiError, api } from "../api";
import { h, show } from "../dom";
import { formatLocation } from "../router";
import { errorText } from "../states";
import {
  type Filters,
  type Session,
  FILTER_FIELD,
  MAX_SESSIONS,
  SERVER_FILTERS,
  SEVERITIES,
  SINCE,
  STATES,
  applyLocalFilters,
  apiQuery,
  displayState,
  distinctValues,
  filtersToQuery,
  formatAgo,
  formatDuration,
  formatInsights,
  formatStart,
  isFiltered,
  loadAll,
  parseFilters,
} from "../sessions";

const LABELS: Record<string, string> = { app: "App", host: "Host", job: "Job", engine: "Engine" };

/** How long an answer is shown again without asking anew (search and state changes). */
const REUSE_MS = 30_000;

interface Loaded {
  key: string; // the server query these sessions answer
  at: number; // Date.now() when it came
  sessions: Session[];
  capped: boolean;
}

/** What the page keeps between renders: the last answer (search and state need no request)
 * and the filters' choices (from the unfiltered list). */
const cache: { loaded?: Loaded; choices?: Session[]; pending?: string } = {};

function serverKey(f: Filters): string {
  const q = apiQuery(f, 0);
  q.delete("from");
  return q.toString() + (f.since ? "&since=" + f.since : "");
}

function select(name: string, label: string, value: string, options: [string, string][],
                onChange: (v: string) => void): HTMLElement {
  const s = h("select", { id: "filter-" + name, name, onchange: () => onChange(s.value) },
    ...options.map(([v, text]) => h("option", { value: v, selected: v === value }, text)));
  return h("div", { class: "field" }, h("label", { for: "filter-" + name }, label), s);
}

/** A duration bound in seconds: applied when the field is left (or Enter), not per key. */
function durationField(name: string, label: string, value: string,
                       onChange: (v: string) => void): HTMLElement {
  const input = h("input", {
    id: "filter-" + name, name, type: "number", min: "0", step: "any", value,
    placeholder: "any", class: "narrow",
    onchange: () => onChange(input.value.trim()),
  });
  return h("div", { class: "field" }, h("label", { for: "filter-" + name }, label), input);
}


function row(s: Session, nowUs: number): HTMLElement {
  const state = displayState(s);
  return h("tr", { "data-session": s.session_id },
    h("td", { class: "app" }, s.app_name ?? "(unnamed)"),
    h("td", {}, s.hostname ?? ""),
    h("td", { class: "mono" }, h("a", { href: `/sessions/${encodeURIComponent(s.session_id)}`,
      "data-link": true }, s.session_id)),
    h("td", {}, s.job_id ?? ""),
    h("td", {}, s.engine ?? ""),
    h("td", { title: formatStart(s.start_unix_us) }, formatStart(s.start_unix_us),
      h("span", { class: "muted" }, " " + formatAgo(s.start_unix_us, nowUs))),
    h("td", { class: "num duration" }, formatDuration(s)),
    h("td", { class: "insights" }, s.top_severity
      ? h("span", { class: "badge badge-sev-" + s.top_severity.toLowerCase() }, formatInsights(s))
      : formatInsights(s)),
    h("td", {}, h("span", { class: "badge badge-" + state }, state)),
    h("td", {}, h("a", {
      class: "button ghost small", "data-link": true, "data-testid": "compare-with",
      href: formatLocation("/compare", { run: s.session_id }),
      title: "Compare this session with a baseline run of the same app",
    }, "Compare with…")));
}

function table(list: Session[], nowUs: number): HTMLElement {
  return h("table", { class: "sessions", "data-testid": "sessions-table" },
    h("thead", {}, h("tr", {}, ...["App", "Host", "Session", "Job", "Engine", "Started", "Duration", "Insights",
      "State", ""]
      .map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, ...list.map((s) => row(s, nowUs))));
}

export function renderSessions(root: Element, params: URLSearchParams,
                               go: (url: string, replace?: boolean) => void) {
  const f = parseFilters(params);
  const set = (patch: Partial<Filters>, replace = false) =>
    go(formatLocation("/sessions", filtersToQuery({ ...f, ...patch })), replace);

  const search = h("input", {
    id: "filter-q", type: "search", placeholder: "Search app, host, session, job, pid…",
    value: f.q, "aria-label": "Search sessions",
  });
  let timer: number | undefined;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = window.setTimeout(() => set({ q: search.value }, true), 150);
  });
  const body = h("div", { class: "list-body" });
  const choices = cache.choices ?? cache.loaded?.sessions ?? [];
  const bar = h("form", { class: "filters", onsubmit: (e: Event) => e.preventDefault() },
    h("div", { class: "field grow" }, h("label", { for: "filter-q" }, "Search"), search),
    ...SERVER_FILTERS.map((k) => {
      const values = distinctValues(choices, FILTER_FIELD[k]);
      if (f[k] && !values.includes(f[k])) values.unshift(f[k]);
      return select(k, LABELS[k], f[k], [["", "any"], ...values.map((v): [string, string] => [v, v])],
        (v) => set({ [k]: v }));
    }),
    select("state", "State", f.state, [["", "any"], ...STATES.map((s): [string, string] => [s, s])],
      (v) => set({ state: v })),
    select("since", "Started", f.since,
      [["", "any time"], ...Object.entries(SINCE).map(([k, v]): [string, string] => [k, v.label])],
      (v) => set({ since: v })),
    durationField("dmin", "Longer than (s)", f.dmin, (v) => set({ dmin: v })),
    durationField("dmax", "Shorter than (s)", f.dmax, (v) => set({ dmax: v })),
    select("severity", "Insights", f.severity,
      [["", "any"], ...SEVERITIES.map((s): [string, string] => [s, s + " or worse"])],
      (v) => set({ severity: v })),
    select("sort", "Order", f.sort, [["start_desc", "newest first"], ["start_asc", "oldest first"]],
      (v) => set({ sort: v as Filters["sort"] })));
  // Typing in the search re-renders the page (the URL changed): the field keeps its focus.
  const typing = document.activeElement?.id === "filter-q";
  show(root, h("section", { class: "sessions-page" }, h("h1", {}, "Sessions"), bar, body));
  if (typing) {
    search.focus();
    search.setSelectionRange(search.value.length, search.value.length);
  }

  const nowUs = Date.now() * 1000;
  const paint = (loaded: Loaded) => {
    const list = applyLocalFilters(loaded.sessions, f);
    if (!loaded.sessions.length && !isFiltered(f)) {
      show(body, h("div", { class: "state state-empty", "data-testid": "sessions-empty" },
        h("h2", {}, "No sessions yet"),
        h("p", {}, "Sessions appear here once a recorded run is uploaded: ",
          h("code", {}, "gpufl upload --server URL --all DIR"), " or gpufl-agent.")));
      return;
    }
    if (!list.length) {
      show(body, h("div", { class: "state state-empty", "data-testid": "sessions-empty" },
        h("h2", {}, "No sessions match these filters"),
        h("a", { href: "/sessions", "data-link": true }, "Clear the filters")));
      return;
    }
    const total = loaded.sessions.length;
    show(body,
      h("p", { class: "count", "data-testid": "sessions-count" },
        `${list.length} session${list.length === 1 ? "" : "s"}`,
        list.length !== total ? ` of ${total}` : "",
        loaded.capped ? ` (the newest ${MAX_SESSIONS} only: narrow the filters)` : ""),
      table(list, nowUs));
  };

  const key = serverKey(f);
  if (cache.loaded?.key === key && Date.now() - cache.loaded.at < REUSE_MS) {
    paint(cache.loaded);
    return;
  }
  show(body, h("div", { class: "state state-loading", "data-testid": "sessions-loading",
    role: "status" }, h("span", { class: "spinner" }), "Loading sessions…"));
  cache.pending = key;
  const load = () => loadAll(api.sessions, f, nowUs);
  const choicesLoad = cache.choices || !SERVER_FILTERS.some((k) => f[k])
    ? Promise.resolve(undefined)
    : api.sessions(apiQuery(parseFilters(new URLSearchParams()), nowUs)).then((p) => p.sessions);
  Promise.all([load(), choicesLoad]).then(([r, all]) => {
    if (cache.pending !== key) return; // a newer view asked for other sessions meanwhile
    cache.loaded = { key, at: Date.now(), ...r };
    if (all) cache.choices = all;
    else if (!SERVER_FILTERS.some((k) => f[k]) && !f.since && !f.dmin && !f.dmax && !f.severity)
      cache.choices = r.sessions;
    // Re-render so the filters' choices reflect what was loaded.
    renderSessions(root, params, go);
  }, (e) => {
    if (cache.pending !== key) return;
    if (e instanceof ApiError && e.status === 401) {
      go(formatLocation("/login", { next: location.pathname + location.search }), true);
      return;
    }
    show(body, h("div", { class: "state state-error", role: "alert", "data-testid": "sessions-error" },
      h("h2", {}, "The sessions could not be loaded"),
      h("p", {}, errorText(e)),
      h("button", { type: "button", onclick: () => renderSessions(root, params, go) }, "Retry")));
  });
}

/** Forgets what was loaded (after logging out, another user must not see it). */
export function resetSessionsCache(): void {
  delete cache.loaded;
  delete cache.choices;
  delete cache.pending;
}
