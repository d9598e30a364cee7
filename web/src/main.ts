// SPDX-License-Identifier: Apache-2.0
// The dashboard's entry: the theme, the router, the header of a logged-in view, and the check
// that a login exists (GET /api/v1/auth/me) before any page that needs one.
import "./style.css";
import { ApiError, type Me, api } from "./api";
import { h, show } from "./dom";
import { renderCompare } from "./pages/compare";
import { renderJob } from "./pages/job";
import { renderJobs } from "./pages/jobs";
import { renderLogin } from "./pages/login";
import { renderFleet } from "./pages/fleet";
import { renderNotFound } from "./pages/notfound";
import { renderSession, resetSessionCache } from "./pages/session";
import { renderSessions, resetSessionsCache } from "./pages/sessions";
import { renderSettings } from "./pages/settings";
import { type Route, type RouteName, Router, formatLocation } from "./router";
import { applyTheme, currentTheme, toggleTheme } from "./theme";

/** A logged-in page: it renders into main and navigates through go (replace: no new history
 * entry, for a change of the view's own state). */
type Page = (main: HTMLElement, route: Route, go: (url: string, replace?: boolean) => void) => void;

/** The pages of the logged-in app, by route. */
const PAGES: Partial<Record<RouteName, Page>> = {
  sessions: (main, route, go) => renderSessions(main, route.params, go),
  session: (main, route, go) => renderSession(main, route.args.id, route.params, go),
  jobs: (main, route, go) => renderJobs(main, route.params, go),
  job: (main, route, go) => renderJob(main, route.args.id, route.params, go),
  compare: (main, route, go) => renderCompare(main, route.params, go),
  settings: (main, route, go) => renderSettings(main, route.params, go),
  fleet: (main, route, go) => renderFleet(main, route.params, go),
};

applyTheme();
const app = document.getElementById("app")!;
let me: Me | undefined;

const router = new Router((route) => {
  void render(route);
});

function header(who: Me): HTMLElement {
  const themeButton = h("button", {
    type: "button", class: "ghost", "data-testid": "theme-toggle",
    "aria-label": "Switch between dark and light themes",
    onclick: () => {
      themeButton.textContent = themeLabel(toggleTheme());
    },
  }, themeLabel(currentTheme()));
  return h("header", { class: "topbar" },
    h("a", { class: "brand", href: "/sessions", "data-link": true }, "gpufl"),
    h("nav", {},
      h("a", { href: "/sessions", "data-link": true }, "Sessions"),
      h("a", { href: "/fleet", "data-link": true }, "Fleet"),
      h("a", { href: "/jobs", "data-link": true }, "Jobs"),
      h("a", { href: "/settings", "data-link": true }, "Settings")),
    h("span", { class: "spacer" }),
    h("span", { class: "who", "data-testid": "who" },
      who.kind === "login" ? `${who.user} @ ${who.workspace}` : `key ${who.role}`),
    themeButton,
    h("button", { type: "button", class: "ghost", "data-testid": "logout", onclick: logout },
      "Log out"));
}

function themeLabel(t: string): string {
  return t === "dark" ? "Light theme" : "Dark theme";
}

async function logout() {
  try {
    await api.logout();
  } catch (e) {
    // The login is gone on the server or its token is: either way the user is shown the login.
    console.warn("logout:", e);
  }
  me = undefined;
  resetSessionsCache();
  resetSessionCache();
  router.go("/login");
}

async function render(route: Route) {
  if (location.pathname === "/") {
    router.go("/sessions" + location.search, true); // one URL per view
    return;
  }
  document.title = `gpufl · ${route.name === "not-found" ? "not found" : route.name}`;
  if (route.name === "login") {
    me = undefined;
    renderLogin(app, route.params, (url) => router.go(url, true));
    return;
  }
  if (!me) {
    try {
      me = await api.me();
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        router.go(formatLocation("/login", { next: location.pathname + location.search }), true);
        return;
      }
      show(app, h("section", { class: "state state-error", role: "alert" },
        h("h1", {}, "The dashboard cannot reach gpufl-server"),
        h("p", {}, e instanceof Error ? e.message : String(e)),
        h("button", { type: "button", onclick: () => router.render() }, "Retry")));
      return;
    }
  }
  const main = h("main", { class: "content" });
  show(app, header(me), main);
  const page = PAGES[route.name];
  if (page) page(main, route, (url, replace) => router.go(url, replace));
  else renderNotFound(main, route.path);
}

router.render();
