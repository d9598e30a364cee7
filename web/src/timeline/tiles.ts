// SPDX-License-Identifier: Apache-2.0
// Tiles of the timeline: the session's time cut at each zoom level into tiles of 2^level ns from
// the session's start, each fetched once as a downsampled window (GET .../timeline) and kept in
// a capped cache, so panning back or zooming to a level seen before asks nothing of the server.
import type { Range } from "./view";

/** What one tile asks for: every kind, at most this many events and counter points. The
 * server's test (test_server_query.py, TILE_QUERY) measures this answer's size. */
export const TILE_MAX_EVENTS = 2000;
export const TILE_POINTS = 100;
export const TILE_KINDS = "gpu,launches,scopes,counters";
/** Tiles kept: enough for a few views at each of a dozen levels; the oldest used go first. */
export const CACHE_TILES = 256;

export interface Tile {
  level: number;
  index: number;
  from: number; // ns, inclusive
  to: number; // ns, exclusive
}

/** The level at which a view of span ns covers two or three tiles. */
export function levelFor(span: number): number {
  return Math.max(0, Math.ceil(Math.log2(Math.max(1, span / 2))));
}

export function tileAt(level: number, index: number, origin: number): Tile {
  const w = Math.pow(2, level);
  return { level, index, from: origin + index * w, to: origin + (index + 1) * w };
}

/** The tiles that cover view (clipped to extent) at the view's level. */
export function tilesFor(view: Range, extent: Range): Tile[] {
  const level = levelFor(view.t1 - view.t0);
  const w = Math.pow(2, level);
  const lo = Math.max(view.t0, extent.t0), hi = Math.min(view.t1, extent.t1);
  const out: Tile[] = [];
  if (!(hi > lo)) return out;
  const first = Math.floor((lo - extent.t0) / w), last = Math.floor((hi - 1 - extent.t0) / w);
  for (let i = first; i <= last; i++) out.push(tileAt(level, i, extent.t0));
  return out;
}

export function tileKey(t: Tile): string {
  return `${t.level}/${t.index}`;
}

/** The query of a tile's answer. */
export function tileQuery(t: Tile): string {
  return `kinds=${TILE_KINDS}&from=${t.from}&to=${t.to}&max_events=${TILE_MAX_EVENTS}` +
    `&points=${TILE_POINTS}`;
}

/** A cache of at most cap entries; a get makes an entry the newest. */
export class TileCache<T> {
  private map = new Map<string, T>();
  constructor(private cap = CACHE_TILES) {}

  get(key: string): T | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }

  has(key: string): boolean {
    return this.map.has(key);
  }

  set(key: string, v: T): void {
    this.map.delete(key);
    this.map.set(key, v);
    while (this.map.size > this.cap) this.map.delete(this.map.keys().next().value as string);
  }

  get size(): number {
    return this.map.size;
  }
}

/** For each tile of a view, the cached answer to draw: its own, else the nearest coarser
 * cached tile that covers it (drawn until its own comes), else none. Each answer once. */
export function drawable<T>(tiles: Tile[], cache: TileCache<T>): T[] {
  const out: T[] = [];
  const seen = new Set<string>();
  for (const t of tiles) {
    for (let level = t.level, index = t.index; level <= t.level + 60;
      level++, index = Math.floor(index / 2)) {
      const key = `${level}/${index}`;
      const v = cache.get(key);
      if (v !== undefined) {
        if (!seen.has(key)) out.push(v);
        seen.add(key);
        break;
      }
    }
  }
  return out;
}
