// SPDX-License-Identifier: Apache-2.0
// The scope tree of GET /api/v1/sessions/{id}/scopes as the rows a nested view shows: the paths
// a user folded hide their children, and each row's host and GPU time as a share of the widest
// root, for its bars (spec 002's nested view).

export interface ScopeNode {
  path: string;
  name: string;
  depth: number;
  calls: number;
  total_ns: number;
  gpu_ns?: number;
  gpu_self_ns?: number;
  kernels?: number;
  copies?: number;
  memsets?: number;
  children: ScopeNode[];
}

export interface ScopesDoc {
  paths_count: number;
  attributed: boolean;
  unattributed_ns: number;
  tree: ScopeNode[];
}

export interface ScopeRow {
  node: ScopeNode;
  hasChildren: boolean;
  folded: boolean;
  /** 0..1 of the largest root's host time, and of the largest root's GPU time. */
  hostShare: number;
  gpuShare: number;
}

/** The visible rows, depth first in the server's order (siblings by time): a folded path shows
 * itself, not its children. */
export function scopeRows(tree: ScopeNode[], folded: Set<string>): ScopeRow[] {
  const hostMax = Math.max(0, ...tree.map((n) => n.total_ns));
  const gpuMax = Math.max(0, ...tree.map((n) => n.gpu_ns ?? 0));
  const out: ScopeRow[] = [];
  const walk = (nodes: ScopeNode[]) => {
    for (const n of nodes) {
      const isFolded = folded.has(n.path);
      out.push({
        node: n,
        hasChildren: n.children.length > 0,
        folded: isFolded,
        hostShare: hostMax ? n.total_ns / hostMax : 0,
        gpuShare: gpuMax ? (n.gpu_ns ?? 0) / gpuMax : 0,
      });
      if (!isFolded) walk(n.children);
    }
  };
  walk(tree);
  return out;
}

/** The folded set after a row's toggle, as the sorted list the URL keeps. */
export function toggleFold(folded: Set<string>, path: string): string[] {
  const next = new Set(folded);
  if (next.has(path)) next.delete(path);
  else next.add(path);
  return [...next].sort();
}
