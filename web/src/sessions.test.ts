// SPDX-License-Identifier: Apache-2.0
// The sessions list's data shaping: filters from and to the URL, the API query, the search,
// the state shown, paging with its cap, and the figures of a row.
import { describe, expect, it } from "vitest";
import {
  type Filters,
  type Session,
  MAX_SESSIONS,
  apiQuery,
  applyLocalFilters,
  displayState,
  distinctValues,
  filtersToQuery,
  formatAgo,
  formatDuration,
  formatInsights,
  formatStart,
  isFiltered,
  loadAll,
  matchesSearch,
  parseFilters,
} from "./sessions";

function session(over: Partial<Session>): Session {
  return {
    session_id: "20261123T120000.000Z-7070-c3d4",
    app_name: "trace_demo",
    hostname: "gpu-node5",
    pid: 7070,
    job_id: null,
    engine: null,
    gpufl_version: "0.1.0",
    start_unix_us: 1795435200000000,
    end_ns: 5000000000,
    state: "ended",
    first_seen: 1795435300,
    last_window_at: 1795435300,
    completed_at: null,
    ...over,
  };
}

const NOW_US = 1795435200000000 + 3600e6;

describe("parseFilters and filtersToQuery", () => {
  it("reads the URL's filters and drops malformed values", () => {
    const f = parseFilters(new URLSearchParams("app=x&since=2y&state=weird&sort=bogus&q=%20a%20"));
    expect(f).toEqual({
      q: "a", app: "x", host: "", job: "", engine: "", state: "", since: "", sort: "start_desc",
      dmin: "", dmax: "", severity: "",
    });
  });
  it("round-trips every filter and leaves defaults out", () => {
    const q = "q=gemm&app=a&host=h&job=4242&engine=Trace&state=live&since=7d&sort=start_asc" +
      "&dmin=1.5&dmax=60&severity=MEDIUM";
    const f = parseFilters(new URLSearchParams(q));
    expect(parseFilters(new URLSearchParams(filtersToQuery(f)))).toEqual(f);
    expect(filtersToQuery(parseFilters(new URLSearchParams("")))).toEqual({});
  });
  it("says whether anything narrows the list (sort does not)", () => {
    expect(isFiltered(parseFilters(new URLSearchParams("sort=start_asc")))).toBe(false);
    expect(isFiltered(parseFilters(new URLSearchParams("state=live")))).toBe(true);
  });
});

describe("duration and severity filters", () => {
  it("keeps well-formed bounds and severities only", () => {
    const f = parseFilters(new URLSearchParams("dmin=-1&dmax=1e3&severity=low"));
    expect([f.dmin, f.dmax, f.severity]).toEqual(["", "", ""]);
    const g = parseFilters(new URLSearchParams("dmin=0.5&dmax=10&severity=HIGH"));
    expect([g.dmin, g.dmax, g.severity]).toEqual(["0.5", "10", "HIGH"]);
    expect(isFiltered(g)).toBe(true);
  });
  it("asks the server in ns and by minimum severity", () => {
    const f = parseFilters(new URLSearchParams("dmin=0.5&dmax=10&severity=MEDIUM"));
    const p = apiQuery(f, NOW_US);
    expect(p.get("min_duration_ns")).toBe("500000000");
    expect(p.get("max_duration_ns")).toBe("10000000000");
    expect(p.get("severity")).toBe("MEDIUM");
  });
  it("formats a duration, running or unknown, and the insights cell", () => {
    expect(formatDuration(session({ duration_ns: 4.2e9 }))).toBe("4.20 s");
    expect(formatDuration(session({ duration_ns: 200e9 }))).toBe("3 min 20 s");
    expect(formatDuration(session({ duration_ns: 12.5e6 }))).toBe("12.5 ms");
    expect(formatDuration(session({ duration_ns: null, state: "live", end_ns: null }))).toBe("running");
    expect(formatDuration(session({ duration_ns: null, state: "ended" }))).toBe("unknown");
    expect(formatInsights(session({ insights: 3, top_severity: "HIGH" }))).toBe("HIGH · 3");
    expect(formatInsights(session({ insights: 0, top_severity: null }))).toBe("none");
    expect(formatInsights(session({ insights: null }))).toBe("");
  });
});

describe("apiQuery", () => {
  it("sends the column filters, the sort, a page's limit and the cursor", () => {
    const f = parseFilters(new URLSearchParams("app=a&host=h&q=ignored&state=live"));
    const p = apiQuery(f, NOW_US, "c1");
    expect(Object.fromEntries(p)).toEqual({
      limit: "500", sort: "start_desc", app: "a", host: "h", cursor: "c1",
    });
  });
  it("turns since into the API's from, in µs", () => {
    const f = parseFilters(new URLSearchParams("since=24h"));
    expect(apiQuery(f, NOW_US).get("from")).toBe(String(NOW_US - 86400e6));
  });
});

describe("search and state", () => {
  const list = [
    session({ session_id: "s1", app_name: "trainer", hostname: "node7", pid: 4711 }),
    session({ session_id: "s2", app_name: "llm_train", hostname: "gpu-node3", job_id: "4242",
              state: "live", end_ns: null }),
    session({ session_id: "s3", app_name: "bench", hostname: "node7", state: "complete",
              completed_at: 1795435400 }),
  ];
  it("matches every word, case-insensitively, across id, app, host, job, engine and pid", () => {
    expect(matchesSearch(list[0], "TRAIN node7")).toBe(true);
    expect(matchesSearch(list[0], "train gpu-node3")).toBe(false);
    expect(matchesSearch(list[1], "4242")).toBe(true);
    expect(matchesSearch(list[0], "4711")).toBe(true);
    expect(matchesSearch(list[2], "   ")).toBe(true);
  });
  it("shows live, ended or complete", () => {
    expect(list.map(displayState)).toEqual(["ended", "live", "complete"]);
    expect(displayState(session({ state: "ended", completed_at: 5 }))).toBe("complete");
  });
  it("filters the server's answer by search and state", () => {
    const f = (q: string): Filters => parseFilters(new URLSearchParams(q));
    expect(applyLocalFilters(list, f("q=node7")).map((s) => s.session_id)).toEqual(["s1", "s3"]);
    expect(applyLocalFilters(list, f("q=node7&state=complete")).map((s) => s.session_id))
      .toEqual(["s3"]);
    expect(applyLocalFilters(list, f("state=live")).map((s) => s.session_id)).toEqual(["s2"]);
  });
  it("lists a field's distinct values, sorted, without nulls", () => {
    expect(distinctValues(list, "hostname")).toEqual(["gpu-node3", "node7"]);
    expect(distinctValues(list, "job_id")).toEqual(["4242"]);
  });
});

describe("loadAll", () => {
  it("walks next_cursor to the end", async () => {
    const pages: Record<string, { sessions: Session[]; next_cursor: string | null }> = {
      "": { sessions: [session({ session_id: "a" })], next_cursor: "p2" },
      p2: { sessions: [session({ session_id: "b" })], next_cursor: null },
    };
    const seen: string[] = [];
    const r = await loadAll(async (q) => {
      seen.push(q.get("cursor") ?? "");
      return pages[q.get("cursor") ?? ""];
    }, parseFilters(new URLSearchParams()), NOW_US);
    expect(seen).toEqual(["", "p2"]);
    expect(r.sessions.map((s) => s.session_id)).toEqual(["a", "b"]);
    expect(r.capped).toBe(false);
  });
  it("stops at MAX_SESSIONS and says so", async () => {
    let calls = 0;
    const r = await loadAll(async () => {
      calls++;
      return {
        sessions: Array.from({ length: 500 }, (_, i) => session({ session_id: `${calls}-${i}` })),
        next_cursor: "more",
      };
    }, parseFilters(new URLSearchParams()), NOW_US);
    expect(r.sessions.length).toBe(MAX_SESSIONS);
    expect(r.capped).toBe(true);
    expect(calls).toBe(MAX_SESSIONS / 500);
  });
  it("passes a failed page's error on", async () => {
    await expect(
      loadAll(async () => { throw new Error("down"); }, parseFilters(new URLSearchParams()), 0),
    ).rejects.toThrow("down");
  });
});

describe("formatting", () => {
  it("writes a start in UTC", () => {
    expect(formatStart(1795435200000000)).toBe("2026-11-23 12:00:00 UTC");
    expect(formatStart(null)).toBe("unknown");
    expect(formatStart(0)).toBe("unknown");
  });
  it("writes how long ago", () => {
    expect(formatAgo(NOW_US - 30e6, NOW_US)).toBe("just now");
    expect(formatAgo(NOW_US - 300e6, NOW_US)).toBe("5 min ago");
    expect(formatAgo(NOW_US - 7200e6, NOW_US)).toBe("2 h ago");
    expect(formatAgo(NOW_US - 3 * 86400e6, NOW_US)).toBe("3 d ago");
    expect(formatAgo(null, NOW_US)).toBe("");
  });
});
