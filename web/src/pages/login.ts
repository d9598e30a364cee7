// SPDX-License-Identifier: Apache-2.0
// The login page: a user of a workspace (gpufl-server's `admin user create`) signs in; the
// server sets the login cookie and gives the CSRF token the app keeps for logging out.
import { ApiError, api } from "../api";
import { h, show } from "../dom";
import { safeNext } from "../router";

function message(e: unknown): string {
  if (!(e instanceof ApiError)) return "The login failed: " + String(e);
  if (e.status === 401) return "Unknown user or wrong password.";
  if (e.status === 429) return "Too many failed logins: wait a minute and try again.";
  if (e.status === 0) return "The server cannot be reached.";
  return `The login failed: ${e.message}`;
}

export function renderLogin(root: Element, params: URLSearchParams, go: (url: string) => void) {
  const error = h("p", { class: "form-error", role: "alert", "data-testid": "login-error" });
  const workspace = h("input", {
    id: "workspace", name: "workspace", autocomplete: "organization", required: true,
    value: params.get("workspace") ?? "",
  });
  const user = h("input", { id: "user", name: "user", autocomplete: "username", required: true });
  const password = h("input", {
    id: "password", name: "password", type: "password", autocomplete: "current-password",
    required: true,
  });
  const submit = h("button", { type: "submit", class: "primary" }, "Log in");
  const form = h(
    "form",
    {
      class: "login-form",
      onsubmit: async (ev: Event) => {
        ev.preventDefault();
        submit.disabled = true;
        error.textContent = "";
        try {
          await api.login(workspace.value.trim(), user.value.trim(), password.value);
          go(safeNext(params.get("next")));
        } catch (e) {
          error.textContent = message(e);
          password.value = "";
          password.focus();
        } finally {
          submit.disabled = false;
        }
      },
    },
    h("h1", {}, "gpufl"),
    h("p", { class: "muted" }, "Log in with a user of your workspace."),
    h("label", { for: "workspace" }, "Workspace"),
    workspace,
    h("label", { for: "user" }, "User"),
    user,
    h("label", { for: "password" }, "Password"),
    password,
    submit,
    error,
  );
  show(root, h("main", { class: "login-page" }, form));
  (workspace.value ? user : workspace).focus();
}
