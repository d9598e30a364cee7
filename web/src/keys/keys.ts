// SPDX-License-Identifier: Apache-2.0
// The settings page's API keys (GET/POST /api/v1/keys, revoke): the calls, which keys a view
// shows, their state and times as text, and what a create form may send.
import { call } from "../api";

export interface ApiKey {
  prefix: string;
  role: string;
  label: string | null;
  created_at: number | null; // unix seconds
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface CreatedKey {
  key: string; // shown once: the server keeps only its hash
  prefix: string;
  role: string;
  label: string | null;
}

/** The roles a dashboard user may give a key (admin keys come from the server's admin CLI). */
export const CREATABLE_ROLES = ["read", "ingest"] as const;
export const LABEL_MAX = 128;

export const keysApi = {
  list: () => call<{ keys: ApiKey[]; truncated: boolean }>("GET", "/api/v1/keys"),
  create: (role: string, label: string) =>
    call<CreatedKey>("POST", "/api/v1/keys", label ? { role, label } : { role }),
  revoke: (prefix: string) =>
    call<{ prefix: string; state: string }>("POST", `/api/v1/keys/${encodeURIComponent(prefix)}/revoke`),
};

export function keyState(k: ApiKey): "active" | "revoked" {
  return k.revoked_at === null ? "active" : "revoked";
}

/** The keys a view shows: all, or the active ones only; active first, then newest. */
export function visibleKeys(list: ApiKey[], show: "active" | "all"): ApiKey[] {
  return list
    .filter((k) => show === "all" || keyState(k) === "active")
    .sort((a, b) =>
      (keyState(a) === keyState(b) ? 0 : keyState(a) === "active" ? -1 : 1) ||
      (b.created_at ?? 0) - (a.created_at ?? 0) || a.prefix.localeCompare(b.prefix));
}

/** A unix time as "2026-11-27 10:15 UTC", "never" when null. */
export function formatWhen(unixS: number | null, never = "never"): string {
  if (unixS === null || unixS <= 0) return never;
  return new Date(unixS * 1000).toISOString().slice(0, 16).replace("T", " ") + " UTC";
}

/** A create form's problem, or null when it may be sent. */
export function createProblem(role: string, label: string): string | null {
  if (!(CREATABLE_ROLES as readonly string[]).includes(role)) return "Pick the key's role: read or ingest.";
  if (new TextEncoder().encode(label).length > LABEL_MAX) return `A label has at most ${LABEL_MAX} bytes.`;
  return null;
}
