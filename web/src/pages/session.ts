// SPDX-License-Identifier: Apache-2.0
// One session's page, for now its timeline alone (view=timeline); the full page (header,
// kernels, scopes, insights) replaces this file and mounts the timeline the same way.
import { h, show } from "../dom";
import { formatLocation } from "../router";
import { mountTimeline } from "../timeline/mount";

let unmount: (() => void) | undefined;

export function renderSession(main: HTMLElement, id: string, params: URLSearchParams,
                              go: (url: string, replace?: boolean) => void): void {
  unmount?.();
  unmount = undefined;
  if (params.get("view") !== "timeline") {
    show(main, h("h1", {}, id), h("a", { href: formatLocation(`/sessions/${encodeURIComponent(id)}`,
      { view: "timeline" }), "data-link": true }, "Timeline"));
    return;
  }
  const el = h("div");
  show(main, h("h1", { class: "mono" }, id), el);
  unmount = mountTimeline(el, { sessionId: id, params, go });
}
