// SPDX-License-Identifier: Apache-2.0
// The dashboard's router: the view and its state live in the URL (path and query), so a view is
// shareable and survives a reload; gpufl-server answers every app path with index.html.

export type RouteName = "sessions" | "login" | "not-found";

export interface Route {
  name: RouteName;
  path: string;
  params: URLSearchParams;
}

const ROUTES: Record<string, RouteName> = {
  "/sessions": "sessions",
  "/login": "login",
};

/** The route of a location's path and query ("/" is the sessions list). */
export function parseLocation(pathname: string, search: string): Route {
  let path = pathname.replace(/\/+$/, "") || "/";
  if (path === "/") path = "/sessions";
  const name = ROUTES[path] ?? "not-found";
  return { name, path, params: new URLSearchParams(search) };
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
