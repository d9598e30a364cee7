// SPDX-License-Identifier: Apache-2.0
// The dashboard's calls to gpufl-server (docs/server-api.md): same origin, the login cookie
// sent by the browser, and the login's CSRF token on every state-changing request.
import type { SessionPage } from "./sessions";

const CSRF_KEY = "gpufl.csrf";

/** A failed call: the HTTP status (0: the server could not be reached) and the server's
 * message. */
export class ApiError extends Error {
  status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export interface Me {
  kind: "login" | "key";
  workspace?: string;
  user?: string;
  role: string;
}

export interface LoginAnswer {
  workspace: string;
  user: string;
  role: string;
  csrf_token: string;
  expires_in_s: number;
}

/** One call to the server's API: JSON in and out; a failure throws ApiError. Pages with their
 * own routes call it from their own modules. */
export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const csrf = localStorage.getItem(CSRF_KEY);
  if (method !== "GET" && csrf) headers["X-CSRF-Token"] = csrf;
  let r: Response;
  try {
    r = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, "the server cannot be reached");
  }
  let doc: unknown = null;
  try {
    doc = await r.json();
  } catch {
    /* a body that is not JSON: the status says enough */
  }
  if (!r.ok) {
    const msg = (doc as { error?: string } | null)?.error;
    throw new ApiError(r.status, msg || `the server answered ${r.status}`);
  }
  return doc as T;
}

export const api = {
  me: () => call<Me>("GET", "/api/v1/auth/me"),
  async login(workspace: string, user: string, password: string): Promise<LoginAnswer> {
    const a = await call<LoginAnswer>("POST", "/api/v1/auth/login", { workspace, user, password });
    localStorage.setItem(CSRF_KEY, a.csrf_token);
    return a;
  },
  async logout(): Promise<void> {
    try {
      await call("POST", "/api/v1/auth/logout");
    } finally {
      localStorage.removeItem(CSRF_KEY);
    }
  },
  sessions: (query: URLSearchParams) =>
    call<SessionPage>("GET", `/api/v1/sessions?${query.toString()}`),
};
