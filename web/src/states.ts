// SPDX-License-Identifier: Apache-2.0
// The states every page shows while it waits, when it has nothing and when a call failed, so
// that each says the same thing the same way (and a 401 goes to the login).
import { ApiError } from "./api";
import { h } from "./dom";
import { formatLocation } from "./router";

/** What a failed call means to a user. */
export function errorText(e: unknown): string {
  if (e instanceof ApiError) {
    if (e.status === 0) return "The server cannot be reached. Is gpufl-server running?";
    return `The server answered ${e.status}: ${e.message}`;
  }
  return String(e);
}

export function loadingState(testid: string, what: string): HTMLElement {
  return h("div", { class: "state state-loading", "data-testid": testid, role: "status" },
    h("span", { class: "spinner" }), what);
}

export function emptyState(testid: string, title: string, ...body: (Node | string)[]): HTMLElement {
  return h("div", { class: "state state-empty", "data-testid": testid }, h("h2", {}, title), ...body);
}

/** The error state with a retry; a lost login (401) goes to the login page instead. */
export function errorState(testid: string, title: string, e: unknown, retry: () => void,
                           go: (url: string, replace?: boolean) => void): HTMLElement | null {
  if (e instanceof ApiError && e.status === 401) {
    go(formatLocation("/login", { next: location.pathname + location.search }), true);
    return null;
  }
  return h("div", { class: "state state-error", role: "alert", "data-testid": testid },
    h("h2", {}, title), h("p", {}, errorText(e)),
    h("button", { type: "button", onclick: retry }, "Retry"));
}
