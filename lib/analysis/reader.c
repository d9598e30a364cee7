// SPDX-License-Identifier: Apache-2.0
/*
 * reader.c - reads a session's lines into records: from a session directory,
 * or fed by file in any interleaving (gpufl__reader_feed, the one path both
 * take).
 *
 * Lines are cut out of a growable buffer (capped: a line past the cap is
 * reported and skipped without being held in memory) and parsed one by one
 * with jansson (or the batch scanner below, for plain integer batches), so
 * memory stays bounded by the longest line, never the file.
 * Damage is expected and local: the format guarantees that a crash leaves at
 * most one incomplete line, at the end of a file, and a failed write at most
 * one bad line, so a bad line is reported and reading goes on. What a line
 * that is not JSON held (its type, its rows) is read from its surviving
 * start and handed on, so the loss can be counted and named.
 */
#include "analysis/reader.h"

#include "util/colcode.h"
#include "util/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define STRPOOL_DEFAULT_MAX  ((size_t)1 << 30)
#define STRPOOL_CHUNK        ((size_t)64 << 10)
#define DICT_DEFAULT_MAX     ((size_t)16 << 20)
#define LINE_DEFAULT_MAX     ((size_t)64 << 20)
#define SEGMENTS_DEFAULT_MAX 100000u
#define READ_CHUNK           ((size_t)1 << 20)

/* ---------------------------------------------------------------------- */
/* String pool                                                              */
/* ---------------------------------------------------------------------- */

struct gpufl__strpool_chunk {
    gpufl__strpool_chunk_t *next;
    size_t size, used;
    char data[];
};

void gpufl__strpool_init(gpufl__strpool_t *p, size_t max_bytes) {
    p->head = NULL;
    p->used_bytes = 0;
    p->max_bytes = max_bytes ? max_bytes : STRPOOL_DEFAULT_MAX;
}

void gpufl__strpool_fini(gpufl__strpool_t *p) {
    gpufl__strpool_chunk_t *c = p->head;
    while (c) {
        gpufl__strpool_chunk_t *next = c->next;
        free(c);
        c = next;
    }
    p->head = NULL;
    p->used_bytes = 0;
}

int gpufl__strpool_add(gpufl__strpool_t *p, const char *s, size_t len, const char **out) {
    size_t need = len + 1;
    if (need > p->max_bytes - p->used_bytes || need == 0)
        return gpufl__set_error(GPUFL_ENOMEM, "string pool cap of %zu bytes reached", p->max_bytes);
    gpufl__strpool_chunk_t *c = p->head;
    if (!c || c->size - c->used < need) {
        size_t size = need > STRPOOL_CHUNK ? need : STRPOOL_CHUNK;
        c = malloc(sizeof *c + size);
        if (!c) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for strings");
        c->size = size;
        c->used = 0;
        c->next = p->head;
        p->head = c;
    }
    char *dst = c->data + c->used;
    if (len) memcpy(dst, s, len);
    dst[len] = '\0';
    c->used += need;
    p->used_bytes += need;
    *out = dst;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Dictionary                                                               */
/* ---------------------------------------------------------------------- */

void gpufl__dict_init(gpufl__dict_t *d, size_t max_entries, size_t max_bytes) {
    memset(d, 0, sizeof *d);
    gpufl__idmap_init(&d->ids);
    gpufl__strpool_init(&d->pool, max_bytes);
    d->max_entries = max_entries ? max_entries : DICT_DEFAULT_MAX;
}

void gpufl__dict_fini(gpufl__dict_t *d) {
    gpufl__idmap_fini(&d->ids);
    gpufl__strpool_fini(&d->pool);
    free(d->str);
    memset(d, 0, sizeof *d);
}

const char *gpufl__dict_get(const gpufl__dict_t *d, int64_t id) {
    size_t idx;
    if (id == 0) return "";
    if (id < 0 || !gpufl__idmap_get(&d->ids, (uint64_t)id, &idx)) return NULL;
    return d->str[idx];
}

int gpufl__dict_put(gpufl__dict_t *d, int64_t id, const char *s, size_t len) {
    size_t idx;
    if (id <= 0) return GPUFL_EINVAL;
    if (gpufl__idmap_get(&d->ids, (uint64_t)id, &idx)) {
        const char *old = d->str[idx];
        if (strlen(old) == len && memcmp(old, s, len) == 0) return 0;
        d->conflicts++;
        return 1;
    }
    if (d->count >= d->max_entries) {
        d->over_cap++;
        return 2;
    }
    if (d->count == d->alloc) {
        size_t alloc = d->alloc ? d->alloc * 2 : 256;
        if (alloc > d->max_entries) alloc = d->max_entries;
        const char **str = realloc(d->str, alloc * sizeof *str);
        if (!str) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the dictionary");
        d->str = str;
        d->alloc = alloc;
    }
    const char *copy;
    int rc = gpufl__strpool_add(&d->pool, s, len, &copy);
    if (rc) return rc;
    rc = gpufl__idmap_put(&d->ids, (uint64_t)id, d->count, NULL);
    if (rc < 0) return rc;
    d->str[d->count++] = copy;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Value helpers                                                            */
/* ---------------------------------------------------------------------- */

int gpufl__reader_int(const json_t *v, int64_t *out) {
    if (!v || json_is_null(v)) return 1;
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        int neg = 0;
        uint64_t acc = 0;
        size_t i = 0;
        if (len && s[0] == '-') neg = 1, i = 1;
        if (i == len || len - i > 19) return -1;
        for (; i < len; i++) {
            if (s[i] < '0' || s[i] > '9') return -1;
            acc = acc * 10 + (uint64_t)(s[i] - '0');
        }
        if (acc > (uint64_t)INT64_MAX) return -1;
        *out = neg ? -(int64_t)acc : (int64_t)acc;
        return 0;
    }
    return -1;
}

int gpufl__reader_num(const json_t *v, double *out) {
    if (!v || json_is_null(v)) return 1;
    if (!json_is_number(v)) return -1;
    *out = json_number_value(v);
    return 0;
}

int gpufl__reader_columns(const json_t *rec, const char *const names[], json_t *cols[], size_t n,
                          size_t n_required, size_t *rows, char *why, size_t why_size) {
    size_t len = 0;
    int have_len = 0;
    for (size_t i = 0; i < n; i++) {
        cols[i] = json_object_get(rec, names[i]);
        if (!cols[i]) {
            if (i >= n_required) continue;
            snprintf(why, why_size, "column \"%s\" missing", names[i]);
            return -1;
        }
        if (!json_is_array(cols[i])) {
            snprintf(why, why_size, "column \"%s\" is not an array", names[i]);
            return -1;
        }
        size_t l = json_array_size(cols[i]);
        if (have_len && l != len) {
            snprintf(why, why_size, "column \"%s\" has %zu rows, the others %zu", names[i], l, len);
            return -1;
        }
        len = l;
        have_len = 1;
    }
    /* Columns this reader does not know must still agree: a batch whose
     * columns differ in length is damaged as a whole. */
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)rec, key, val) {
        if (!json_is_array(val)) continue;
        size_t l = json_array_size(val);
        if (!have_len) {
            len = l;
            have_len = 1;
        } else if (l != len) {
            snprintf(why, why_size, "column \"%s\" has %zu rows, the others %zu", key, l, len);
            return -1;
        }
    }
    *rows = len;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Batch scanner                                                            */
/* ---------------------------------------------------------------------- */

/* jansson builds one json_t per number, which dominates loading a large
 * trace. Batch lines are regular enough to read straight into int64 arrays;
 * the scanner accepts only the plain shape and gives every other line back
 * to jansson, so what counts as corrupt and how it is reported is decided in
 * one place. */

#define SCAN_MAX_COLUMNS 64
#define SCAN_MAX_CELLS   ((size_t)16 << 20)

void gpufl__reader_scanner_fini(gpufl__reader_scanner_t *s) {
    free(s->values);
    free(s->is_null);
    free(s->columns);
    memset(s, 0, sizeof *s);
}

const gpufl__reader_column_t *gpufl__reader_batch_column(const gpufl__reader_batch_t *b,
                                                         const char *name) {
    size_t len = strlen(name);
    for (size_t i = 0; i < b->n_columns; i++)
        if (b->columns[i].name_len == len && memcmp(b->columns[i].name, name, len) == 0)
            return &b->columns[i];
    return NULL;
}

typedef struct scan {
    const char *p, *end;
} scan_t;

static void scan_ws(scan_t *sc) {
    while (sc->p < sc->end && (*sc->p == ' ' || *sc->p == '\t' || *sc->p == '\r' || *sc->p == '\n'))
        sc->p++;
}

static int scan_char(scan_t *sc, char ch) {
    scan_ws(sc);
    if (sc->p == sc->end || *sc->p != ch) return 0;
    sc->p++;
    return 1;
}

/* A string of [A-Za-z0-9_] (nothing that needs unescaping). */
static int scan_name(scan_t *sc, const char **name, size_t *len) {
    if (!scan_char(sc, '"')) return 0;
    const char *start = sc->p;
    while (sc->p < sc->end &&
           ((*sc->p >= 'a' && *sc->p <= 'z') || (*sc->p >= 'A' && *sc->p <= 'Z') ||
            (*sc->p >= '0' && *sc->p <= '9') || *sc->p == '_'))
        sc->p++;
    if (sc->p == sc->end || *sc->p != '"') return 0;
    *name = start;
    *len = (size_t)(sc->p - start);
    sc->p++;
    return 1;
}

static int scan_key(scan_t *sc, const char *key) {
    const char *name;
    size_t len;
    return scan_name(sc, &name, &len) && len == strlen(key) && memcmp(name, key, len) == 0 &&
           scan_char(sc, ':');
}

/* null or a JSON integer within int64; a decimal, an exponent or anything
 * past int64 is left to jansson. Returns 1 value, 2 null, 0 not understood. */
static int scan_cell(scan_t *sc, int64_t *out) {
    scan_ws(sc);
    const char *p = sc->p, *end = sc->end;
    if (end - p >= 4 && memcmp(p, "null", 4) == 0) {
        sc->p = p + 4;
        *out = 0;
        return 2;
    }
    int neg = 0;
    if (p < end && *p == '-') neg = 1, p++;
    if (p == end || *p < '0' || *p > '9') return 0;
    if (*p == '0' && p + 1 < end && p[1] >= '0' && p[1] <= '9') return 0;
    uint64_t acc = 0;
    const char *digits = p;
    while (p < end && *p >= '0' && *p <= '9') acc = acc * 10 + (uint64_t)(*p++ - '0');
    if (p - digits > 18 && (p - digits > 19 || acc > (uint64_t)INT64_MAX)) return 0;
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return 0;
    *out = neg ? -(int64_t)acc : (int64_t)acc;
    sc->p = p;
    return 1;
}

static int scan_reserve_cells(gpufl__reader_scanner_t *s, size_t need) {
    if (need <= s->cells_alloc) return 0;
    size_t alloc = s->cells_alloc ? s->cells_alloc : 4096;
    while (alloc < need) alloc *= 2;
    if (alloc > SCAN_MAX_CELLS) alloc = SCAN_MAX_CELLS;
    int64_t *values = realloc(s->values, alloc * sizeof *values);
    if (!values) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for a batch");
    s->values = values;
    unsigned char *is_null = realloc(s->is_null, alloc);
    if (!is_null) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for a batch");
    s->is_null = is_null;
    s->cells_alloc = alloc;
    return 0;
}

/* Reads one "name":[cells] member at *cells (in a compact line also "name":cell, a scalar).
 * Returns 1, 0 not understood, GPUFL_ENOMEM. */
static int scan_column(gpufl__reader_scanner_t *s, scan_t *sc, size_t n, size_t *cells,
                       size_t *rows) {
    gpufl__reader_column_t *col = &s->columns[n];
    if (!scan_name(sc, &col->name, &col->name_len) || !scan_char(sc, ':')) return 0;
    s->col_scalar[n] = s->codes && n > 0 && (scan_ws(sc), sc->p < sc->end && *sc->p != '[');
    if (!s->col_scalar[n] && !scan_char(sc, '[')) return 0;
    static const char *const fixed[] = {"type", "v"};
    for (size_t i = 0; i < 2; i++)
        if (col->name_len == strlen(fixed[i]) && memcmp(col->name, fixed[i], col->name_len) == 0)
            return 0; /* jansson keeps the last of a repeated key */
    for (size_t i = 0; i < n; i++)
        if (s->columns[i].name_len == col->name_len &&
            memcmp(s->columns[i].name, col->name, col->name_len) == 0)
            return 0;
    size_t start = *cells;
    if (s->col_scalar[n] || !scan_char(sc, ']')) {
        for (;;) {
            if (*cells == SCAN_MAX_CELLS) return 0;
            int rc = scan_reserve_cells(s, *cells + 1);
            if (rc) return rc;
            rc = scan_cell(sc, &s->values[*cells]);
            if (!rc) return 0;
            s->is_null[(*cells)++] = rc == 2;
            if (s->col_scalar[n] || scan_char(sc, ']')) break;
            if (!scan_char(sc, ',')) return 0;
        }
    }
    size_t len = *cells - start;
    s->col_cells[n] = len;
    /* values moves as it grows: keep the offset until the line is done. */
    col->values = (const int64_t *)(uintptr_t)start;
    const gpufl__colcode_t *code =
        s->codes ? gpufl__colcode_of(s->codes, col->name, col->name_len) : NULL;
    if (s->col_scalar[n] || (code && code->kind == GPUFL_CODE_KEYED)) return 1;
    if (n > 0 && len != *rows) return 0; /* jansson's path reports the mismatch */
    *rows = len;
    return 1;
}

/* Turns the n columns of a compact line, scanned as written, into the plain line's: a scalar
 * repeated on every row, a KEYED column given room for every row, then the codes undone.
 * Returns 1, 0 when the encoding is malformed (jansson's path reports it), GPUFL_ENOMEM. */
static int scan_decode(gpufl__reader_scanner_t *s, size_t n, size_t *cells, size_t rows) {
    gpufl__colcode_col_t cols[SCAN_MAX_COLUMNS];
    if (rows > GPUFL_COLCODE_MAX_ROWS) return 0;
    for (size_t i = 0; i < n; i++) {
        gpufl__reader_column_t *col = &s->columns[i];
        size_t from = (size_t)(uintptr_t)col->values, len = s->col_cells[i];
        int keyed = !s->col_scalar[i] && len != rows;
        if (keyed && len > rows) return 0;
        if (s->col_scalar[i] || keyed) {
            if (*cells + rows > SCAN_MAX_CELLS) return 0;
            int rc = scan_reserve_cells(s, *cells + rows);
            if (rc) return rc;
            for (size_t r = 0; r < rows; r++) {
                size_t at = s->col_scalar[i] ? from : from + (r < len ? r : 0);
                s->values[*cells + r] = s->values[at];
                s->is_null[*cells + r] = s->is_null[at];
            }
            col->values = (const int64_t *)(uintptr_t)*cells;
            *cells += rows;
        }
        cols[i] = (gpufl__colcode_col_t){col->name, col->name_len, NULL, NULL,
                                         s->col_scalar[i] ? rows : len};
    }
    for (size_t i = 0; i < n; i++) {
        size_t at = (size_t)(uintptr_t)s->columns[i].values;
        cols[i].values = s->values ? s->values + at : NULL;
        cols[i].is_null = s->is_null ? s->is_null + at : NULL;
        /* a scalar is a value, never coded: hide a relative column's name from the decoder
         * (a KEYED one of rows values reads as written plain, and a key must stay found) */
        const gpufl__colcode_t *code = gpufl__colcode_of(s->codes, cols[i].name, cols[i].name_len);
        if (s->col_scalar[i] && code && code->kind != GPUFL_CODE_KEYED) cols[i].name_len = 0;
    }
    char why[8];
    int rc = gpufl__colcode_decode(s->codes, cols, n, rows, why, sizeof why);
    return rc == 0 ? 1 : rc < -1 ? rc : 0;
}

/* Reads '{"type":"<name>","v":' and the version into *v, the type into
 * s->type. Returns 1, or 0 when the line does not start so. */
static int scan_type_and_version(gpufl__reader_scanner_t *s, scan_t *sc, int64_t *v) {
    const char *type;
    size_t type_len;
    if (!scan_char(sc, '{') || !scan_key(sc, "type") || !scan_name(sc, &type, &type_len) ||
        type_len >= sizeof s->type)
        return 0;
    memcpy(s->type, type, type_len);
    s->type[type_len] = '\0';
    return scan_char(sc, ',') && scan_key(sc, "v") && scan_cell(sc, v) == 1;
}

static int reserve_columns(gpufl__reader_scanner_t *s) {
    if (s->columns_alloc) return 0;
    s->columns = malloc(SCAN_MAX_COLUMNS * sizeof *s->columns);
    if (!s->columns) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for a batch");
    s->columns_alloc = SCAN_MAX_COLUMNS;
    return 0;
}

/* Hands the n columns scanned over as b, once the cells stop moving. */
static void finish_columns(gpufl__reader_scanner_t *s, size_t n, size_t rows,
                           gpufl__reader_batch_t *b) {
    for (size_t i = 0; i < n; i++) {
        size_t start = (size_t)(uintptr_t)s->columns[i].values;
        /* empty columns only: no cell was stored, and none will be read */
        s->columns[i].values = s->values ? s->values + start : NULL;
        s->columns[i].is_null = s->is_null ? s->is_null + start : NULL;
    }
    b->type = s->type;
    b->n_columns = n;
    b->rows = rows;
    b->columns = s->columns;
}

int gpufl__reader_scan_batch(gpufl__reader_scanner_t *s, const char *line, size_t len,
                             gpufl__reader_batch_t *b) {
    scan_t sc = {line, line + len};
    size_t n = 0, cells = 0, rows = 0;
    int64_t v;
    s->codes = NULL;
    if (!scan_type_and_version(s, &sc, &v) || v < 1) return 0;
    s->codes = gpufl__colcode_find(s->type, v);
    int rc = reserve_columns(s);
    if (rc) return rc;
    while (scan_char(&sc, ',')) {
        if (n == SCAN_MAX_COLUMNS) return 0;
        rc = scan_column(s, &sc, n, &cells, &rows);
        if (rc <= 0) return rc;
        n++;
    }
    if (!scan_char(&sc, '}')) return 0;
    scan_ws(&sc);
    if (sc.p != sc.end) return 0;
    if (s->codes && (n == 0 || (rc = scan_decode(s, n, &cells, rows)) <= 0)) return rc;
    finish_columns(s, n, rows, b);
    b->version = v;
    return 1;
}

int gpufl__reader_scan_damage(gpufl__reader_scanner_t *s, const char *line, size_t len,
                              gpufl__reader_batch_t *b, gpufl__reader_damage_t *d) {
    scan_t sc = {line, line + len};
    size_t n = 0, cells = 0, rows = 0;
    int64_t v;
    const char *name;
    size_t name_len;
    memset(d, 0, sizeof *d);
    d->rows = -1;
    s->type[0] = '\0';
    s->codes = NULL; /* a damaged line's columns are read as written */
    int whole = scan_type_and_version(s, &sc, &v);
    if (s->type[0]) d->type = s->type;
    if (!whole || !scan_char(&sc, ',')) return 0;
    /* The member after "v": an array begins a batch's columns, any other
     * value makes the line a single record. */
    scan_t peek = sc;
    if (!scan_name(&peek, &name, &name_len) || !scan_char(&peek, ':')) return 0;
    scan_ws(&peek);
    if (peek.p == peek.end) return 0;
    if (*peek.p != '[') {
        d->rows = 1;
        d->rows_exact = 1;
        return 0;
    }
    int rc = reserve_columns(s);
    if (rc) return rc;
    for (; n < SCAN_MAX_COLUMNS; n++) {
        size_t before = cells;
        rc = scan_column(s, &sc, n, &cells, &rows);
        if (rc < 0) return rc;
        if (rc == 0) {
            /* A first column cut short still shows that many rows began. */
            if (n == 0 && cells > before) d->rows = (int64_t)(cells - before);
            break;
        }
        if (!scan_char(&sc, ',')) {
            n++;
            break;
        }
    }
    if (n == 0) return 0;
    finish_columns(s, n, rows, b);
    b->version = v;
    d->rows = (int64_t)rows;
    d->rows_exact = 1;
    d->columns = b;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Reading files                                                            */
/* ---------------------------------------------------------------------- */

static const char *const file_names[GPUFL_LOG_FILE_COUNT] = {"device.log", "scope.log",
                                                             "system.log"};

const char *gpufl__reader_file_name(gpufl__log_file_t file) {
    return (unsigned)file < GPUFL_LOG_FILE_COUNT ? file_names[file] : "?";
}

/* ---------------------------------------------------------------------- */
/* Cutting lines                                                            */
/* ---------------------------------------------------------------------- */

static size_t max_line_of(size_t max_line) { return max_line ? max_line : LINE_DEFAULT_MAX; }

/* Appends to the unfinished line, growing the buffer (within max_line + 1). */
static int tail_add(gpufl__reader_cutter_t *c, const char *p, size_t n) {
    if (c->tail_alloc - c->tail_len < n) {
        size_t grown = c->tail_alloc ? c->tail_alloc : 4096;
        while (grown - c->tail_len < n) grown *= 2;
        char *t = realloc(c->tail, grown);
        if (!t) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for a line");
        c->tail = t;
        c->tail_alloc = grown;
    }
    memcpy(c->tail + c->tail_len, p, n);
    c->tail_len += n;
    return 0;
}

/* Ends the line that is p[0..n) after the kept tail. */
static int cut_line(gpufl__reader_cutter_t *c, const char *p, size_t n, gpufl_reader_line_fn fn,
                    void *user) {
    size_t max = max_line_of(c->max_line);
    if (c->skipping) {
        c->skipping = 0;
        return fn(user, GPUFL_READER_CUT_LONG_END, NULL, 0);
    }
    if (c->tail_len + n > max) {
        c->tail_len = 0;
        int rc = fn(user, GPUFL_READER_CUT_LONG, NULL, 0);
        return rc ? rc : fn(user, GPUFL_READER_CUT_LONG_END, NULL, 0);
    }
    if (!c->tail_len) return fn(user, GPUFL_READER_CUT_LINE, p, n);
    int rc = tail_add(c, p, n);
    if (rc) return rc;
    size_t whole = c->tail_len;
    c->tail_len = 0;
    return fn(user, GPUFL_READER_CUT_LINE, c->tail, whole);
}

int gpufl__reader_cut(gpufl__reader_cutter_t *c, const char *bytes, size_t len,
                      gpufl_reader_line_fn fn, void *user) {
    size_t max = max_line_of(c->max_line);
    const char *p = bytes, *end = bytes + len, *nl;
    while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        int rc = cut_line(c, p, (size_t)(nl - p), fn, user);
        if (rc) return rc;
        p = nl + 1;
    }
    if (p == end || c->skipping) return 0;
    size_t n = (size_t)(end - p);
    if (c->tail_len + n > max) { /* reported now, not held: its '\n' ends it */
        c->tail_len = 0;
        c->skipping = 1;
        return fn(user, GPUFL_READER_CUT_LONG, NULL, 0);
    }
    return tail_add(c, p, n);
}

int gpufl__reader_cut_end(gpufl__reader_cutter_t *c) {
    int unfinished = c->tail_len > 0 || c->skipping;
    c->tail_len = 0;
    c->skipping = 0;
    if (c->tail_alloc > READ_CHUNK) { /* give back the room a long line needed */
        free(c->tail);
        c->tail = NULL;
        c->tail_alloc = 0;
    }
    return unfinished;
}

void gpufl__reader_cutter_fini(gpufl__reader_cutter_t *c) {
    free(c->tail);
    c->tail = NULL;
    c->tail_len = c->tail_alloc = 0;
    c->skipping = 0;
}

/* ---------------------------------------------------------------------- */
/* Reading lines                                                            */
/* ---------------------------------------------------------------------- */

static void warnf(gpufl__reader_t *r, uint64_t line, const char *fmt, ...) GPUFL__PRINTF(3, 4);

static void warnf(gpufl__reader_t *r, uint64_t line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!r->ops->warn) return;
    gpufl__reader_pos_t pos = r->cur->pos;
    pos.line = line;
    r->ops->warn(r->user, &pos, msg);
}

static void corrupt(gpufl__reader_t *r, const char *fmt, ...) GPUFL__PRINTF(2, 3);

static void corrupt(gpufl__reader_t *r, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->stats->corrupt_lines++;
    if (r->ops->warn) r->ops->warn(r->user, &r->cur->pos, msg);
}

/* Interns a dict line; all of it or none of it. */
static int handle_dict(gpufl__reader_t *r, json_t *rec) {
    static const char *const names[] = {"id", "str"};
    json_t *cols[2];
    size_t rows;
    char why[160];
    if (gpufl__reader_columns(rec, names, cols, 2, 2, &rows, why, sizeof why)) {
        corrupt(r, "dict: %s", why);
        return 0;
    }
    for (size_t i = 0; i < rows; i++) {
        json_t *id = json_array_get(cols[0], i);
        if (!json_is_integer(id) || json_integer_value(id) <= 0) {
            corrupt(r, "dict: id in row %zu is not a positive integer", i);
            return 0;
        }
        if (!json_is_string(json_array_get(cols[1], i))) {
            corrupt(r, "dict: str in row %zu is not a string", i);
            return 0;
        }
    }
    for (size_t i = 0; i < rows; i++) {
        json_t *s = json_array_get(cols[1], i);
        int64_t id = (int64_t)json_integer_value(json_array_get(cols[0], i));
        int rc = gpufl__dict_put(r->dict, id, json_string_value(s), json_string_length(s));
        r->stats->dict_entries++;
        if (rc < 0) return rc;
        if (rc == 1)
            warnf(r, r->cur->pos.line,
                  "dict: id %lld redefined with a different string (first kept)", (long long)id);
    }
    return 0;
}

/* The bookkeeping every record line gets before its callback. */
static void note_record(gpufl__reader_t *r, const char *t) {
    gpufl__reader_channel_t *ch = r->cur;
    int first = ch->records_in_segment++ == 0;
    if (first && strcmp(t, "header") != 0)
        warnf(r, ch->pos.line, "the first line is a \"%s\" record, not a header", t);
    if (ch->saw_segment_end) warnf(r, ch->pos.line, "a \"%s\" record after segment_end", t);
}

/* Hands a batch line the scanner understood to ops->batch. Returns 1 when
 * the line is not one (jansson reads it), 0 or < 0 as handle_line. */
static int handle_batch(gpufl__reader_t *r, const char *line, size_t len) {
    gpufl__reader_batch_t b;
    int rc = gpufl__reader_scan_batch(&r->scanner, line, len, &b);
    if (rc <= 0) return rc < 0 ? rc : 1;
    const char *const *t = r->ops->batch_types;
    while (*t && strcmp(*t, b.type) != 0) t++;
    if (!*t) return 1;
    note_record(r, b.type);
    r->stats->records++;
    rc = r->ops->batch(r->user, &r->cur->pos, &b);
    if (rc == 1) r->stats->unknown_records++;
    if (rc == 2) r->stats->corrupt_lines++;
    return rc > 0 ? 0 : rc;
}

/* A line that is not JSON: a write cut short or overwritten. Says what was
 * lost with it, as far as its start tells, and hands that to ops->damaged. */
static int handle_damage(gpufl__reader_t *r, const char *line, size_t len,
                         const json_error_t *jerr) {
    gpufl__reader_batch_t b;
    gpufl__reader_damage_t d;
    char lost[160];
    int rc = gpufl__reader_scan_damage(&r->scanner, line, len, &b, &d);
    if (rc) return rc;
    if (!d.type)
        snprintf(lost, sizeof lost, "what it held is unknown");
    else if (d.rows < 0)
        snprintf(lost, sizeof lost, "a \"%s\" line lost, rows unknown", d.type);
    else if (d.rows == 1 && d.rows_exact && !d.columns)
        snprintf(lost, sizeof lost, "a \"%s\" record lost", d.type);
    else
        snprintf(lost, sizeof lost, "a \"%s\" batch of %s%lld row%s lost", d.type,
                 d.rows_exact ? "" : "at least ", (long long)d.rows, d.rows == 1 ? "" : "s");
    /* jansson reads one line as its whole input, so an error at the line's
     * end says "near end of file": for a reader that is a line cut short. */
    char why[JSON_ERROR_TEXT_LENGTH];
    snprintf(why, sizeof why, "%s", jerr->text);
    char *eof = strstr(why, " near end of file");
    if (eof || jerr->position >= (int)len) {
        if (eof) *eof = '\0';
        corrupt(r, "line cut short after %zu bytes (%s); %s", len, why, lost);
    } else {
        corrupt(r, "not JSON at column %d: %s; %s", jerr->column, why, lost);
    }
    return r->ops->damaged ? r->ops->damaged(r->user, &r->cur->pos, &d) : 0;
}

static int handle_line(gpufl__reader_t *r, const char *line, size_t len) {
    json_error_t jerr;
    if (len == 0) {
        r->stats->empty_lines++;
        return 0;
    }
    if (r->ops->batch && r->ops->batch_types) {
        int rc = handle_batch(r, line, len);
        if (rc <= 0) return rc;
    }
    json_t *rec = json_loadb(line, len, 0, &jerr);
    if (!rec) return handle_damage(r, line, len, &jerr);
    int rc = 0;
    gpufl__reader_channel_t *ch = r->cur;
    json_t *type = json_object_get(rec, "type");
    json_t *v = json_object_get(rec, "v");
    if (!json_is_object(rec)) {
        corrupt(r, "not a JSON object");
    } else if (!json_is_string(type)) {
        corrupt(r, "no \"type\" string");
    } else if (!json_is_integer(v)) {
        corrupt(r, "no integer \"v\"");
    } else {
        const char *t = json_string_value(type);
        note_record(r, t);
        if (strcmp(t, "dict") == 0 && json_integer_value(v) == 1) {
            rc = handle_dict(r, rec);
        } else if (strcmp(t, "spool_dropped") == 0) {
            /* gpufl-agent replaced this sealed segment, never delivered, when the server was
             * away past its spool's bound (docs/upload.md): what it held is gone, said here. */
            json_t *bytes = json_object_get(rec, "bytes");
            warnf(r, ch->pos.line,
                  "gpufl-agent dropped this segment unsent (%lld bytes of records lost: the "
                  "server was away while the undelivered windows passed its spool's bound)",
                  json_is_integer(bytes) ? (long long)json_integer_value(bytes) : -1LL);
        } else if (strcmp(t, "segment_end") == 0 && json_integer_value(v) == 1) {
            json_t *next = json_object_get(rec, "next");
            ch->saw_segment_end = 1;
            snprintf(ch->segment_next, sizeof ch->segment_next, "%s",
                     json_is_string(next) ? json_string_value(next) : "");
        } else {
            if (strcmp(t, "header") == 0) {
                int64_t seg;
                if (gpufl__reader_int(json_object_get(rec, "segment"), &seg) == 0 &&
                    seg != (int64_t)ch->pos.segment)
                    warnf(r, ch->pos.line, "header says segment %lld in segment %u", (long long)seg,
                          ch->pos.segment);
            }
            r->stats->records++;
            rc = r->ops->record(r->user, &ch->pos, t, rec);
            if (rc == 1) r->stats->unknown_records++;
            if (rc == 2) r->stats->corrupt_lines++;
            if (rc > 0) rc = 0;
        }
    }
    json_decref(rec);
    return rc;
}

void gpufl__reader_init(gpufl__reader_t *r, const gpufl__reader_ops_t *ops, void *user,
                        gpufl__dict_t *dict, const gpufl__reader_limits_t *limits,
                        gpufl__reader_stats_t *stats, int follow_segments) {
    memset(r, 0, sizeof *r);
    memset(stats, 0, sizeof *stats);
    r->ops = ops;
    r->user = user;
    r->dict = dict;
    r->stats = stats;
    r->max_line = max_line_of(limits ? limits->max_line_bytes : 0);
    r->follow_segments = follow_segments;
    for (int f = 0; f < GPUFL_LOG_FILE_COUNT; f++) {
        r->ch[f].pos.file = (gpufl__log_file_t)f;
        r->ch[f].pos.name = r->ch[f].name;
        r->ch[f].cutter.max_line = r->max_line;
        snprintf(r->ch[f].name, sizeof r->ch[f].name, "%s", file_names[f]);
    }
    r->cur = &r->ch[0];
}

void gpufl__reader_fini(gpufl__reader_t *r) {
    for (int f = 0; f < GPUFL_LOG_FILE_COUNT; f++) gpufl__reader_cutter_fini(&r->ch[f].cutter);
    gpufl__reader_scanner_fini(&r->scanner);
}

void gpufl__reader_segment(gpufl__reader_t *r, gpufl__log_file_t file, unsigned segment) {
    gpufl__reader_channel_t *ch = &r->ch[file];
    if (segment == 0)
        snprintf(ch->name, sizeof ch->name, "%s", file_names[file]);
    else
        snprintf(ch->name, sizeof ch->name, "%s.%u", file_names[file], segment);
    ch->pos.segment = segment;
    ch->pos.line = 0;
    ch->records_in_segment = 0;
    ch->saw_segment_end = 0;
    ch->segment_next[0] = '\0';
    ch->started = 1;
    r->stats->segments[file]++;
}

int gpufl__reader_feed_cut(gpufl__reader_t *r, gpufl__log_file_t file, gpufl__reader_cut_t kind,
                           const char *line, size_t len) {
    gpufl__reader_channel_t *ch = &r->ch[file];
    r->cur = ch;
    if (kind == GPUFL_READER_CUT_LONG) { /* counted when it begins, as its line */
        r->stats->oversized_lines++;
        warnf(r, ch->pos.line + 1, "line longer than %zu bytes, skipped", r->max_line);
        return 0;
    }
    if (!ch->started)
        gpufl__reader_segment(r, file, 0);
    else if (r->follow_segments && ch->saw_segment_end && kind == GPUFL_READER_CUT_LINE)
        gpufl__reader_segment(r, file, ch->pos.segment + 1);
    ch->pos.line++;
    r->stats->lines++;
    return kind == GPUFL_READER_CUT_LINE ? handle_line(r, line, len) : 0;
}

typedef struct feed_ctx {
    gpufl__reader_t *r;
    gpufl__log_file_t file;
} feed_ctx_t;

static int feed_one(void *user, gpufl__reader_cut_t kind, const char *line, size_t len) {
    feed_ctx_t *f = user;
    return gpufl__reader_feed_cut(f->r, f->file, kind, line, len);
}

int gpufl__reader_feed(gpufl__reader_t *r, gpufl__log_file_t file, const char *bytes, size_t len) {
    feed_ctx_t f = {r, file};
    r->stats->bytes += len;
    return gpufl__reader_cut(&r->ch[file].cutter, bytes, len, feed_one, &f);
}

void gpufl__reader_end(gpufl__reader_t *r, gpufl__log_file_t file, int unfinished) {
    /* A crash leaves at most this: an incomplete last line. */
    if (gpufl__reader_cut_end(&r->ch[file].cutter) || unfinished) r->stats->truncated_lines++;
}

/* ---------------------------------------------------------------------- */
/* Reading a session directory                                              */
/* ---------------------------------------------------------------------- */

typedef struct read_ctx {
    gpufl__reader_t r;
    /* progress */
    gpufl_reader_progress_fn progress;
    void *progress_user;
    uint64_t total_bytes;
    int64_t last_progress_ns;
} read_ctx_t;

static int64_t monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Reports progress when the last report is GPUFL_READER_PROGRESS_NS old. */
static void note_progress(read_ctx_t *c) {
    if (!c->progress) return;
    int64_t now = monotonic_ns();
    if (now - c->last_progress_ns < GPUFL_READER_PROGRESS_NS) return;
    c->last_progress_ns = now;
    uint64_t done = c->r.stats->bytes;
    c->progress(c->progress_user, done, done > c->total_bytes ? done : c->total_bytes);
}

/* Reads one segment file through the feed. Returns 0, 1 when it does not
 * exist, or < 0. */
static int read_file(read_ctx_t *c, gpufl__log_file_t file, unsigned segment, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return 1;
        return gpufl__set_error(GPUFL_EIO, "cannot open '%s': %s", path, strerror(errno));
    }
    int rc = 0;
    char *buf = malloc(READ_CHUNK);
    if (!buf) {
        fclose(f);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for a read buffer");
    }
    gpufl__reader_segment(&c->r, file, segment);
    for (;;) {
        size_t n = fread(buf, 1, READ_CHUNK, f);
        if (n == 0) {
            if (ferror(f))
                rc = gpufl__set_error(GPUFL_EIO, "cannot read '%s': %s", path, strerror(errno));
            break;
        }
        rc = gpufl__reader_feed(&c->r, file, buf, n);
        note_progress(c);
        if (rc) break;
    }
    if (!rc) gpufl__reader_end(&c->r, file, 0);
    free(buf);
    fclose(f);
    return rc;
}

int gpufl__reader_read_session(const char *session_dir, const gpufl__reader_ops_t *ops, void *user,
                               gpufl__dict_t *dict, const gpufl__reader_limits_t *limits,
                               gpufl__reader_stats_t *stats) {
    struct stat st;
    memset(stats, 0, sizeof *stats);
    if (!session_dir || !*session_dir)
        return gpufl__set_error(GPUFL_EINVAL, "no session directory given");
    if (stat(session_dir, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return gpufl__set_error(GPUFL_ENOTFOUND, "session directory '%s' does not exist",
                                    session_dir);
        return gpufl__set_error(GPUFL_EIO, "cannot open session directory '%s': %s", session_dir,
                                strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return gpufl__set_error(GPUFL_ENOTFOUND, "'%s' is not a session directory", session_dir);

    read_ctx_t c;
    memset(&c, 0, sizeof c);
    gpufl__reader_init(&c.r, ops, user, dict, limits, stats, 0);
    unsigned max_segments =
        limits && limits->max_segments ? limits->max_segments : SEGMENTS_DEFAULT_MAX;

    size_t dir_len = strlen(session_dir);
    size_t path_size = dir_len + 64;
    char *path = malloc(path_size);
    if (!path) {
        gpufl__reader_fini(&c.r);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory");
    }
    int files = 0, rc = 0;
    if (limits && limits->progress) {
        /* The total: every segment there is now, found as the read finds them. */
        c.progress = limits->progress;
        c.progress_user = limits->progress_user;
        c.last_progress_ns = monotonic_ns();
        for (int f = 0; f < GPUFL_LOG_FILE_COUNT; f++) {
            for (unsigned seg = 0; seg < max_segments; seg++) {
                if (seg == 0)
                    snprintf(path, path_size, "%s/%s", session_dir, file_names[f]);
                else
                    snprintf(path, path_size, "%s/%s.%u", session_dir, file_names[f], seg);
                if (stat(path, &st) != 0) break;
                c.total_bytes += (uint64_t)st.st_size;
            }
        }
    }
    for (int f = 0; f < GPUFL_LOG_FILE_COUNT && !rc; f++) {
        gpufl__reader_channel_t *ch = &c.r.ch[f];
        char prev_name[64] = "", prev_next[64] = "";
        int prev_ended = 0;
        /* Segments are read in number order while they exist; segment_end
         * lines are only checked against what is there. */
        for (unsigned seg = 0; seg < max_segments; seg++) {
            char name[64];
            if (seg == 0)
                snprintf(name, sizeof name, "%s", file_names[f]);
            else
                snprintf(name, sizeof name, "%s.%u", file_names[f], seg);
            snprintf(path, path_size, "%s/%s", session_dir, name);
            rc = read_file(&c, (gpufl__log_file_t)f, seg, path);
            c.r.cur = ch;
            if (rc == 1) { /* no such segment: the previous one was the last */
                rc = 0;
                if (seg > 0 && prev_ended)
                    warnf(&c.r, 0, "segment_end names '%s', which is missing", prev_next);
                break;
            }
            if (rc) break;
            files++;
            if (seg > 0 && !prev_ended)
                warnf(&c.r, 0, "follows %s, which has no segment_end line", prev_name);
            else if (seg > 0 && strcmp(prev_next, ch->name) != 0)
                warnf(&c.r, 0, "%s's segment_end names '%s' instead", prev_name, prev_next);
            prev_ended = ch->saw_segment_end;
            snprintf(prev_name, sizeof prev_name, "%s", ch->name);
            snprintf(prev_next, sizeof prev_next, "%s", ch->segment_next);
        }
    }
    free(path);
    gpufl__reader_fini(&c.r);
    if (!rc && c.progress)
        c.progress(c.progress_user, stats->bytes,
                   stats->bytes > c.total_bytes ? stats->bytes : c.total_bytes);
    if (rc) return rc;
    if (files == 0)
        return gpufl__set_error(GPUFL_ENOTFOUND,
                                "no log file (device.log, scope.log, "
                                "system.log) in '%s'",
                                session_dir);
    return 0;
}
