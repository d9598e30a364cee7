// SPDX-License-Identifier: Apache-2.0
/*
 * colcode.c - the column encodings of compact batch lines and their one decoder, on column
 * arrays (the analysis reader's scanner) and on parsed lines (its jansson path, gpufl-server).
 * Times become small deltas and durations, and what a launch configuration fixes is written
 * once per configuration per line: a kernel row costs a third of its plain bytes.
 */
#include "util/colcode.h"

#include "util/error.h"

#include <gpufl/gpufl.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Activity rows start shortly after the last one of their stream ended (the start is that
 * gap), last a while (the end is the duration) and carry increasing ids (deltas). A kernel's
 * duration is close to the last of its configuration's at the same grid (a training loop runs
 * one kernel on several sizes: keyed on the configuration alone, the durations of the sizes
 * alternate and their differences are as large as the durations), and what a configuration fixes
 * (name, resources, block; the grid where it follows the configuration) is written once per
 * configuration in a line, with the rows of a configuration that disagrees (two block shapes,
 * two threads, two streams) written row by row for that configuration alone. An external id's
 * high bits (PyTorch's sequence) follow the configuration, its low bits the launches. */
static const gpufl__colcode_t kernel_codes[] = {
    {"start_ns", GPUFL_CODE_FROM_PREV, "end_ns", "stream", NULL},
    {"end_ns", GPUFL_CODE_AFTER, "start_ns", "config", "grid_x"},
    {"correlation", GPUFL_CODE_DELTA, NULL, NULL, NULL},
    {"scope", GPUFL_CODE_DELTA, NULL, NULL, NULL},
    {"launch_ns", GPUFL_CODE_DELTA, NULL, NULL, NULL},
    {"external_id", GPUFL_CODE_HIGH_KEYED, NULL, "config", NULL},
    {"name", GPUFL_CODE_KEYED, "config", NULL, NULL},
    {"demangled", GPUFL_CODE_KEYED, "config", NULL, NULL},
    {"registers", GPUFL_CODE_KEYED, "config", NULL, NULL},
    {"static_smem_bytes", GPUFL_CODE_KEYED, "config", NULL, NULL},
    {"dynamic_smem_bytes", GPUFL_CODE_KEYED, "config", NULL, NULL},
    {"local_bytes_per_thread", GPUFL_CODE_KEYED, "config", NULL, NULL},
    {"block_x", GPUFL_CODE_KEYED, "config", NULL, NULL},
    {"block_y", GPUFL_CODE_KEYED, "config", NULL, NULL},
    {"block_z", GPUFL_CODE_KEYED, "config", NULL, NULL},
    {"grid_x", GPUFL_CODE_KEYED, "config", NULL, NULL},
    {"grid_y", GPUFL_CODE_KEYED, "config", NULL, NULL},
    {"grid_z", GPUFL_CODE_KEYED, "config", NULL, NULL},
    {"stream", GPUFL_CODE_KEYED, "config", NULL, NULL},
    {"tid", GPUFL_CODE_KEYED, "config", NULL, NULL}};
static const gpufl__colcode_t stream_codes[] = {
    {"start_ns", GPUFL_CODE_FROM_PREV, "end_ns", "stream", NULL},
    {"end_ns", GPUFL_CODE_AFTER, "start_ns", NULL, NULL},
    {"correlation", GPUFL_CODE_DELTA, NULL, NULL, NULL},
    {"scope", GPUFL_CODE_DELTA, NULL, NULL, NULL}};
/* Synchronizations are the host's (a stream's may be null): the row before is the last one. */
static const gpufl__colcode_t sync_codes[] = {
    {"start_ns", GPUFL_CODE_FROM_PREV, "end_ns", NULL, NULL},
    {"end_ns", GPUFL_CODE_AFTER, "start_ns", NULL, NULL},
    {"correlation", GPUFL_CODE_DELTA, NULL, NULL, NULL},
    {"scope", GPUFL_CODE_DELTA, NULL, NULL, NULL}};

const gpufl__colcode_table_t gpufl__colcode_kernel = {"kernel", 2, kernel_codes,
                                                      N_OF(kernel_codes)};
const gpufl__colcode_table_t gpufl__colcode_copy = {"copy", 3, stream_codes, N_OF(stream_codes)};
const gpufl__colcode_table_t gpufl__colcode_memset = {"memset", 3, stream_codes,
                                                      N_OF(stream_codes)};
const gpufl__colcode_table_t gpufl__colcode_sync = {"sync", 3, sync_codes, N_OF(sync_codes)};

static const gpufl__colcode_table_t *const tables[] = {
    &gpufl__colcode_kernel, &gpufl__colcode_copy, &gpufl__colcode_memset, &gpufl__colcode_sync};

const gpufl__colcode_table_t *gpufl__colcode_find(const char *type, int64_t v) {
    for (size_t i = 0; i < N_OF(tables); i++)
        if (tables[i]->version == v && strcmp(tables[i]->type, type) == 0) return tables[i];
    return NULL;
}

const gpufl__colcode_t *gpufl__colcode_of(const gpufl__colcode_table_t *t, const char *name,
                                          size_t len) {
    for (size_t i = 0; t && i < t->n_codes; i++)
        if (strlen(t->codes[i].column) == len && memcmp(t->codes[i].column, name, len) == 0)
            return &t->codes[i];
    return NULL;
}

/* ---- keys ---- */

int gpufl__colcode_keys_init(gpufl__colcode_keys_t *k, size_t slots) {
    memset(k, 0, sizeof *k);
    k->key = malloc(slots * sizeof *k->key);
    k->slot_row = calloc(slots, sizeof *k->slot_row);
    if (!k->key || !k->slot_row) {
        gpufl__colcode_keys_fini(k);
        return GPUFL_ENOMEM;
    }
    k->slots = slots;
    return 0;
}

void gpufl__colcode_keys_reset(gpufl__colcode_keys_t *k) {
    if (k->slots) memset(k->slot_row, 0, k->slots * sizeof *k->slot_row);
    k->count = 0;
}

void gpufl__colcode_keys_fini(gpufl__colcode_keys_t *k) {
    free(k->key);
    free(k->slot_row);
    memset(k, 0, sizeof *k);
}

static size_t key_slot(const gpufl__colcode_keys_t *k, int64_t key, int is_null) {
    uint64_t h = is_null ? 0x5bd1e995u : (uint64_t)key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & (k->slots - 1);
}

static int keys_grow(gpufl__colcode_keys_t *k) {
    size_t slots = k->slots ? k->slots * 2 : 64;
    gpufl__colcode_keys_t g = {malloc(slots * sizeof *g.key), calloc(slots, sizeof *g.slot_row),
                               slots, k->count};
    if (!g.key || !g.slot_row) {
        gpufl__colcode_keys_fini(&g);
        return GPUFL_ENOMEM;
    }
    for (size_t i = 0; i < k->slots; i++) {
        if (!k->slot_row[i]) continue;
        /* a null key is stored as key 0 with its own hash: the row's sign bit marks it */
        int is_null = (k->slot_row[i] & 0x80000000u) != 0;
        size_t s = key_slot(&g, k->key[i], is_null);
        while (g.slot_row[s]) s = (s + 1) & (slots - 1);
        g.key[s] = k->key[i];
        g.slot_row[s] = k->slot_row[i];
    }
    gpufl__colcode_keys_fini(k);
    *k = g;
    return 0;
}

int64_t gpufl__colcode_key_pair(int64_t k1, int null1, int64_t k2, int null2) {
    uint64_t a = null1 ? 0x2545F4914F6CDD1Dull : (uint64_t)k1;
    uint64_t b = null2 ? 0x2545F4914F6CDD1Dull : (uint64_t)k2;
    uint64_t h = (a * 0x9E3779B97F4A7C15ull) ^ b;
    return (int64_t)(h * 0xBF58476D1CE4E5B9ull);
}

int64_t gpufl__colcode_keys_put(gpufl__colcode_keys_t *k, int64_t key, int is_null, uint32_t row) {
    if ((k->count + 1) * 2 > k->slots && keys_grow(k)) return -1;
    if (is_null) key = 0;
    uint32_t mark = is_null ? 0x80000000u : 0;
    size_t s = key_slot(k, key, is_null);
    for (; k->slot_row[s]; s = (s + 1) & (k->slots - 1))
        if (k->key[s] == key && (k->slot_row[s] & 0x80000000u) == mark)
            return (int64_t)((k->slot_row[s] & 0x7fffffffu) - 1);
    k->key[s] = key;
    k->slot_row[s] = (row + 1) | mark;
    k->count++;
    return row;
}

void gpufl__colcode_split(int64_t v, int64_t *hi, int64_t *lo) {
    *lo = (int64_t)((uint64_t)v & ((UINT64_C(1) << GPUFL_COLCODE_LOW_BITS) - 1));
    /* floored, without shifting a negative value */
    *hi = v < 0 ? ~(~v >> GPUFL_COLCODE_LOW_BITS) : v >> GPUFL_COLCODE_LOW_BITS;
}

int64_t gpufl__colcode_join(int64_t hi, int64_t lo) {
    return (int64_t)(((uint64_t)hi << GPUFL_COLCODE_LOW_BITS) | (uint64_t)lo);
}

/* ---- decoding ---- */

static gpufl__colcode_col_t *find_col(gpufl__colcode_col_t *cols, size_t n, const char *name) {
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (cols[i].name_len == len && memcmp(cols[i].name, name, len) == 0) return &cols[i];
    return NULL;
}

/* Rows [0, rows) of KEYED column c from its n_values entries: per key, in order of first
 * appearance, its value, or -m and the values of its m rows (an exception). */
static int decode_keyed(gpufl__colcode_col_t *c, const gpufl__colcode_col_t *key, size_t rows,
                        char *why, size_t why_size) {
    size_t n = c->n_values, next = 0;
    int64_t *values = malloc((n ? n : 1) * sizeof *values);
    unsigned char *is_null = malloc(n ? n : 1);
    /* per row: the row its key first came in; per first row: the key's rows, then the entry
     * its next row reads (+1; 0: the key has one value) */
    uint32_t *first = malloc((rows ? rows : 1) * sizeof *first);
    size_t *count = calloc(rows ? rows : 1, sizeof *count),
           *own = calloc(rows ? rows : 1, sizeof *own);
    gpufl__colcode_keys_t k = {0};
    int rc = values && is_null && first && count && own ? 0 : GPUFL_ENOMEM;
    if (!rc && n > rows) {
        snprintf(why, why_size, "column \"%.*s\" has %zu values, more than the %zu rows",
                 (int)c->name_len, c->name, n, rows);
        rc = -1;
    }
    if (!rc && n) memcpy(values, c->values, n * sizeof *values), memcpy(is_null, c->is_null, n);
    for (size_t r = 0; r < rows && !rc; r++) {
        int64_t f = gpufl__colcode_keys_put(&k, key->values[r], key->is_null[r], (uint32_t)r);
        if (f < 0)
            rc = GPUFL_ENOMEM;
        else
            first[r] = (uint32_t)f, count[f]++;
    }
    for (size_t r = 0; r < rows && !rc; r++) {
        size_t f = first[r];
        if (f == r) {
            if (next == n) {
                snprintf(why, why_size,
                         "column \"%.*s\" has %zu values, fewer than the keys of \"%.*s\"",
                         (int)c->name_len, c->name, n, (int)key->name_len, key->name);
                rc = -1;
                break;
            }
            if (!is_null[next] && values[next] < 0) { /* an exception: -m, then m rows */
                if (values[next] != -(int64_t)count[r] || n - next - 1 < count[r]) {
                    snprintf(why, why_size,
                             "column \"%.*s\": %lld for a key of %zu rows (%zu values left)",
                             (int)c->name_len, c->name, (long long)values[next], count[r],
                             n - next - 1);
                    rc = -1;
                    break;
                }
                own[r] = next + 2;
                next += 1 + count[r];
            } else {
                c->values[r] = values[next];
                c->is_null[r] = is_null[next++];
                continue;
            }
        }
        if (own[f]) {
            c->values[r] = values[own[f] - 1];
            c->is_null[r] = is_null[own[f]++ - 1];
        } else {
            c->values[r] = c->values[f];
            c->is_null[r] = c->is_null[f];
        }
    }
    if (!rc && next != n) {
        snprintf(why, why_size, "column \"%.*s\" has %zu values for %zu of \"%.*s\"",
                 (int)c->name_len, c->name, n, next, (int)key->name_len, key->name);
        rc = -1;
    }
    c->n_values = rows;
    gpufl__colcode_keys_fini(&k);
    free(values);
    free(is_null);
    free(first);
    free(count);
    free(own);
    return rc;
}

/* The state of one relative code while a line is decoded or encoded: its running base, per
 * key value when the code has a key (slot: the row the key first came in). */
typedef struct run {
    gpufl__colcode_keys_t keys;
    int64_t *last; /* rows slots, or one without a key */
    int64_t one;
} run_t;

static int run_init(run_t *s, int keyed, size_t rows) {
    memset(s, 0, sizeof *s);
    if (!keyed) {
        s->last = &s->one;
        return 0;
    }
    s->last = calloc(rows ? rows : 1, sizeof *s->last);
    return s->last ? 0 : GPUFL_ENOMEM;
}

static void run_fini(run_t *s) {
    if (s->last != &s->one) free(s->last);
    gpufl__colcode_keys_fini(&s->keys);
}

/* The slot of row r's key (0 without a key); -1 out of memory. With a second key, a key
 * column the line lacks is null on every row. */
static int64_t run_slot(run_t *s, const gpufl__colcode_t *code, const gpufl__colcode_col_t *key,
                        const gpufl__colcode_col_t *key2, size_t r) {
    if (!code->key) return 0;
    int64_t k = key ? key->values[r] : 0;
    int is_null = key ? key->is_null[r] : 1;
    if (code->key2) {
        k = gpufl__colcode_key_pair(k, is_null, key2 ? key2->values[r] : 0,
                                    key2 ? key2->is_null[r] : 1);
        is_null = 0;
    }
    int64_t first = gpufl__colcode_keys_put(&s->keys, k, is_null, (uint32_t)r);
    if (first == (int64_t)r) s->last[r] = 0;
    return first;
}

/* Row r of coded column c from its code: 0, or -1 with why. */
static int decode_cell(const gpufl__colcode_t *code, gpufl__colcode_col_t *c,
                       const gpufl__colcode_col_t *ref, gpufl__colcode_col_t *const key[2],
                       run_t *s, size_t r, char *why, size_t why_size) {
    int64_t slot = run_slot(s, code, key[0], key[1], r);
    if (slot < 0) return GPUFL_ENOMEM;
    int64_t coded = c->values[r], base = s->last[slot], out;
    int bad;
    if (code->kind == GPUFL_CODE_AFTER && ref->is_null[r]) {
        snprintf(why, why_size, "row %zu: column \"%s\" is relative to a null \"%s\"", r,
                 code->column, code->ref);
        return -1;
    }
    switch (code->kind) {
    case GPUFL_CODE_AFTER: /* the row holds (value - ref), less the key's last one if keyed */
        if (!code->key) base = 0;
        bad = __builtin_add_overflow(base, coded, &base) ||
              __builtin_add_overflow(ref->values[r], base, &out);
        s->last[slot] = base;
        break;
    case GPUFL_CODE_HIGH_KEYED: /* base: the key's high bits; one: the row before's low */
        bad = __builtin_add_overflow(gpufl__colcode_join(base, s->one), coded, &out);
        gpufl__colcode_split(out, &s->last[slot], &s->one);
        break;
    case GPUFL_CODE_FROM_PREV:
        bad = __builtin_add_overflow(base, coded, &out);
        /* the next row of the key counts from this row's ref (set by the caller) */
        break;
    default:
        bad = __builtin_add_overflow(base, coded, &out);
        s->last[slot] = out;
        break;
    }
    if (bad) {
        snprintf(why, why_size, "row %zu: column \"%s\" decodes past 64 bits", r, code->column);
        return -1;
    }
    c->values[r] = out;
    return 0;
}

int gpufl__colcode_decode(const gpufl__colcode_table_t *t, gpufl__colcode_col_t *cols, size_t n,
                          size_t rows, char *why, size_t why_size) {
    gpufl__colcode_col_t *col[GPUFL_COLCODE_MAX_CODES], *ref[GPUFL_COLCODE_MAX_CODES],
        *key[GPUFL_COLCODE_MAX_CODES][2];
    run_t run[GPUFL_COLCODE_MAX_CODES];
    size_t nc = t->n_codes < GPUFL_COLCODE_MAX_CODES ? t->n_codes : GPUFL_COLCODE_MAX_CODES;
    int rc = 0;
    for (size_t i = 0; i < nc; i++) run[i].last = NULL, memset(&run[i].keys, 0, sizeof run[i].keys);
    for (size_t i = 0; i < nc && !rc; i++) {
        const gpufl__colcode_t *code = &t->codes[i];
        col[i] = find_col(cols, n, code->column);
        ref[i] = code->ref ? find_col(cols, n, code->ref) : NULL;
        key[i][0] = code->key ? find_col(cols, n, code->key) : NULL;
        key[i][1] = code->key2 ? find_col(cols, n, code->key2) : NULL;
        if (!col[i]) continue;
        if (code->kind == GPUFL_CODE_KEYED && col[i]->n_values == rows) {
            col[i] = NULL; /* written plain (a key per row, or no key: reads the same) */
            continue;
        }
        /* a key column the line lacks is null on every row: one running base */
        if (code->ref && !ref[i]) {
            snprintf(why, why_size, "column \"%s\" needs column \"%s\"", code->column, code->ref);
            rc = -1;
        } else if (code->kind != GPUFL_CODE_KEYED && col[i]->n_values != rows) {
            snprintf(why, why_size, "column \"%s\" has %zu values, the line %zu rows", code->column,
                     col[i]->n_values, rows);
            rc = -1;
        } else if (code->kind != GPUFL_CODE_KEYED) {
            rc = run_init(&run[i], code->key != NULL, rows);
        }
    }
    /* KEYED columns first: a relative code may key on one (end_ns on grid_x) */
    for (size_t i = 0; i < nc && !rc; i++)
        if (col[i] && t->codes[i].kind == GPUFL_CODE_KEYED)
            rc = decode_keyed(col[i], ref[i], rows, why, why_size);
    /* Then row by row, each row's codes in the table's order: a code refers to columns decoded
     * before it in the same row (end_ns to start_ns) or in an earlier row. */
    for (size_t r = 0; r < rows && !rc; r++) {
        for (size_t i = 0; i < nc && !rc; i++)
            if (col[i] && run[i].last && !col[i]->is_null[r])
                rc = decode_cell(&t->codes[i], col[i], ref[i], key[i], &run[i], r, why, why_size);
        /* a FROM_PREV code's next row counts from this row's (decoded) reference */
        for (size_t i = 0; i < nc && !rc; i++) {
            if (!col[i] || !run[i].last || t->codes[i].kind != GPUFL_CODE_FROM_PREV) continue;
            int64_t slot = run_slot(&run[i], &t->codes[i], key[i][0], key[i][1], r);
            if (slot < 0)
                rc = GPUFL_ENOMEM;
            else if (!ref[i]->is_null[r])
                run[i].last[slot] = ref[i]->values[r];
        }
    }
    for (size_t i = 0; i < nc; i++)
        if (run[i].last) run_fini(&run[i]);
    return rc;
}

/* ---- parsed lines ---- */

/* A cell of a coded column: an integer, a decimal string within int64, or null. */
static int json_cell(const json_t *v, int64_t *out, unsigned char *is_null) {
    *out = 0;
    *is_null = v == NULL || json_is_null(v);
    if (*is_null) return 0;
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return 0;
    }
    if (!json_is_string(v)) return -1;
    char *end;
    const char *s = json_string_value(v);
    long long x = strtoll(s, &end, 10);
    if (!*s || *end || x == LLONG_MAX || x == LLONG_MIN) return -1;
    *out = x;
    return 0;
}

int gpufl__colcode_decode_json(json_t *rec, char *why, size_t why_size) {
    json_t *type = json_object_get(rec, "type");
    const gpufl__colcode_table_t *t =
        json_is_string(type) ? gpufl__colcode_find(json_string_value(type),
                                                   json_integer_value(json_object_get(rec, "v")))
                             : NULL;
    if (!t) return 0;
    /* Rows: the length of the arrays that are not keyed (the first column is one). */
    const char *key;
    json_t *val;
    size_t rows = 0;
    int have_rows = 0;
    json_object_foreach(rec, key, val) {
        const gpufl__colcode_t *code = gpufl__colcode_of(t, key, strlen(key));
        if (!json_is_array(val) || (code && code->kind == GPUFL_CODE_KEYED)) continue;
        if (have_rows && json_array_size(val) != rows) {
            snprintf(why, why_size, "column \"%s\" has %zu rows, the others %zu", key,
                     json_array_size(val), rows);
            return -1;
        }
        rows = json_array_size(val);
        have_rows = 1;
    }
    if (!have_rows) {
        snprintf(why, why_size, "a compact \"%s\" line has no column array", t->type);
        return -1;
    }
    if (rows > GPUFL_COLCODE_MAX_ROWS) {
        snprintf(why, why_size, "a compact \"%s\" line of %zu rows (at most %d)", t->type, rows,
                 GPUFL_COLCODE_MAX_ROWS);
        return -1;
    }
    /* Scalars become arrays; the coded columns are read into int64 arrays. */
    gpufl__colcode_col_t cols[32];
    size_t n = 0;
    int rc = 0;
    json_object_foreach(rec, key, val) {
        if (!strcmp(key, "type") || !strcmp(key, "v")) continue;
        if (!json_is_array(val) && !json_is_object(val)) {
            json_t *a = json_array();
            for (size_t r = 0; a && r < rows; r++)
                if (json_array_append(a, val)) json_decref(a), a = NULL;
            if (!a || json_object_set_new(rec, key, a)) return GPUFL_ENOMEM;
            continue; /* a scalar is a value, never coded */
        }
        if (!gpufl__colcode_of(t, key, strlen(key))) continue;
        if (!json_is_array(val)) {
            snprintf(why, why_size, "column \"%s\" is not an array", key);
            return -1;
        }
        if (n == N_OF(cols)) break;
        size_t len = json_array_size(val), room = len > rows ? len : rows;
        gpufl__colcode_col_t *c = &cols[n++];
        *c = (gpufl__colcode_col_t){key, strlen(key), malloc((room ? room : 1) * sizeof(int64_t)),
                                    malloc(room ? room : 1), len};
        if (!c->values || !c->is_null) {
            rc = GPUFL_ENOMEM;
            goto done;
        }
        for (size_t r = 0; r < len; r++)
            if (json_cell(json_array_get(val, r), &c->values[r], &c->is_null[r])) {
                snprintf(why, why_size, "row %zu: column \"%s\" is not an integer", r, key);
                rc = -1;
                goto done;
            }
    }
    /* References and keys that are not coded themselves (config, stream) are plain arrays by
     * now: read them too. */
    for (size_t i = 0; i < 3 * t->n_codes && !rc; i++) {
        const gpufl__colcode_t *code = &t->codes[i / 3];
        const char *ref = i % 3 == 2 ? code->key2 : i % 3 ? code->key : code->ref;
        json_t *a = ref ? json_object_get(rec, ref) : NULL;
        if (!a || find_col(cols, n, ref) || !find_col(cols, n, code->column)) continue;
        if (!json_is_array(a) || json_array_size(a) != rows || n == N_OF(cols)) continue;
        gpufl__colcode_col_t *c = &cols[n++];
        *c = (gpufl__colcode_col_t){ref, strlen(ref), malloc((rows ? rows : 1) * sizeof(int64_t)),
                                    malloc(rows ? rows : 1), rows};
        if (!c->values || !c->is_null) rc = GPUFL_ENOMEM;
        for (size_t r = 0; r < rows && !rc; r++)
            if (json_cell(json_array_get(a, r), &c->values[r], &c->is_null[r])) {
                snprintf(why, why_size, "row %zu: column \"%s\" is not an integer", r, ref);
                rc = -1;
            }
    }
    if (!rc) rc = gpufl__colcode_decode(t, cols, n, rows, why, why_size);
    for (size_t i = 0; i < n && !rc; i++) {
        if (!gpufl__colcode_of(t, cols[i].name, cols[i].name_len)) continue;
        json_t *a = json_array();
        for (size_t r = 0; a && r < rows; r++) {
            json_t *cell = cols[i].is_null[r] ? json_null() : json_integer(cols[i].values[r]);
            if (!cell || json_array_append_new(a, cell)) json_decref(a), a = NULL;
        }
        if (!a || json_object_set_new(rec, cols[i].name, a)) rc = GPUFL_ENOMEM;
    }
done:
    for (size_t i = 0; i < n; i++) free(cols[i].values), free(cols[i].is_null);
    return rc;
}
