// SPDX-License-Identifier: Apache-2.0
/*
 * store.c - picks gpufl-server's storage engine from the --db URL's scheme (one table of
 * gpufl__store_ops_t: adding an engine adds an entry), and the helpers every engine shares:
 * the error message, the clock and the day of a row.
 */
#include "store.h"

#include <gpufl/gpufl.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The prefix of a URL that selects an engine. "sqlite:" takes a path after it; the
 * PostgreSQL URLs are handed to libpq whole, so their prefix is kept. */
typedef struct {
    const char *prefix;
    const gpufl__store_ops_t *ops; /* NULL: a scheme this build knows but cannot serve */
    int strip;                     /* 1: the engine gets the URL after the prefix */
} engine_entry_t;

static const engine_entry_t engines[] = {
    {"sqlite:", &gpufl__store_sqlite_ops, 1},
#ifdef GPUFL_HAVE_LIBPQ
    {"postgresql://", &gpufl__store_pg_ops, 0},
    {"postgres://", &gpufl__store_pg_ops, 0},
#else
    {"postgresql://", NULL, 0},
    {"postgres://", NULL, 0},
#endif
};

int64_t (*gpufl__store_now_unix_s)(void);

int gpufl__store_fail(int code, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gpufl_internal_set_last_error(msg);
    return code;
}

int64_t gpufl__store_now(void) {
    if (gpufl__store_now_unix_s) return gpufl__store_now_unix_s();
    return (int64_t)time(NULL);
}

int64_t gpufl__store_day_of_unix_us(int64_t unix_us) {
    const int64_t us_per_day = 86400LL * 1000000LL;
    int64_t d = unix_us / us_per_day;
    return (unix_us % us_per_day < 0) ? d - 1 : d;
}

int64_t gpufl__store_row_day(int64_t epoch_unix_us, const gpufl__cell_t *time_cell,
                             int64_t fallback_day) {
    if (epoch_unix_us <= 0 || !time_cell || time_cell->kind != GPUFL__CELL_INT) return fallback_day;
    return gpufl__store_day_of_unix_us(epoch_unix_us + time_cell->u.i / 1000);
}

void gpufl__rowset_time_span(const gpufl__rowset_t *rs, int64_t *min_ns, int64_t *max_ns) {
    int ti = rs->table ? gpufl__store_table_time_index(rs->table) : -1;
    if (ti < 0 || !rs->cells) return;
    for (size_t r = 0; r < rs->n_rows; r++) {
        const gpufl__cell_t *cell = &rs->cells[r * rs->table->n_columns + (size_t)ti];
        if (cell->kind != GPUFL__CELL_INT) continue;
        if (cell->u.i < *min_ns) *min_ns = cell->u.i;
        if (cell->u.i > *max_ns) *max_ns = cell->u.i;
    }
}

static int list_begin(void *arg) {
    ((gpufl__rowset_list_t *)arg)->at = 0;
    return 0;
}

static int list_next(void *arg, const gpufl__rowset_t **out) {
    gpufl__rowset_list_t *l = arg;
    *out = l->at < l->n_sets ? &l->sets[l->at++] : NULL;
    return 0;
}

void gpufl__window_set_rowsets(gpufl__window_t *w, gpufl__rowset_list_t *list) {
    w->rows_source = (gpufl__rows_source_t){list_begin, list_next, list};
    w->time_min_ns = INT64_MAX;
    w->time_max_ns = INT64_MIN;
    for (size_t i = 0; i < list->n_sets; i++)
        gpufl__rowset_time_span(&list->sets[i], &w->time_min_ns, &w->time_max_ns);
}

int gpufl__store_open(gpufl__store_t **out, const gpufl__store_ops_t **out_ops, const char *url) {
    if (!out || !out_ops || !url)
        return gpufl__store_fail(GPUFL_EINVAL, "store: no database URL given");
    *out = NULL;
    *out_ops = NULL;
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++) {
        size_t n = strlen(engines[i].prefix);
        if (strncmp(url, engines[i].prefix, n) != 0) continue;
        if (!engines[i].ops)
            return gpufl__store_fail(GPUFL_ENOTSUP,
                                     "--db '%s': this gpufl-server was built without PostgreSQL "
                                     "(libpq was not found at build time); use sqlite:PATH",
                                     url);
        int rc = engines[i].ops->open(out, engines[i].strip ? url + n : url);
        if (rc == 0) *out_ops = engines[i].ops;
        return rc;
    }
    return gpufl__store_fail(GPUFL_EINVAL,
                             "--db '%s': unknown database URL; expected sqlite:PATH or "
                             "postgresql://...",
                             url);
}
