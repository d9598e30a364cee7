// SPDX-License-Identifier: Apache-2.0
// A view the app does not know (a wrong or outdated URL): said plainly, with a way back.
import { h, show } from "../dom";

export function renderNotFound(root: Element, path: string) {
  show(
    root,
    h(
      "section",
      { class: "state state-error", "data-testid": "not-found" },
      h("h1", {}, "Page not found"),
      h("p", {}, "The dashboard has no page at ", h("code", {}, path), "."),
      h("a", { href: "/sessions", "data-link": true }, "Go to the sessions list"),
    ),
  );
}
