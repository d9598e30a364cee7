// SPDX-License-Identifier: Apache-2.0
// The jobs page: the workspace's sessions grouped by job id (GET /api/v1/fleet/jobs), each a
// link to its ranks side by side; searchable, the search in the URL.
import { call } from "../api";
import { h, show } from "../dom";
import { formatNs } from "../jobs/ranks";
import { formatLocation } from "../router";
import { formatStart } from "../sessions";
import { emptyState, errorState, loadingState } from "../states";

export interface Job {
  job_id: string;
  sessions: number;
  first_start_unix_us: number | null;
  last_seen_unix_s: number | null;
  hosts: string[];
  gpu_time_ns: number | null;
  kernels: number | null;
}

export function renderJobs(root: Element, params: URLSearchParams,
                           go: (url: string, replace?: boolean) => void) {
  const q = (params.get("q") ?? "").trim();
  const search = h("input", { id: "jobs-q", type: "search", value: q, placeholder: "Job id or host…",
    "aria-label": "Search jobs" });
  search.addEventListener("change", () => go(formatLocation("/jobs", { q: search.value.trim() }), true));
  const body = h("div", {}, loadingState("jobs-loading", "Loading jobs…"));
  show(root, h("section", { class: "jobs-page" }, h("h1", {}, "Jobs"),
    h("form", { class: "filters", onsubmit: (e: Event) => e.preventDefault() },
      h("div", { class: "field grow" }, h("label", { for: "jobs-q" }, "Search"), search)),
    body));
  const load = () => call<{ jobs: Job[]; truncated: boolean }>("GET", "/api/v1/fleet/jobs").then((a) => {
    if (!a.jobs.length) {
      show(body, emptyState("jobs-empty", "No jobs yet",
        h("p", {}, "A session belongs to a job when it records a job id: SLURM_JOB_ID, " +
          "TORCHELASTIC_RUN_ID or GPUFL_JOB_ID in its environment.")));
      return;
    }
    const words = q.toLowerCase().split(/\s+/).filter(Boolean);
    const list = a.jobs.filter((j) => {
      const text = [j.job_id, ...j.hosts].join(" ").toLowerCase();
      return words.every((w) => text.includes(w));
    });
    if (!list.length) {
      show(body, emptyState("jobs-empty", "No jobs match",
        h("a", { href: "/jobs", "data-link": true }, "Clear the search")));
      return;
    }
    show(body,
      h("p", { class: "count", "data-testid": "jobs-count" },
        `${list.length} job${list.length === 1 ? "" : "s"}`,
        list.length !== a.jobs.length ? ` of ${a.jobs.length}` : "",
        a.truncated ? " (the server listed its first 10 000 only)" : ""),
      h("table", { class: "sessions", "data-testid": "jobs-table" },
        h("thead", {}, h("tr", {}, ...["Job", "Ranks", "Hosts", "Started", "GPU kernel time", "Kernels"]
          .map((c, i) => h("th", { scope: "col", class: i >= 4 ? "num" : undefined }, c)))),
        h("tbody", {}, ...list.map((j) => h("tr", { "data-job": j.job_id },
          h("td", { class: "app" }, h("a", { href: `/jobs/${encodeURIComponent(j.job_id)}`, "data-link": true },
            j.job_id)),
          h("td", { class: "num" }, String(j.sessions)),
          h("td", {}, j.hosts.join(", ")),
          h("td", {}, formatStart(j.first_start_unix_us)),
          h("td", { class: "num" }, formatNs(j.gpu_time_ns ?? 0)),
          h("td", { class: "num" }, String(j.kernels ?? 0)))))));
  }, (e) => {
    const el = errorState("jobs-error", "The jobs could not be loaded", e,
      () => renderJobs(root, params, go), go);
    if (el) show(body, el);
  });
  void load();
}
