// SPDX-License-Identifier: Apache-2.0
// One job's ranks side by side: its sessions (GET /api/v1/sessions?job=) and each one's
// kernels per name (GET .../kernels), shaped by jobs/ranks.ts into per-rank figures and the
// straggler. The number of kernel columns is in the URL (?top=).
import { call } from "../api";
import { h, show } from "../dom";
import {
  type Rank,
  type RankKernels,
  type RankSession,
  buildRanks,
  findStraggler,
  formatNs,
  topKernels,
} from "../jobs/ranks";
import { formatLocation } from "../router";
import { emptyState, errorState, loadingState } from "../states";

/** Ranks loaded at most: one kernels request each, a few at a time. */
export const MAX_RANKS = 256;
const PARALLEL = 6;

async function mapLimited<T, R>(xs: T[], n: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(xs.length);
  let next = 0;
  const worker = async () => {
    while (next < xs.length) {
      const i = next++;
      out[i] = await fn(xs[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, xs.length) }, worker));
  return out;
}

function bar(value: number, max: number, cls = ""): HTMLElement {
  const pct = max > 0 ? Math.max(0, Math.min(100, (100 * value) / max)) : 0;
  // Through the CSSOM: the page's policy refuses style attributes.
  const el = h("div", { class: "bar-fill " + cls });
  el.style.width = `${pct.toFixed(1)}%`;
  return el;
}

function ranksTable(ranks: Rank[], kernels: string[], stragglerRank: number | null): HTMLElement {
  const maxGpu = Math.max(0, ...ranks.map((r) => r.gpu_ns));
  const head = ["Rank", "Host", "PID", "Session", "Wall time", "GPU kernel time", "", "Kernels",
    "Communication (NCCL)", ...kernels];
  return h("table", { class: "sessions", "data-testid": "ranks-table" },
    h("thead", {}, h("tr", {}, ...head.map((c, i) =>
      h("th", { scope: "col", class: i >= 4 && i !== 6 ? "num" : undefined, title: c }, i >= 9 ? short(c) : c)))),
    h("tbody", {}, ...ranks.map((r) => h("tr", {
      "data-rank": String(r.rank), "data-session": r.session_id,
      class: r.rank === stragglerRank ? "straggler" : undefined,
    },
    h("td", { class: "num" }, String(r.rank)),
    h("td", {}, r.host),
    h("td", { class: "num" }, r.pid === null ? "" : String(r.pid)),
    h("td", { class: "mono" }, h("a", { href: `/sessions/${encodeURIComponent(r.session_id)}`, "data-link": true },
      r.session_id)),
    h("td", { class: "num", "data-metric": "wall" }, formatNs(r.wall_ns)),
    h("td", { class: "num", "data-metric": "gpu", "data-ns": String(r.gpu_ns) }, formatNs(r.gpu_ns)),
    h("td", { class: "bar" }, bar(r.gpu_ns, maxGpu)),
    h("td", { class: "num", "data-metric": "kernels" }, String(r.kernels)),
    h("td", { class: "num", "data-metric": "comm" }, formatNs(r.comm_ns)),
    ...kernels.map((k) => h("td", { class: "num", "data-kernel": k }, formatNs(r.by_kernel.get(k) ?? 0)))))));
}

function short(name: string): string {
  return name.length > 28 ? name.slice(0, 26) + "…" : name;
}

export function renderJob(root: Element, jobId: string, params: URLSearchParams,
                          go: (url: string, replace?: boolean) => void) {
  const top = Math.max(1, Math.min(10, Number(params.get("top")) || 3));
  const topSelect = h("select", { id: "job-top", onchange: () =>
    go(formatLocation(`/jobs/${encodeURIComponent(jobId)}`, { top: topSelect.value === "3" ? "" : topSelect.value }), true) },
  ...[1, 3, 5, 10].map((n) => h("option", { value: String(n), selected: n === top }, String(n))));
  const body = h("div", {}, loadingState("job-loading", "Loading the job's ranks…"));
  show(root, h("section", { class: "job-page" },
    h("p", {}, h("a", { href: "/jobs", "data-link": true }, "← Jobs")),
    h("h1", {}, "Job ", h("span", { class: "mono", "data-testid": "job-id" }, jobId)),
    h("div", { class: "row" }, h("div", { class: "field" }, h("label", { for: "job-top" }, "Kernel columns"), topSelect)),
    body));

  const load = async () => {
    const q = new URLSearchParams({ job: jobId, limit: "500", sort: "start_asc" });
    const page = await call<{ sessions: RankSession[] }>("GET", `/api/v1/sessions?${q}`);
    const sessions = page.sessions.slice(0, MAX_RANKS);
    const answers = await mapLimited(sessions, PARALLEL, (s) =>
      call<RankKernels>("GET", `/api/v1/sessions/${encodeURIComponent(s.session_id)}/kernels?limit=200`));
    return { sessions, all: page.sessions.length, kernels: new Map(sessions.map((s, i) => [s.session_id, answers[i]])) };
  };
  load().then(({ sessions, all, kernels }) => {
    if (!sessions.length) {
      show(body, emptyState("job-empty", "No sessions of this job in this workspace",
        h("p", {}, "The job id may be wrong, or its sessions were uploaded to another workspace."),
        h("a", { href: "/jobs", "data-link": true }, "All jobs")));
      return;
    }
    const ranks = buildRanks(sessions, kernels);
    const names = topKernels(ranks, top);
    const st = findStraggler(ranks, topKernels(ranks, 10));
    const noKernels = ranks.every((r) => r.kernels === 0);
    show(body,
      st ? h("p", { class: "callout", "data-testid": "straggler" },
        h("strong", {}, "Straggler: "), st.text, " (",
        formatNs(st.value_ns), " against a median of ", formatNs(st.median_ns), ")")
        : h("p", { class: "callout", "data-testid": "straggler" }, ranks.length < 2
          ? "One rank: nothing to compare it with."
          : "No straggler: every rank is within 5 % of the median on every figure."),
      noKernels ? h("p", { class: "muted", "data-testid": "job-no-kernels" },
        "These sessions recorded no kernel times (an engine without kernel activity, such as Monitor): " +
        "only wall times compare.") : null,
      h("p", { class: "count", "data-testid": "ranks-count" }, `${ranks.length} rank${ranks.length === 1 ? "" : "s"}`,
        all > sessions.length ? ` (the first ${MAX_RANKS} of ${all})` : ""),
      ranksTable(ranks, names, st ? st.rank : null));
  }, (e) => {
    const el = errorState("job-error", "The job could not be loaded", e,
      () => renderJob(root, jobId, params, go), go);
    if (el) show(body, el);
  });
}
