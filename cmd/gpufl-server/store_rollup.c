// SPDX-License-Identifier: Apache-2.0
/*
 * store_rollup.c - gpu_sample rolled up per device into wall-clock slots of 10 s, 1 min and
 * 10 min (table gpu_rollup), so the fleet heatmap of a day of a large fleet reads ~100 k rows
 * instead of millions. Both engines run these statements inside each window's transaction.
 */
#include "store.h"

#include <gpufl/gpufl.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const int64_t gpufl__rollup_levels_s[GPUFL__ROLLUP_LEVELS] = {10, 60, 600};

#define SQL_MAX 8192

/* The columns a rollup row has, in the INSERTs' order. */
#define ROLLUP_COLUMNS                                                                             \
    "(workspace_id, session_id, level_s, slot, device, day, samples, util_sum, util_n, sm_sum, "   \
    "sm_n, last_ts_ns)"

/* Level k's slots [a, z] of a session recomputed: from gpu_sample for the finest level, from
 * the level below for the others (a coarse slot is whole finer slots). */
static int level_sql(char *out, size_t size, int64_t ws, const char *sid, int64_t epoch_us, int k,
                     int64_t a, int64_t z) {
    int64_t l = gpufl__rollup_levels_s[k], lus = l * 1000000;
    int n =
        snprintf(out, size,
                 "DELETE FROM gpu_rollup WHERE workspace_id = %" PRId64 " AND level_s = %" PRId64
                 " AND slot >= %" PRId64 " AND slot <= %" PRId64 " AND session_id = '%s';",
                 ws, l, a, z, sid);
    if (n < 0 || (size_t)n >= size) return -1;
    int m;
    if (k == 0)
        m = snprintf(out + n, size - (size_t)n,
                     "INSERT INTO gpu_rollup " ROLLUP_COLUMNS " SELECT workspace_id, session_id, "
                     "%" PRId64 ", slot, device, slot * %" PRId64 " / 86400, samples, util_sum, "
                     "util_n, sm_sum, sm_n, last_ts_ns FROM (SELECT workspace_id, session_id, "
                     "(%" PRId64 " + ts_ns / 1000) / %" PRId64 " AS slot, device, COUNT(*) AS "
                     "samples, SUM(gpu_util_pct) AS util_sum, COUNT(gpu_util_pct) AS util_n, "
                     "SUM(sm_active_pct) AS sm_sum, COUNT(sm_active_pct) AS sm_n, MAX(ts_ns) AS "
                     "last_ts_ns FROM gpu_sample WHERE workspace_id = %" PRId64 " AND session_id = "
                     "'%s' AND ts_ns >= %" PRId64 " AND ts_ns < %" PRId64 " GROUP BY workspace_id, "
                     "session_id, (%" PRId64 " + ts_ns / 1000) / %" PRId64 ", device) x;",
                     l, l, epoch_us, lus, ws, sid, (a * lus - epoch_us) * 1000,
                     ((z + 1) * lus - epoch_us) * 1000, epoch_us, lus);
    else {
        int64_t r = l / gpufl__rollup_levels_s[k - 1];
        m = snprintf(out + n, size - (size_t)n,
                     "INSERT INTO gpu_rollup " ROLLUP_COLUMNS " SELECT workspace_id, session_id, "
                     "%" PRId64 ", slot, device, slot * %" PRId64 " / 86400, samples, util_sum, "
                     "util_n, sm_sum, sm_n, last_ts_ns FROM (SELECT workspace_id, session_id, "
                     "slot / %" PRId64 " AS slot, device, SUM(samples) AS samples, SUM(util_sum) "
                     "AS util_sum, SUM(util_n) AS util_n, SUM(sm_sum) AS sm_sum, SUM(sm_n) AS "
                     "sm_n, MAX(last_ts_ns) AS last_ts_ns FROM gpu_rollup WHERE workspace_id = "
                     "%" PRId64 " AND level_s = %" PRId64 " AND slot >= %" PRId64 " AND slot < "
                     "%" PRId64 " AND session_id = '%s' GROUP BY workspace_id, session_id, slot / "
                     "%" PRId64 ", device) x;",
                     l, l, r, ws, gpufl__rollup_levels_s[k - 1], a * r, (z + 1) * r, sid, r);
    }
    return m < 0 || (size_t)m >= size - (size_t)n ? -1 : 0;
}

int gpufl__rollup_sql(char **out, const gpufl__window_t *w, int64_t epoch_us) {
    *out = NULL;
    /* No wall clock (no epoch yet) or no typed rows: nothing to roll up. Session ids are of
     * letters, digits and . - _ : (ingest checks), so quoting them needs no escape. */
    if (epoch_us <= 0 || w->time_min_ns > w->time_max_ns || w->time_min_ns < 0) return 0;
    if (strcmp(w->channel, "device") != 0) return 0;
    for (const char *p = w->session_id; *p; p++)
        if (*p == '\'') return gpufl__store_fail(GPUFL_EINVAL, "store: a quote in a session id");
    size_t size = SQL_MAX * GPUFL__ROLLUP_LEVELS;
    char *sql = malloc(size);
    if (!sql) return gpufl__store_fail(GPUFL_ENOMEM, "store: out of memory");
    size_t at = 0;
    for (int k = 0; k < GPUFL__ROLLUP_LEVELS; k++) {
        int64_t lus = gpufl__rollup_levels_s[k] * 1000000;
        int64_t a = (epoch_us + w->time_min_ns / 1000) / lus;
        int64_t z = (epoch_us + w->time_max_ns / 1000) / lus;
        if (level_sql(sql + at, size - at, w->workspace_id, w->session_id, epoch_us, k, a, z)) {
            free(sql);
            return gpufl__store_fail(GPUFL_EINVAL, "store: rollup statement too long");
        }
        at += strlen(sql + at);
    }
    *out = sql;
    return 0;
}

/* Every stored gpu_sample row rolled up afresh: run once when the table is new (migration 5)
 * so sessions stored before it are in the heatmap too. */
const char *const gpufl__rollup_backfill_sql =
    "DELETE FROM gpu_rollup;"
    "INSERT INTO gpu_rollup " ROLLUP_COLUMNS " SELECT workspace_id, session_id, 10, slot, device, "
    "slot * 10 / 86400, samples, util_sum, util_n, sm_sum, sm_n, last_ts_ns FROM (SELECT "
    "g.workspace_id, g.session_id, (s.epoch_unix_us + g.ts_ns / 1000) / 10000000 AS slot, "
    "g.device, COUNT(*) AS samples, SUM(g.gpu_util_pct) AS util_sum, COUNT(g.gpu_util_pct) AS "
    "util_n, SUM(g.sm_active_pct) AS sm_sum, COUNT(g.sm_active_pct) AS sm_n, MAX(g.ts_ns) AS "
    "last_ts_ns FROM gpu_sample g JOIN sessions s ON s.workspace_id = g.workspace_id AND "
    "s.session_id = g.session_id WHERE s.epoch_unix_us > 0 GROUP BY g.workspace_id, "
    "g.session_id, (s.epoch_unix_us + g.ts_ns / 1000) / 10000000, g.device) x;"
    "INSERT INTO gpu_rollup " ROLLUP_COLUMNS " SELECT workspace_id, session_id, 60, slot, device, "
    "slot * 60 / 86400, samples, util_sum, util_n, sm_sum, sm_n, last_ts_ns FROM (SELECT "
    "workspace_id, session_id, slot / 6 AS slot, device, SUM(samples) AS samples, SUM(util_sum) "
    "AS util_sum, SUM(util_n) AS util_n, SUM(sm_sum) AS sm_sum, SUM(sm_n) AS sm_n, "
    "MAX(last_ts_ns) AS last_ts_ns FROM gpu_rollup WHERE level_s = 10 GROUP BY workspace_id, "
    "session_id, slot / 6, device) x;"
    "INSERT INTO gpu_rollup " ROLLUP_COLUMNS " SELECT workspace_id, session_id, 600, slot, "
    "device, slot * 600 / 86400, samples, util_sum, util_n, sm_sum, sm_n, last_ts_ns FROM (SELECT "
    "workspace_id, session_id, slot / 10 AS slot, device, SUM(samples) AS samples, "
    "SUM(util_sum) AS util_sum, SUM(util_n) AS util_n, SUM(sm_sum) AS sm_sum, SUM(sm_n) AS sm_n, "
    "MAX(last_ts_ns) AS last_ts_ns FROM gpu_rollup WHERE level_s = 60 GROUP BY workspace_id, "
    "session_id, slot / 10, device) x;";
