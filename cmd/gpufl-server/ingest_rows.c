// SPDX-License-Identifier: Apache-2.0
/*
 * ingest_rows.c - a window's batch lines to the typed rows of store_tables.c. Columns are read
 * by name (json_object_get), never by position: an absent column is NULL, an unknown one is
 * ignored, so a library that adds columns never shifts what the server stores.
 */
#include "server.h"

#include <gpufl/gpufl.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DICT_MAX ((size_t)1 << 20) /* ids one window may define */

typedef struct dict_entry {
    int64_t id;
    char *text;
    size_t len;
} dict_entry_t;

typedef struct table_rows {
    gpufl__cell_t *cells;
    size_t n_rows, cap_rows;
} table_rows_t;

/* Strings the cells point to that no JSON document keeps alive: blocks freed together. */
typedef struct text_block {
    struct text_block *next;
    char data[];
} text_block_t;

struct gpufl__rows {
    table_rows_t *tables; /* one per gpufl__store_tables entry */
    gpufl__rowset_t *sets;
    size_t max_cells, n_cells;
    dict_entry_t *dict; /* open addressing on id */
    size_t dict_cap, dict_len;
    text_block_t *texts;
    int lenient;
};

int gpufl__rows_create(gpufl__rows_t **out, size_t max_cells) {
    gpufl__rows_t *r = calloc(1, sizeof *r);
    if (!r) return GPUFL_ENOMEM;
    r->tables = calloc(gpufl__store_n_tables ? gpufl__store_n_tables : 1, sizeof *r->tables);
    r->sets = calloc(gpufl__store_n_tables ? gpufl__store_n_tables : 1, sizeof *r->sets);
    if (!r->tables || !r->sets) {
        gpufl__rows_destroy(r);
        return GPUFL_ENOMEM;
    }
    r->max_cells = max_cells;
    *out = r;
    return 0;
}

void gpufl__rows_destroy(gpufl__rows_t *r) {
    if (!r) return;
    for (size_t i = 0; r->tables && i < gpufl__store_n_tables; i++) free(r->tables[i].cells);
    for (size_t i = 0; i < r->dict_cap; i++) free(r->dict[i].text);
    while (r->texts) {
        text_block_t *next = r->texts->next;
        free(r->texts);
        r->texts = next;
    }
    free(r->dict);
    free(r->tables);
    free(r->sets);
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

int gpufl__rows_dict(gpufl__rows_t *r, json_t *line, char *why, size_t size) {
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
    }
    return 0;
}

const char *gpufl__rows_keep(gpufl__rows_t *r, const char *s, size_t len) {
    text_block_t *b = malloc(sizeof *b + len + 1);
    if (!b) return NULL;
    memcpy(b->data, s, len);
    b->data[len] = '\0';
    b->next = r->texts;
    r->texts = b;
    return b->data;
}

/* One cell from a JSON value, as the column's type wants it. */
static int cell_of(gpufl__rows_t *r, gpufl__cell_t *cell, const gpufl__column_t *col, json_t *v,
                   char *why, size_t size) {
    cell->kind = GPUFL__CELL_NULL;
    if (!v || json_is_null(v)) return 0;
    if (col->dict) {
        if (!json_is_integer(v)) goto wrong;
        int64_t id = json_integer_value(v);
        if (id == 0) return 0; /* "none" */
        const dict_entry_t *e = r->dict_cap ? &r->dict[dict_slot(r, id)] : NULL;
        if (!e || !e->text) {
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
        if (json_is_string(v)) { /* copied: the line's document is freed after the line */
            const char *kept = gpufl__rows_keep(r, json_string_value(v), json_string_length(v));
            if (!kept) return GPUFL_ENOMEM;
            cell->kind = GPUFL__CELL_TEXT;
            cell->u.t.s = kept;
            cell->u.t.len = json_string_length(v);
        } else if (json_is_integer(v)) {
            char text[32];
            int n = snprintf(text, sizeof text, "%" PRId64, (int64_t)json_integer_value(v));
            const char *kept = gpufl__rows_keep(r, text, (size_t)n);
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

static int fill_table(gpufl__rows_t *r, size_t t, json_t *line, size_t n, char *why, size_t size) {
    const gpufl__table_t *tab = gpufl__store_tables[t];
    table_rows_t *tr = &r->tables[t];
    size_t nc = tab->n_columns;
    if (n == 0) return 0; /* an empty batch adds no rows */
    if (n * nc > r->max_cells - r->n_cells) {
        snprintf(why, size, "the window holds more than %zu typed cells; send smaller windows",
                 r->max_cells);
        return GPUFL_ENOMEM;
    }
    if (tr->n_rows + n > tr->cap_rows) {
        size_t cap = tr->cap_rows ? tr->cap_rows : 64;
        while (cap < tr->n_rows + n) cap *= 2;
        gpufl__cell_t *cells = realloc(tr->cells, cap * nc * sizeof *cells);
        if (!cells) return GPUFL_ENOMEM;
        tr->cells = cells;
        tr->cap_rows = cap;
    }
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
    gpufl__cell_t *out = tr->cells + tr->n_rows * nc;
    for (size_t i = 0; i < n; i++) {
        for (size_t c = 0; c < nc; c++) {
            const gpufl__column_t *col = &tab->columns[c];
            gpufl__cell_t *cell = &out[i * nc + c];
            json_t *v = json_is_array(arrays[c]) ? json_array_get(arrays[c], i) : NULL;
            if ((rc = cell_of(r, cell, col, v, why, size)) != 0) {
                size_t w = strlen(why);
                if (rc == GPUFL_EFORMAT && w + 1 < size)
                    snprintf(why + w, size - w, " (row %zu)", i);
                goto done;
            }
        }
    }
    tr->n_rows += n;
    r->n_cells += n * nc;
done:
    free(arrays);
    return rc;
}

int gpufl__rows_record(gpufl__rows_t *r, const char *type, json_t *line, int64_t *n_rows, char *why,
                       size_t size) {
    long n = batch_length(line);
    *n_rows = n < 0 ? 1 : n;
    for (size_t t = 0; t < gpufl__store_n_tables; t++) {
        const gpufl__table_t *tab = gpufl__store_tables[t];
        if (strcmp(tab->record_type, type) != 0) continue;
        if (n == -2) {
            snprintf(why, size, "the columns of a \"%s\" batch differ in length", type);
            return GPUFL_EFORMAT;
        }
        if (n < 0) {
            snprintf(why, size, "a \"%s\" line must be a batch of column arrays", type);
            return GPUFL_EFORMAT;
        }
        int rc = fill_table(r, t, line, (size_t)n, why, size);
        if (rc != 0) return rc;
    }
    return 0;
}

const gpufl__rowset_t *gpufl__rows_sets(gpufl__rows_t *r, size_t *n) {
    size_t k = 0;
    for (size_t t = 0; t < gpufl__store_n_tables; t++) {
        if (!r->tables[t].n_rows) continue;
        r->sets[k].table = gpufl__store_tables[t];
        r->sets[k].n_rows = r->tables[t].n_rows;
        r->sets[k].cells = r->tables[t].cells;
        k++;
    }
    *n = k;
    return r->sets;
}
