// SPDX-License-Identifier: Apache-2.0
/*
 * ingest_rows.c - a window's batch lines to the typed rows of store_tables.c, in two passes
 * over the lines: the first checks every cell and keeps none, the second (the rows source the
 * store reads inside the window's transaction) builds one rowset of at most
 * GPUFL__ROWSET_MAX_ROWS rows at a time. Columns are read by name (json_object_get), never by
 * position: an absent column is NULL, an unknown one is ignored. A compact line (kernel v 2;
 * copy, memset, sync v 3) is first decoded into the plain line it stands for by
 * gpufl_log_line_decode, libgpufl-analysis's decoder (the analysis reader's own), so the tables
 * never see an encoding.
 */
#include "server.h"

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_analysis.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DICT_MAX ((size_t)1 << 20) /* ids one window may define */

typedef struct dict_entry {
    int64_t id;
    char *text;
    size_t len;
    size_t line_no; /* the line that defined it: only later lines may use it */
} dict_entry_t;

/* Strings the cells point to that no JSON document keeps alive: blocks freed together. */
typedef struct text_block {
    struct text_block *next;
    char data[];
} text_block_t;

/* One rowset being built or read: at most GPUFL__ROWSET_MAX_ROWS rows of one table. */
typedef struct rowbuf {
    gpufl__rowset_t set;
    gpufl__cell_t *cells;
    size_t cap_cells;
    text_block_t *texts; /* integers written as text for the rowset; freed with it */
    json_t *doc;         /* a reference on the line whose strings the cells point into */
} rowbuf_t;

/* The second pass runs on a thread of its own, one rowset ahead of the store, so parsing the
 * next batch line overlaps writing this one (SQLite writes one window at a time per file).
 * Rowset k is built into bufs[k % 2] once rowset k - 2 is released: the store holds rowset k - 1
 * until its next call of next(). */
typedef struct ahead {
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rowbuf_t bufs[2];
    size_t built, taken, released;
    int done, stop, rc;
    char error[256];
} ahead_t;

struct gpufl__rows {
    rowbuf_t check;     /* the first pass's rowset, reused line after line */
    dict_entry_t *dict; /* open addressing on id */
    size_t dict_cap, dict_len;
    text_block_t *texts; /* what lives as long as the window (facts, types) */
    int lenient;
    int64_t time_min_ns, time_max_ns;
    /* The second pass's place (its thread's alone): line `at`, its document, the table entry
     * and the row next. */
    const gpufl__line_t *lines;
    size_t n_lines, at, table, row;
    json_t *doc;
    long doc_rows;
    ahead_t ahead;
};

static void texts_free(text_block_t **list) {
    while (*list) {
        text_block_t *next = (*list)->next;
        free(*list);
        *list = next;
    }
}

static void rowbuf_clear(rowbuf_t *b) {
    texts_free(&b->texts);
    json_decref(b->doc);
    b->doc = NULL;
    b->set.n_rows = 0;
}

static void rowbuf_fini(rowbuf_t *b) {
    rowbuf_clear(b);
    free(b->cells);
    memset(b, 0, sizeof *b);
}

int gpufl__rows_create(gpufl__rows_t **out) {
    gpufl__rows_t *r = calloc(1, sizeof *r);
    if (!r) return GPUFL_ENOMEM;
    if (pthread_mutex_init(&r->ahead.mu, NULL) != 0) {
        free(r);
        return GPUFL_ENOMEM;
    }
    if (pthread_cond_init(&r->ahead.cv, NULL) != 0) {
        pthread_mutex_destroy(&r->ahead.mu);
        free(r);
        return GPUFL_ENOMEM;
    }
    r->time_min_ns = INT64_MAX;
    r->time_max_ns = INT64_MIN;
    *out = r;
    return 0;
}

static void ahead_stop(gpufl__rows_t *r) {
    ahead_t *a = &r->ahead;
    if (!a->started) return;
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    a->started = 0;
}

void gpufl__rows_destroy(gpufl__rows_t *r) {
    if (!r) return;
    ahead_stop(r);
    for (size_t i = 0; i < r->dict_cap; i++) free(r->dict[i].text);
    texts_free(&r->texts);
    rowbuf_fini(&r->check);
    rowbuf_fini(&r->ahead.bufs[0]);
    rowbuf_fini(&r->ahead.bufs[1]);
    json_decref(r->doc);
    pthread_cond_destroy(&r->ahead.cv);
    pthread_mutex_destroy(&r->ahead.mu);
    free(r->dict);
    free(r);
}

void gpufl__rows_lenient(gpufl__rows_t *r, int lenient) { r->lenient = lenient; }

static size_t dict_slot(const gpufl__rows_t *r, int64_t id) {
    size_t i = (size_t)((uint64_t)id * 0x9E3779B97F4A7C15ull >> 20) & (r->dict_cap - 1);
    while (r->dict[i].text && r->dict[i].id != id) i = (i + 1) & (r->dict_cap - 1);
    return i;
}

static int dict_grow(gpufl__rows_t *r) {
    size_t cap = r->dict_cap ? r->dict_cap * 2 : 256;
    dict_entry_t *old = r->dict;
    size_t old_cap = r->dict_cap;
    r->dict = calloc(cap, sizeof *r->dict);
    if (!r->dict) {
        r->dict = old;
        return GPUFL_ENOMEM;
    }
    r->dict_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].text) r->dict[dict_slot(r, old[i].id)] = old[i];
    free(old);
    return 0;
}

int gpufl__rows_dict(gpufl__rows_t *r, size_t line_no, json_t *line, char *why, size_t size) {
    json_t *ids = json_object_get(line, "id"), *strs = json_object_get(line, "str");
    if (!json_is_array(ids) || !json_is_array(strs) ||
        json_array_size(ids) != json_array_size(strs)) {
        snprintf(why, size, "a dict line needs arrays \"id\" and \"str\" of one length");
        return GPUFL_EFORMAT;
    }
    for (size_t i = 0; i < json_array_size(ids); i++) {
        json_t *id = json_array_get(ids, i), *str = json_array_get(strs, i);
        if (!json_is_integer(id) || json_integer_value(id) <= 0 || !json_is_string(str)) {
            snprintf(why, size, "dict entry %zu: needs a positive integer id and a string", i);
            return GPUFL_EFORMAT;
        }
        if (r->dict_len >= DICT_MAX) {
            snprintf(why, size, "more than %zu dict ids in one window", DICT_MAX);
            return GPUFL_ENOMEM;
        }
        if ((r->dict_len + 1) * 2 > r->dict_cap && dict_grow(r) != 0) return GPUFL_ENOMEM;
        dict_entry_t *e = &r->dict[dict_slot(r, json_integer_value(id))];
        size_t len = json_string_length(str);
        char *copy = malloc(len + 1);
        if (!copy) return GPUFL_ENOMEM;
        memcpy(copy, json_string_value(str), len + 1);
        if (e->text) { /* defined again (a segment repeats what it uses): the first stays */
            free(copy);
            continue;
        }
        r->dict_len++;
        e->id = json_integer_value(id);
        e->text = copy;
        e->len = len;
        e->line_no = line_no;
    }
    return 0;
}

static const char *keep_in(text_block_t **list, const char *s, size_t len) {
    text_block_t *b = malloc(sizeof *b + len + 1);
    if (!b) return NULL;
    memcpy(b->data, s, len);
    b->data[len] = '\0';
    b->next = *list;
    *list = b;
    return b->data;
}

const char *gpufl__rows_keep(gpufl__rows_t *r, const char *s, size_t len) {
    return keep_in(&r->texts, s, len);
}

/* One cell from a JSON value, as the column's type wants it. */
static int cell_of(const gpufl__rows_t *r, rowbuf_t *b, size_t line_no, gpufl__cell_t *cell,
                   const gpufl__column_t *col, json_t *v, char *why, size_t size) {
    cell->kind = GPUFL__CELL_NULL;
    if (!v || json_is_null(v)) return 0;
    if (col->dict) {
        if (!json_is_integer(v)) goto wrong;
        int64_t id = json_integer_value(v);
        if (id == 0) return 0; /* "none" */
        const dict_entry_t *e = r->dict_cap ? &r->dict[dict_slot(r, id)] : NULL;
        if (!e || !e->text || e->line_no >= line_no) {
            if (r->lenient) return 0;
            snprintf(why, size, "column \"%s\": dict id %" PRId64 " is not defined before it",
                     col->from ? col->from : col->name, id);
            return GPUFL_EFORMAT;
        }
        if (col->type != GPUFL__COL_TEXT) goto wrong;
        cell->kind = GPUFL__CELL_TEXT;
        cell->u.t.s = e->text;
        cell->u.t.len = e->len;
        return 0;
    }
    switch (col->type) {
    case GPUFL__COL_INT:
        if (json_is_integer(v)) {
            cell->kind = GPUFL__CELL_INT;
            cell->u.i = json_integer_value(v);
        } else if (json_is_boolean(v)) {
            cell->kind = GPUFL__CELL_INT;
            cell->u.i = json_is_true(v);
        } else if (json_is_string(v)) { /* integers above 2^53 are written as strings */
            char *end;
            const char *s = json_string_value(v);
            long long x = strtoll(s, &end, 10);
            if (!*s || *end) goto wrong;
            cell->kind = GPUFL__CELL_INT;
            cell->u.i = x;
        } else {
            goto wrong;
        }
        return 0;
    case GPUFL__COL_REAL:
        if (!json_is_number(v)) goto wrong;
        cell->kind = GPUFL__CELL_REAL;
        cell->u.r = json_number_value(v);
        return 0;
    case GPUFL__COL_TEXT:
        if (json_is_string(v)) { /* the line's document outlives the rowset */
            cell->kind = GPUFL__CELL_TEXT;
            cell->u.t.s = json_string_value(v);
            cell->u.t.len = json_string_length(v);
        } else if (json_is_integer(v)) {
            char text[32];
            int n = snprintf(text, sizeof text, "%" PRId64, (int64_t)json_integer_value(v));
            const char *kept = keep_in(&b->texts, text, (size_t)n);
            if (!kept) return GPUFL_ENOMEM;
            cell->kind = GPUFL__CELL_TEXT;
            cell->u.t.s = kept;
            cell->u.t.len = (size_t)n;
        } else {
            goto wrong;
        }
        return 0;
    }
wrong:
    snprintf(why, size, "column \"%s\": a value of the wrong type",
             col->from ? col->from : col->name);
    return GPUFL_EFORMAT;
}

/* A batch line's length: a batch has only column arrays (besides type and v), all of one
 * length. -1 when the line is a single record (a member that is not an array); -2 when a
 * batch's columns disagree. */
static long batch_length(json_t *line) {
    const char *key;
    json_t *v;
    long n = -1;
    int disagree = 0;
    json_object_foreach(line, key, v) {
        if (!strcmp(key, "type") || !strcmp(key, "v")) continue;
        if (!json_is_array(v)) return -1;
        long len = (long)json_array_size(v);
        if (n >= 0 && len != n) disagree = 1;
        n = len;
    }
    return disagree ? -2 : n;
}

/* Rows row0 .. row0 + n - 1 of table entry t from batch line line_no, as b->set. */
static int fill_set(const gpufl__rows_t *r, rowbuf_t *b, size_t line_no, size_t t, json_t *line,
                    size_t row0, size_t n, char *why, size_t size) {
    const gpufl__table_t *tab = gpufl__store_tables[t];
    size_t nc = tab->n_columns;
    rowbuf_clear(b);
    if (n * nc > b->cap_cells) {
        gpufl__cell_t *cells = realloc(b->cells, n * nc * sizeof *cells);
        if (!cells) return GPUFL_ENOMEM;
        b->cells = cells;
        b->cap_cells = n * nc;
    }
    b->set = (gpufl__rowset_t){tab, 0, b->cells};
    json_t **arrays = calloc(nc ? nc : 1, sizeof *arrays);
    if (!arrays) return GPUFL_ENOMEM;
    int rc = 0;
    for (size_t c = 0; c < nc; c++) {
        const gpufl__column_t *col = &tab->columns[c];
        arrays[c] = json_object_get(line, col->from ? col->from : col->name);
        if (arrays[c] && !json_is_array(arrays[c]) && !json_is_null(arrays[c])) {
            snprintf(why, size, "column \"%s\" of a batch is not an array",
                     col->from ? col->from : col->name);
            rc = GPUFL_EFORMAT;
            goto done;
        }
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t c = 0; c < nc; c++) {
            json_t *v = json_is_array(arrays[c]) ? json_array_get(arrays[c], row0 + i) : NULL;
            gpufl__cell_t *cell = &b->cells[i * nc + c];
            if ((rc = cell_of(r, b, line_no, cell, &tab->columns[c], v, why, size)) != 0) {
                size_t w = strlen(why);
                if (rc == GPUFL_EFORMAT && w + 1 < size)
                    snprintf(why + w, size - w, " (row %zu)", row0 + i);
                goto done;
            }
        }
    }
    b->set.n_rows = n;
done:
    free(arrays);
    return rc;
}

static size_t piece(size_t rows_left) {
    return rows_left < GPUFL__ROWSET_MAX_ROWS ? rows_left : GPUFL__ROWSET_MAX_ROWS;
}

int gpufl__rows_check(gpufl__rows_t *r, size_t line_no, const char *type, json_t *line,
                      int64_t *n_rows, char *why, size_t size) {
    *n_rows = 1;
    int decoded = gpufl_log_line_decode(line, why, size);
    if (decoded) return decoded;
    long n = batch_length(line);
    *n_rows = n < 0 ? 1 : n;
    /* The line's times count once the whole line is good (a damaged line kept adds none). */
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t t = 0; t < gpufl__store_n_tables; t++) {
        if (strcmp(gpufl__store_tables[t]->record_type, type) != 0) continue;
        if (n == -2) {
            snprintf(why, size, "the columns of a \"%s\" batch differ in length", type);
            return GPUFL_EFORMAT;
        }
        if (n < 0) {
            snprintf(why, size, "a \"%s\" line must be a batch of column arrays", type);
            return GPUFL_EFORMAT;
        }
        for (size_t row = 0; row < (size_t)n; row += piece((size_t)n - row)) {
            int rc =
                fill_set(r, &r->check, line_no, t, line, row, piece((size_t)n - row), why, size);
            if (rc != 0) return rc;
            gpufl__rowset_time_span(&r->check.set, &lo, &hi);
        }
    }
    if (lo < r->time_min_ns) r->time_min_ns = lo;
    if (hi > r->time_max_ns) r->time_max_ns = hi;
    return 0;
}

void gpufl__rows_time_span(const gpufl__rows_t *r, int64_t *min_ns, int64_t *max_ns) {
    *min_ns = r->time_min_ns;
    *max_ns = r->time_max_ns;
}

/* ---- the rows source: the second pass, inside the store's transaction ------------------- */

static int typed_line(const gpufl__line_t *l) {
    if (!l->type) return 0; /* damaged, kept untyped */
    for (size_t t = 0; t < gpufl__store_n_tables; t++)
        if (!strcmp(gpufl__store_tables[t]->record_type, l->type)) return 1;
    return 0;
}

/* The next rowset of the window into b: 1, or 0 after the last, or a negative GPUFL_E* with
 * why. Only the second pass's thread calls it. */
static int build_next(gpufl__rows_t *r, rowbuf_t *b, char *why, size_t size) {
    for (;;) {
        for (; r->doc && r->table < gpufl__store_n_tables; r->table++, r->row = 0) {
            const char *type = r->lines[r->at].type;
            if (strcmp(gpufl__store_tables[r->table]->record_type, type) != 0) continue;
            if (r->row >= (size_t)r->doc_rows) continue;
            size_t n = piece((size_t)r->doc_rows - r->row);
            /* the first pass passed this line: only memory can fail here */
            int rc = fill_set(r, b, r->at + 1, r->table, r->doc, r->row, n, why, size);
            if (rc != 0) return rc;
            b->doc = json_incref(r->doc);
            r->row += n;
            return 1;
        }
        if (r->doc) {
            json_decref(r->doc);
            r->doc = NULL;
            r->at++;
        }
        while (r->at < r->n_lines && !typed_line(&r->lines[r->at])) r->at++;
        if (r->at >= r->n_lines) return 0;
        const gpufl__line_t *l = &r->lines[r->at];
        json_error_t err;
        if (!(r->doc = json_loadb(l->text, l->len, 0, &err))) {
            snprintf(why, size, "line %zu: %s", r->at + 1, err.text);
            return GPUFL_ENOMEM;
        }
        /* the first pass decoded this line without fault: only memory can fail here */
        if (gpufl_log_line_decode(r->doc, why, size) != 0) return GPUFL_ENOMEM;
        r->doc_rows = batch_length(r->doc);
        if (r->doc_rows < 0) r->doc_rows = 0; /* not a batch: the first pass refused it */
        r->table = r->row = 0;
    }
}

static void *ahead_main(void *arg) {
    gpufl__rows_t *r = arg;
    ahead_t *a = &r->ahead;
    for (;;) {
        pthread_mutex_lock(&a->mu);
        while (!a->stop && a->built >= a->released + 2) pthread_cond_wait(&a->cv, &a->mu);
        size_t k = a->built;
        int stop = a->stop;
        pthread_mutex_unlock(&a->mu);
        if (stop) break;
        char why[256] = "out of memory";
        int rc = build_next(r, &a->bufs[k % 2], why, sizeof why);
        pthread_mutex_lock(&a->mu);
        if (rc > 0) {
            a->built++;
        } else {
            a->done = 1;
            a->rc = rc;
            snprintf(a->error, sizeof a->error, "%s", why);
        }
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
        if (rc <= 0) break;
    }
    return NULL;
}

static int source_begin(void *arg) {
    gpufl__rows_t *r = arg;
    ahead_t *a = &r->ahead;
    ahead_stop(r);
    json_decref(r->doc);
    r->doc = NULL;
    r->at = r->table = r->row = 0;
    rowbuf_clear(&a->bufs[0]);
    rowbuf_clear(&a->bufs[1]);
    a->built = a->taken = a->released = 0;
    a->done = a->stop = a->rc = 0;
    if (pthread_create(&a->thread, NULL, ahead_main, r) != 0)
        return gpufl__store_fail(GPUFL_ENOMEM, "ingest: no thread for the window's rows");
    a->started = 1;
    return 0;
}

static int source_next(void *arg, const gpufl__rowset_t **out) {
    gpufl__rows_t *r = arg;
    ahead_t *a = &r->ahead;
    *out = NULL;
    if (!a->started) {
        int rc = source_begin(r);
        if (rc) return rc;
    }
    pthread_mutex_lock(&a->mu);
    a->released = a->taken; /* the rowset returned last is no longer read */
    pthread_cond_broadcast(&a->cv);
    while (a->built == a->taken && !a->done) pthread_cond_wait(&a->cv, &a->mu);
    int rc = 0;
    if (a->built > a->taken)
        *out = &a->bufs[a->taken++ % 2].set;
    else
        rc = a->rc;
    pthread_mutex_unlock(&a->mu);
    if (rc < 0) return gpufl__store_fail(rc, "ingest: %s", a->error);
    return 0;
}

void gpufl__rows_source(gpufl__rows_t *r, const gpufl__line_t *lines, size_t n_lines,
                        gpufl__rows_source_t *out) {
    rowbuf_fini(&r->check); /* the first pass is over */
    r->lines = lines;
    r->n_lines = n_lines;
    *out = (gpufl__rows_source_t){source_begin, source_next, r};
}
