// SPDX-License-Identifier: Apache-2.0
// The session page's calls (docs/server-api.md), each answer kept per session so that switching
// views or sorting a table asks the server nothing again; a refresh or a logout forgets them.
import { call } from "../api";
import type { MetricsDoc } from "./charts";
import type { Insight, KernelsDoc, Report, SessionSummary } from "./model";
import type { ScopesDoc } from "./scopes";
import type { FunctionSass, FunctionsDoc } from "./source";

const cache = new Map<string, Promise<unknown>>();
/** Answers kept at most (a session's views and a few zoomed metric ranges). */
const CACHE_MAX = 64;

function get<T>(path: string): Promise<T> {
  let p = cache.get(path) as Promise<T> | undefined;
  if (!p) {
    if (cache.size >= CACHE_MAX) cache.clear();
    p = call<T>("GET", path);
    cache.set(path, p);
    // A failure is not kept: a retry asks again.
    p.catch(() => cache.delete(path));
  }
  return p;
}

export function sessionPath(id: string): string {
  return `/api/v1/sessions/${encodeURIComponent(id)}`;
}

export const sessionApi = {
  summary: (id: string) => get<SessionSummary>(sessionPath(id)),
  report: (id: string) => get<Report>(`${sessionPath(id)}/report?format=json`),
  insights: (id: string) =>
    get<{ insights: Insight[] }>(`${sessionPath(id)}/insights`).then((d) => d.insights),
  kernels: (id: string) => get<KernelsDoc>(`${sessionPath(id)}/kernels?limit=10000`),
  scopes: (id: string) => get<ScopesDoc>(`${sessionPath(id)}/scopes`),
  functions: (id: string) => get<FunctionsDoc>(`${sessionPath(id)}/functions?limit=1000`),
  sass: (id: string, name: string) =>
    get<FunctionSass>(`${sessionPath(id)}/functions/sass?name=${encodeURIComponent(name)}`),
  metrics: (id: string, from?: string, to?: string) => {
    const q = new URLSearchParams({ points: "300" });
    if (from) q.set("from", from);
    if (to) q.set("to", to);
    return get<MetricsDoc>(`${sessionPath(id)}/metrics?${q}`);
  },
};

/** Forgets what was loaded: all of it, or one session's. */
export function resetSessionCache(id?: string): void {
  if (id === undefined) {
    cache.clear();
    return;
  }
  const prefix = sessionPath(id);
  for (const k of [...cache.keys()])
    if (k === prefix || k.startsWith(prefix + "/") || k.startsWith(prefix + "?")) cache.delete(k);
}
