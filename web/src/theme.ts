// SPDX-License-Identifier: Apache-2.0
// Dark and light themes: the system's preference until the user picks one, then theirs (kept in
// localStorage). The CSS reads data-theme on <html>.

const KEY = "gpufl.theme";
export type Theme = "dark" | "light";

export function currentTheme(): Theme {
  const saved = localStorage.getItem(KEY);
  if (saved === "dark" || saved === "light") return saved;
  return window.matchMedia?.("(prefers-color-scheme: light)").matches ? "light" : "dark";
}

export function applyTheme(theme: Theme = currentTheme()): void {
  document.documentElement.dataset.theme = theme;
}

export function toggleTheme(): Theme {
  const next: Theme = currentTheme() === "dark" ? "light" : "dark";
  localStorage.setItem(KEY, next);
  applyTheme(next);
  return next;
}
