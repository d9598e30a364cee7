// SPDX-License-Identifier: Apache-2.0
// Settings: the workspace's API keys (keys/keys.ts) with their prefix, role, label, creation,
// last use and revocation; create a read or ingest key (its secret shown once, with a copy
// button) and revoke one after a confirmation. ?show=all also lists revoked keys.
import { ApiError } from "../api";
import { h, show } from "../dom";
import {
  type ApiKey,
  type CreatedKey,
  CREATABLE_ROLES,
  createProblem,
  formatWhen,
  keyState,
  keysApi,
  visibleKeys,
} from "../keys/keys";
import { formatLocation } from "../router";
import { emptyState, errorState, errorText, loadingState } from "../states";

/** A key just created: shown until the page is left (the server never shows it again). */
let justCreated: CreatedKey | null = null;

function revealed(k: CreatedKey): HTMLElement {
  const copyState = h("span", { class: "muted", "data-testid": "key-copied", role: "status" });
  const copy = h("button", { type: "button", "data-testid": "key-copy", onclick: async () => {
    try {
      await navigator.clipboard.writeText(k.key);
      copyState.textContent = " Copied.";
    } catch {
      // No clipboard (an insecure origin, a denied permission): the text is selectable.
      const sel = getSelection();
      const range = document.createRange();
      range.selectNodeContents(secret);
      sel?.removeAllRanges();
      sel?.addRange(range);
      copyState.textContent = " Selected: copy it with Ctrl+C.";
    }
  } }, "Copy");
  const secret = h("code", { class: "secret", "data-testid": "new-key" }, k.key);
  return h("div", { class: "callout", "data-testid": "key-created" },
    h("p", {}, h("strong", {}, `New ${k.role} key ${k.prefix}. `),
      "Copy it now: it is shown this once, and the server keeps only its hash."),
    h("p", {}, secret), h("p", {}, copy, copyState));
}

function keyRow(k: ApiKey, onRevoke: (k: ApiKey, cell: HTMLElement) => void): HTMLElement {
  const state = keyState(k);
  const action = h("td", {});
  if (state === "active" && (CREATABLE_ROLES as readonly string[]).includes(k.role))
    action.append(h("button", { type: "button", class: "small", "data-testid": "key-revoke",
      onclick: () => onRevoke(k, action) }, "Revoke"));
  else if (state === "active")
    action.append(h("span", { class: "muted", title: "Admin keys are revoked with the server's admin command" },
      "admin CLI"));
  return h("tr", { "data-prefix": k.prefix, "data-state": state },
    h("td", { class: "mono" }, k.prefix),
    h("td", {}, k.role),
    h("td", {}, k.label ?? ""),
    h("td", {}, formatWhen(k.created_at, "–")),
    h("td", { "data-testid": "key-last-used" }, formatWhen(k.last_used_at)),
    h("td", {}, h("span", { class: "badge badge-" + (state === "active" ? "live" : "ended") },
      state === "active" ? "active" : `revoked ${formatWhen(k.revoked_at)}`)),
    action);
}

export function renderSettings(root: Element, params: URLSearchParams,
                               go: (url: string, replace?: boolean) => void) {
  const showAll = params.get("show") === "all" ? "all" : "active";
  const rerender = () => renderSettings(root, params, go);
  const role = h("select", { id: "key-role", name: "role" },
    ...CREATABLE_ROLES.map((r) => h("option", { value: r }, r)));
  const label = h("input", { id: "key-label", name: "label", placeholder: "what it is for (optional)" });
  const formError = h("p", { class: "form-error", "data-testid": "key-error", role: "alert" });
  const createButton = h("button", { type: "submit", class: "primary" }, "Create key");
  const form = h("form", { class: "panel row", "data-testid": "key-form", onsubmit: async (e: Event) => {
    e.preventDefault();
    const problem = createProblem(role.value, label.value.trim());
    formError.textContent = problem ?? "";
    if (problem) return;
    createButton.disabled = true;
    try {
      justCreated = await keysApi.create(role.value, label.value.trim());
      rerender();
    } catch (err) {
      formError.textContent = err instanceof ApiError && err.status === 403
        ? "This login may not create keys here." : errorText(err);
      createButton.disabled = false;
    }
  } },
  h("div", { class: "field" }, h("label", { for: "key-role" }, "Role"), role),
  h("div", { class: "field grow" }, h("label", { for: "key-label" }, "Label"), label),
  createButton, formError);
  const showToggle = h("label", {}, h("input", { type: "checkbox", id: "keys-show-all", checked: showAll === "all",
    onchange: () => go(formatLocation("/settings", { show: showAll === "all" ? "" : "all" }), true) }),
  " Show revoked keys");
  const body = h("div", {}, loadingState("keys-loading", "Loading the keys…"));
  const created = justCreated;
  justCreated = null;
  show(root, h("section", { class: "settings-page" }, h("h1", {}, "Settings"),
    h("section", {}, h("h2", {}, "API keys"),
      h("p", { class: "muted" }, "Keys let tools use the API: ", h("code", {}, "gpufl upload"),
        " and gpufl-agent need an ingest key, scripts that read sessions a read key. " +
        "Send one as Authorization: Bearer gpfl_…"),
      created ? revealed(created) : null, form, showToggle, body)));

  const onRevoke = (k: ApiKey, cell: HTMLElement) => {
    show(cell, h("span", {}, `Revoke ${k.prefix}? Tools using it stop working at once. `),
      h("button", { type: "button", class: "small", "data-testid": "key-revoke-confirm", onclick: async () => {
        try {
          await keysApi.revoke(k.prefix);
          rerender();
        } catch (err) {
          show(cell, h("span", { class: "form-error" }, errorText(err)));
        }
      } }, "Revoke"), " ",
      h("button", { type: "button", class: "small ghost", onclick: rerender }, "Cancel"));
  };
  keysApi.list().then((a) => {
    const list = visibleKeys(a.keys, showAll);
    if (!list.length) {
      show(body, emptyState("keys-empty", showAll === "all" ? "This workspace has no keys" : "No active keys",
        h("p", {}, "Create one above.")));
      return;
    }
    show(body, h("table", { class: "sessions", "data-testid": "keys-table" },
      h("thead", {}, h("tr", {}, ...["Prefix", "Role", "Label", "Created", "Last used", "State", ""]
        .map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, ...list.map((k) => keyRow(k, onRevoke)))));
  }, (e) => {
    if (e instanceof ApiError && e.status === 403) {
      show(body, emptyState("keys-error", "Keys are managed by a logged-in user or an admin key",
        h("p", {}, "This key's role may not manage the workspace's keys.")));
      return;
    }
    const el = errorState("keys-error", "The keys could not be loaded", e, rerender, go);
    if (el) show(body, el);
  });
}
