// SPDX-License-Identifier: Apache-2.0
// The dashboard's router: the view and its state live in the URL (path and query), so a view is
// shareable and survives a reload; gpufl-server answers every app path with index.html.

export type RouteName =
  | "sessions"
  | "session"
  | "compare"
  | "jobs"
  | "job"
  | "fleet"
  | "settings"
  | "login"
  | "not-found";

export interface Route {
  name: RouteName;
  path: string;
  /** The path's named segments (":id" in the pattern), decoded. */
  args: Record<string, string>;
  params: URLSearchParams;
}

/** Path patterns, first match wins; ":name" matches one non-empty segment. */
const ROUTES: [string, RouteName][] = [
  ["/sessions", "sessions"],
  ["/sessions/:id", "session"],
  ["/compare", "compare"],
  ["/jobs", "jobs"],
  ["/jobs/:id", "job"],
  ["/fleet", "fleet"],
  ["/settings", "settings"],
  ["/login", "login"],
];

function match(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split("/");
  const got = path.split("/");
  if (want.length !== got.length) return undefined;
  const args: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(":")) {
      if (!got[i]) return undefined;
      try {
        args[want[i].slice(1)] = decodeURIComponent(got[i]);
      } catch {
        return undefined; // a malformed escape is no path of this app
      }
    } else if (want[i] !== got[i]) {
      return undefined;
    }
  }
  return args;
}

/** The route of a location's path and query ("/" is the sessions list). */
export function parseLocation(pathname: string, search: string): Route {
  let path = pathname.replace(/\/+$/, "") || "/";
  if (path === "/") path = "/sessions";
  const params = new URLSearchParams(search);
  for (const [pattern, name] of ROUTES) {
    const args = match(pattern, path);
    if (args) return { name, path, args, params };
  }
  return { name: "not-found", path, args: {}, params };
}

/** A path and query, with empty parameters left out and the rest in a stable order. */
export function formatLocation(path: string, params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const key of Object.keys(params).sort()) {
    const v = params[key];
    if (v !== undefined && v !== "") q.set(key, v);
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** Where to go after logging in: a path of this app only (never another origin). */
export function safeNext(next: string | null): string {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/login"))
    return "/sessions";
  return next;
}

type Listener = (route: Route) => void;

/** Navigation through the History API; the listener renders the route. */
export class Router {
  private listener: Listener;

  constructor(listener: Listener) {
    this.listener = listener;
    window.addEventListener("popstate", () => this.render());
    // Links inside the app navigate without a page load.
    document.addEventListener("click", (ev) => {
      const a = (ev.target as Element | null)?.closest?.("a[data-link]") as HTMLAnchorElement;
      if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey) return;
      ev.preventDefault();
      this.go(a.getAttribute("href") || "/");
    });
  }

  current(): Route {
    return parseLocation(location.pathname, location.search);
  }

  /** Navigates: a new history entry, or (replace) the current one changed in place. */
  go(url: string, replace = false): void {
    if (replace) history.replaceState(null, "", url);
    else history.pushState(null, "", url);
    this.render();
  }

  render(): void {
    this.listener(this.current());
  }
}
