// SPDX-License-Identifier: Apache-2.0
// The timeline's mount point on the session page. A placeholder: the timeline component is
// built in web/src/timeline/ separately and replaces this file.

export interface TimelineOptions {
  sessionId: string;
  params: URLSearchParams;
  go: (url: string, replace?: boolean) => void;
}

export function mountTimeline(el: HTMLElement, opts: TimelineOptions): () => void {
  const p = document.createElement("p");
  p.className = "muted";
  p.dataset.testid = "timeline-placeholder";
  p.textContent = `The timeline of ${opts.sessionId} is being built.`;
  el.replaceChildren(p);
  return () => p.remove();
}
