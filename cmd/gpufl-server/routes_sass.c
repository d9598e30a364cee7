// SPDX-License-Identifier: Apache-2.0
/*
 * routes_sass.c - the SASS and source lines of a session's functions (docs/server-api.md): the
 * functions with PC samples or SASS metrics, and one function's instructions and source lines
 * with their samples per stall reason and their counters. Everything is read from the
 * pc_samples and sass_metrics tables of libgpufl-analysis, fed the session's stored lines by
 * report.c, so the figures are the ones `gpufl report` prints.
 */
#include "report.h"
#include "server.h"

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_analysis.h>

#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUNCTIONS_DEFAULT  100
#define FUNCTIONS_PAGE_MAX 1000
#define FUNCTIONS_MAX      65536 /* functions one listing sums; more: "truncated" */
#define INSNS_MAX          65536 /* instructions one answer lists; more: "truncated" */
#define REASONS_MAX        64    /* distinct stall reasons (CUPTI has about 25) */
#define NAME_BYTES_MAX     4096

/* Sums of SASS metric counts, as the report sums them (lib/analysis/sass_profile.h): a metric
 * a row did not count leaves that row out of the figures that need it. */
typedef struct {
    double inst, thread_base, thread_inst, requests, request_sectors, sectors, ideal_base, ideal;
} counts_t;

typedef struct {
    int64_t samples;
    int64_t by_reason[REASONS_MAX];
    counts_t c;
    int sass_rows; /* some sass_metric row was added */
} sums_t;

/* The columns read of one table: int64 values, STRING columns as string ids (0: none). */
typedef struct {
    size_t rows;
    const int64_t *function, *mangled, *cubin, *pc, *file, *line, *text;
    const int64_t *reason, *samples;                     /* pc_samples */
    const int64_t *inst, *thread_inst, *sectors, *ideal; /* sass_metrics */
} cols_t;

enum { PC = 0, SM = 1 };

typedef struct {
    gpufl_analysis_t *a;
    cols_t t[2];
    int64_t reasons[REASONS_MAX]; /* string ids of the stall reasons met, in order */
    size_t n_reasons;
    int counted[4]; /* some row counts inst, thread_inst, sectors, sectors_ideal */
} tables_t;

/* A row of either table with the keys it is grouped by. */
typedef struct {
    int64_t fn, cubin, pc, file, line;
    uint32_t row;
    uint8_t table;
} entry_t;

/* ---- reading the tables -------------------------------------------------------------------- */

static int column(gpufl_analysis_t *a, gpufl_table_t t, const char *name, const int64_t **out) {
    gpufl_column_t c;
    memset(&c, 0, sizeof c);
    c.size = sizeof c;
    int rc = gpufl_analysis_column_find(a, t, name, &c);
    if (rc) return rc;
    if (c.type == GPUFL_COLUMN_DOUBLE)
        return gpufl__store_fail(GPUFL_EIO, "sass: column %s is not of integers", name);
    *out = c.data;
    return 0;
}

static int read_table(gpufl_analysis_t *a, gpufl_table_t t, cols_t *c) {
    const char *common[] = {"function", "mangled", "cubin", "pc", "file", "line", "instruction"};
    const int64_t **into[] = {&c->function, &c->mangled, &c->cubin, &c->pc,
                              &c->file,     &c->line,    &c->text};
    int rc = gpufl_analysis_table(a, t, &c->rows, NULL);
    if (!rc && c->rows > UINT32_MAX)
        rc = gpufl__store_fail(GPUFL_ENOMEM, "sass: more than 2^32 rows in one table");
    for (size_t i = 0; !rc && c->rows && i < sizeof common / sizeof common[0]; i++)
        rc = column(a, t, common[i], into[i]);
    if (rc || !c->rows) return rc;
    if (t == GPUFL_TABLE_PC_SAMPLES) {
        rc = column(a, t, "reason", &c->reason);
        if (!rc) rc = column(a, t, "samples", &c->samples);
        return rc;
    }
    rc = column(a, t, "inst", &c->inst);
    if (!rc) rc = column(a, t, "thread_inst", &c->thread_inst);
    if (!rc) rc = column(a, t, "sectors", &c->sectors);
    if (!rc) rc = column(a, t, "sectors_ideal", &c->ideal);
    return rc;
}

static int reason_index(tables_t *tb, int64_t id, size_t *out) {
    for (size_t i = 0; i < tb->n_reasons; i++)
        if (tb->reasons[i] == id) {
            *out = i;
            return 0;
        }
    if (tb->n_reasons == REASONS_MAX)
        return gpufl__store_fail(GPUFL_ENOMEM, "sass: more than %d stall reasons", REASONS_MAX);
    tb->reasons[tb->n_reasons] = id;
    *out = tb->n_reasons++;
    return 0;
}

static int read_tables(gpufl_analysis_t *a, tables_t *tb) {
    memset(tb, 0, sizeof *tb);
    tb->a = a;
    int rc = read_table(a, GPUFL_TABLE_PC_SAMPLES, &tb->t[PC]);
    if (!rc) rc = read_table(a, GPUFL_TABLE_SASS_METRICS, &tb->t[SM]);
    const cols_t *p = &tb->t[PC], *s = &tb->t[SM];
    for (size_t r = 0; !rc && r < p->rows; r++) {
        size_t k = 0;
        rc = reason_index(tb, p->reason[r], &k);
    }
    for (size_t r = 0; r < s->rows; r++) {
        const int64_t v[4] = {s->inst[r], s->thread_inst[r], s->sectors[r], s->ideal[r]};
        for (int c = 0; c < 4; c++)
            if (v[c] >= 0) tb->counted[c] = 1;
    }
    return rc;
}

/* The rows of both tables (of the function whose shown or mangled name has string id `only`;
 * 0: of every function) into *out. */
static int entries(const tables_t *tb, int64_t only, entry_t **out, size_t *n) {
    size_t total = tb->t[PC].rows + tb->t[SM].rows, k = 0;
    entry_t *e = malloc((total ? total : 1) * sizeof *e);
    if (!e) return GPUFL_ENOMEM;
    for (uint8_t t = 0; t < 2; t++) {
        const cols_t *c = &tb->t[t];
        for (size_t r = 0; r < c->rows; r++) {
            if (only && c->function[r] != only && c->mangled[r] != only) continue;
            e[k++] = (entry_t){c->function[r], c->cubin[r], c->pc[r], c->file[r],
                               c->line[r],     (uint32_t)r, t};
        }
    }
    *out = e;
    *n = k;
    return 0;
}

/* ---- sums ------------------------------------------------------------------------------------ */

static int sums_add(tables_t *tb, sums_t *s, const entry_t *e) {
    const cols_t *c = &tb->t[e->table];
    size_t r = e->row;
    if (e->table == PC) {
        size_t k = 0;
        int rc = reason_index(tb, c->reason[r], &k);
        if (rc) return rc;
        int64_t n = c->samples[r] > 0 ? c->samples[r] : 0;
        s->samples += n;
        s->by_reason[k] += n;
        return 0;
    }
    counts_t *x = &s->c;
    int64_t inst = c->inst[r], thread = c->thread_inst[r], sectors = c->sectors[r];
    int64_t ideal = c->ideal[r];
    s->sass_rows = 1;
    if (inst >= 0) {
        x->inst += (double)inst;
        if (thread >= 0) {
            x->thread_base += (double)inst;
            x->thread_inst += (double)thread;
        }
        if (sectors > 0 && inst > 0) {
            x->requests += (double)inst;
            x->request_sectors += (double)sectors;
        }
    }
    if (sectors >= 0) {
        x->sectors += (double)sectors;
        if (ideal >= 0) {
            x->ideal_base += (double)sectors;
            x->ideal += (double)ideal;
        }
    }
    return 0;
}

static json_t *jcount(double v, int known) {
    return known && v >= 0 ? json_integer((json_int_t)v) : json_null();
}
static json_t *jreal(double v) { return v < 0 ? json_null() : json_real(v); }

/* The counters and the figures the report derives from them, with its names; null when the
 * sums hold no sass_metric row. */
static json_t *metrics_json(const tables_t *tb, const sums_t *s) {
    if (!s->sass_rows) return json_null();
    const counts_t *c = &s->c;
    const int *on = tb->counted;
    double eff = c->thread_base > 0 ? c->thread_inst / (32 * c->thread_base) : -1;
    double idle = c->thread_base > 0 ? 32 * c->thread_base - c->thread_inst : -1;
    if (c->thread_base > 0 && idle < 0) idle = 0;
    double spr = c->requests > 0 ? c->request_sectors / c->requests : -1;
    double coal = c->ideal_base > 0 ? c->ideal / c->ideal_base : -1;
    double excess = c->ideal_base <= 0 ? (c->sectors > 0 ? -1 : 0)
                                       : (c->ideal_base > c->ideal ? c->ideal_base - c->ideal : 0);
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "warp_inst", jcount(c->inst, on[0]));
    json_object_set_new(o, "thread_inst", jcount(c->thread_inst, on[1]));
    json_object_set_new(o, "thread_efficiency_pct", jreal(eff < 0 ? -1 : 100 * eff));
    json_object_set_new(o, "idle_lanes", jcount(idle, 1));
    json_object_set_new(o, "requests", jcount(c->requests, on[0] && on[2]));
    json_object_set_new(o, "sectors", jcount(c->sectors, on[2]));
    json_object_set_new(o, "sectors_ideal", jcount(c->ideal, on[3]));
    json_object_set_new(o, "sectors_per_request", jreal(spr));
    json_object_set_new(o, "ideal_sectors_per_request",
                        jreal(spr >= 0 && coal >= 0 ? spr * coal : -1));
    json_object_set_new(o, "coalescing_efficiency_pct", jreal(coal < 0 ? -1 : 100 * coal));
    json_object_set_new(o, "excess_sectors", jcount(excess, on[3]));
    return o;
}

/* samples, reasons (most samples first) and metrics into o. */
static int sums_json(const tables_t *tb, const sums_t *s, json_t *o) {
    json_t *reasons = json_object(), *m = metrics_json(tb, s);
    int rc = reasons && m ? 0 : GPUFL_ENOMEM;
    int used[REASONS_MAX] = {0};
    for (size_t n = 0; !rc && n < tb->n_reasons; n++) {
        size_t best = REASONS_MAX;
        for (size_t i = 0; i < tb->n_reasons; i++)
            if (!used[i] && s->by_reason[i] > 0 &&
                (best == REASONS_MAX || s->by_reason[i] > s->by_reason[best]))
                best = i;
        if (best == REASONS_MAX) break;
        used[best] = 1;
        const char *name = gpufl_analysis_string(tb->a, tb->reasons[best]);
        if (json_object_set_new(reasons, name ? name : "?", json_integer(s->by_reason[best])))
            rc = GPUFL_ENOMEM;
    }
    if (!rc && (json_object_set_new(o, "samples", json_integer(s->samples)) ||
                json_object_set_new(o, "reasons", reasons) || json_object_set_new(o, "metrics", m)))
        return GPUFL_ENOMEM;
    if (rc) {
        json_decref(reasons);
        json_decref(m);
    }
    return rc;
}

static json_t *jstring_of(gpufl_analysis_t *a, int64_t id) {
    const char *s = gpufl_analysis_string(a, id);
    return s ? json_string(s) : json_null();
}

/* ---- GET /api/v1/sessions/{id}/functions ------------------------------------------------------ */

typedef struct {
    int64_t name, mangled, instructions;
    sums_t sums;
} function_t;

typedef struct {
    int64_t limit, offset;
    json_t *doc;
} list_t;

static int cmp_key(const entry_t *x, const entry_t *y) {
    if (x->cubin != y->cubin) return x->cubin < y->cubin ? -1 : 1;
    return (x->pc > y->pc) - (x->pc < y->pc);
}

static int cmp_by_function(const void *a, const void *b) {
    const entry_t *x = a, *y = b;
    if (x->fn != y->fn) return x->fn < y->fn ? -1 : 1;
    return cmp_key(x, y);
}

/* Most samples first, then most warp instructions, then by name. */
static int cmp_function(const void *a, const void *b, void *arg) {
    const function_t *x = a, *y = b;
    if (x->sums.samples != y->sums.samples) return x->sums.samples > y->sums.samples ? -1 : 1;
    if (x->sums.c.inst != y->sums.c.inst) return x->sums.c.inst > y->sums.c.inst ? -1 : 1;
    const char *nx = gpufl_analysis_string(arg, x->name), *ny = gpufl_analysis_string(arg, y->name);
    return strcmp(nx ? nx : "", ny ? ny : "");
}

static int list_model(gpufl_analysis_t *a, void *arg) {
    list_t *l = arg;
    tables_t tb;
    entry_t *e = NULL;
    size_t n = 0, nf = 0;
    function_t *f = NULL;
    int truncated = 0;
    int rc = read_tables(a, &tb);
    if (!rc) rc = entries(&tb, 0, &e, &n);
    if (!rc) {
        qsort(e, n, sizeof *e, cmp_by_function);
        size_t groups = 0;
        for (size_t i = 0; i < n; i++) groups += i == 0 || e[i].fn != e[i - 1].fn;
        truncated = groups > FUNCTIONS_MAX;
        f = calloc(groups ? (truncated ? FUNCTIONS_MAX : groups) : 1, sizeof *f);
        if (!f) rc = GPUFL_ENOMEM;
    }
    for (size_t i = 0; !rc && i < n && nf < FUNCTIONS_MAX; i++) {
        if (i == 0 || e[i].fn != e[i - 1].fn)
            f[nf++] = (function_t){.name = e[i].fn, .mangled = tb.t[e[i].table].mangled[e[i].row]};
        function_t *cur = &f[nf - 1];
        cur->instructions += i == 0 || e[i].fn != e[i - 1].fn || cmp_key(&e[i], &e[i - 1]) != 0;
        rc = sums_add(&tb, &cur->sums, &e[i]);
    }
    free(e);
    if (!rc) qsort_r(f, nf, sizeof *f, cmp_function, a);
    json_t *list = rc ? NULL : json_array();
    if (!rc && !list) rc = GPUFL_ENOMEM;
    for (size_t i = (size_t)l->offset; !rc && i < nf && i < (size_t)(l->offset + l->limit); i++) {
        json_t *o =
            json_pack("{s:o,s:o,s:I}", "name", jstring_of(a, f[i].name), "mangled",
                      jstring_of(a, f[i].mangled), "instructions", (json_int_t)f[i].instructions);
        if (!o || json_array_append_new(list, o)) rc = GPUFL_ENOMEM;
        if (!rc) rc = sums_json(&tb, &f[i].sums, o);
    }
    free(f);
    if (!rc) {
        json_t *next =
            (size_t)(l->offset + l->limit) < nf ? json_integer(l->offset + l->limit) : json_null();
        l->doc = json_pack("{s:I,s:I,s:I,s:o,s:b,s:b,s:b,s:o}", "total", (json_int_t)nf, "offset",
                           (json_int_t)l->offset, "limit", (json_int_t)l->limit, "next_offset",
                           next, "truncated", truncated, "pc_sampling", tb.t[PC].rows > 0,
                           "sass_metrics", tb.t[SM].rows > 0, "functions", list);
        if (!l->doc) rc = GPUFL_ENOMEM;
    } else {
        json_decref(list);
    }
    return rc;
}

void gpufl__route_sass_functions(gpufl__request_t *req, gpufl__reply_t *rep) {
    list_t l = {0};
    if (gpufl__query_int_arg(req, rep, "limit", 1, FUNCTIONS_PAGE_MAX, FUNCTIONS_DEFAULT,
                             &l.limit) ||
        gpufl__query_int_arg(req, rep, "offset", 0, FUNCTIONS_MAX, 0, &l.offset))
        return;
    int rc = gpufl__report_with_model(req->server, req->who.workspace_id, req->params[0],
                                      list_model, &l);
    if (rc) {
        json_decref(l.doc);
        gpufl__query_store_error(rep, rc);
        return;
    }
    rep->status = 200;
    rep->json = l.doc;
}

/* ---- GET /api/v1/sessions/{id}/functions/sass?name=F ------------------------------------------ */

typedef struct {
    const char *name;
    json_t *doc; /* NULL with rc 0: no such function */
} one_t;

static int cmp_by_pc(const void *a, const void *b) { return cmp_key(a, b); }

/* By source line: lines with line info by file and line, the rest last; then by instruction. */
static int cmp_by_line(const void *a, const void *b, void *arg) {
    const entry_t *x = a, *y = b;
    int kx = x->file && x->line >= 0, ky = y->file && y->line >= 0;
    if (kx != ky) return kx ? -1 : 1;
    if (kx && x->file != y->file) {
        int c = strcmp(gpufl_analysis_string(arg, x->file), gpufl_analysis_string(arg, y->file));
        if (c) return c;
    }
    if (kx && x->line != y->line) return x->line < y->line ? -1 : 1;
    return cmp_key(x, y);
}

static int same_line(const entry_t *x, const entry_t *y) {
    int kx = x->file && x->line >= 0, ky = y->file && y->line >= 0;
    return kx == ky && (!kx || (x->file == y->file && x->line == y->line));
}

/* The string id of name (one id per distinct string), 0 when the model has none. */
static int64_t string_id(gpufl_analysis_t *a, const char *name) {
    int64_t n = gpufl_analysis_string_count(a);
    for (int64_t id = 1; id < n; id++) {
        const char *s = gpufl_analysis_string(a, id);
        if (s && !strcmp(s, name)) return id;
    }
    return 0;
}

/* Instructions in pc order (at most INSNS_MAX) and the function's sums. */
static int insns_json(tables_t *tb, entry_t *e, size_t n, json_t *list, sums_t *total,
                      int *truncated) {
    qsort(e, n, sizeof *e, cmp_by_pc);
    size_t listed = 0;
    for (size_t i = 0, j; i < n; i = j) {
        sums_t s = {0};
        int rc = 0;
        for (j = i; !rc && j < n && cmp_key(&e[j], &e[i]) == 0; j++) {
            rc = sums_add(tb, &s, &e[j]);
            if (!rc) rc = sums_add(tb, total, &e[j]);
        }
        if (rc) return rc;
        if (listed == INSNS_MAX) {
            *truncated = 1;
            continue;
        }
        const cols_t *c = &tb->t[e[i].table];
        int known = e[i].file && e[i].line >= 0;
        json_t *o = json_pack("{s:o,s:I,s:o,s:o,s:o}", "cubin", jstring_of(tb->a, e[i].cubin), "pc",
                              (json_int_t)e[i].pc, "sass", jstring_of(tb->a, c->text[e[i].row]),
                              "file", known ? jstring_of(tb->a, e[i].file) : json_null(), "line",
                              known ? json_integer(e[i].line) : json_null());
        if (!o || json_array_append_new(list, o)) return GPUFL_ENOMEM;
        listed++;
        rc = sums_json(tb, &s, o);
        if (rc) return rc;
    }
    return 0;
}

/* Source lines: each with its sums and the pcs of its instructions. */
static int lines_json(tables_t *tb, entry_t *e, size_t n, json_t *list) {
    qsort_r(e, n, sizeof *e, cmp_by_line, tb->a);
    for (size_t i = 0, j; i < n; i = j) {
        sums_t s = {0};
        json_t *pcs = json_array();
        int known = e[i].file && e[i].line >= 0, rc = pcs ? 0 : GPUFL_ENOMEM;
        for (j = i; !rc && j < n && same_line(&e[j], &e[i]); j++) {
            rc = sums_add(tb, &s, &e[j]);
            if (!rc && (j == i || cmp_key(&e[j], &e[j - 1]) != 0) &&
                json_array_size(pcs) < INSNS_MAX)
                rc = json_array_append_new(pcs, json_integer(e[j].pc)) ? GPUFL_ENOMEM : 0;
        }
        json_t *o = rc ? NULL
                       : json_pack("{s:o,s:o,s:o}", "file",
                                   known ? jstring_of(tb->a, e[i].file) : json_null(), "line",
                                   known ? json_integer(e[i].line) : json_null(), "pcs", pcs);
        if (!o) {
            json_decref(pcs);
            return rc ? rc : GPUFL_ENOMEM;
        }
        if (json_array_append_new(list, o)) return GPUFL_ENOMEM;
        rc = sums_json(tb, &s, o);
        if (rc) return rc;
    }
    return 0;
}

static int one_model(gpufl_analysis_t *a, void *arg) {
    one_t *q = arg;
    tables_t tb;
    entry_t *e = NULL;
    size_t n = 0;
    int rc = read_tables(a, &tb);
    int64_t id = rc ? 0 : string_id(a, q->name);
    if (!rc && id) rc = entries(&tb, id, &e, &n);
    if (rc || !n) {
        free(e);
        return rc; /* no rows: q->doc stays NULL, no such function */
    }
    const entry_t first = e[0];
    sums_t total = {0};
    int truncated = 0;
    json_t *insns = json_array(), *lines = json_array();
    rc = insns && lines ? 0 : GPUFL_ENOMEM;
    if (!rc) rc = insns_json(&tb, e, n, insns, &total, &truncated);
    if (!rc) rc = lines_json(&tb, e, n, lines);
    free(e);
    if (!rc) {
        q->doc =
            json_pack("{s:o,s:o,s:b,s:b,s:b}", "name", jstring_of(a, first.fn), "mangled",
                      jstring_of(a, tb.t[first.table].mangled[first.row]), "truncated", truncated,
                      "pc_sampling", tb.t[PC].rows > 0, "sass_metrics", tb.t[SM].rows > 0);
        if (!q->doc) rc = GPUFL_ENOMEM;
    }
    if (!rc) rc = sums_json(&tb, &total, q->doc);
    if (!rc &&
        (json_object_set(q->doc, "instructions", insns) || json_object_set(q->doc, "lines", lines)))
        rc = GPUFL_ENOMEM;
    json_decref(insns);
    json_decref(lines);
    return rc;
}

void gpufl__route_sass_function(gpufl__request_t *req, gpufl__reply_t *rep) {
    one_t q = {MHD_lookup_connection_value(req->connection, MHD_GET_ARGUMENT_KIND, "name"), NULL};
    if (!q.name || !*q.name || strlen(q.name) > NAME_BYTES_MAX) {
        gpufl__query_bad_param(rep, "name",
                               "name: expected a function's name (demangled or mangled), 1.."
                               "4096 bytes");
        return;
    }
    int rc =
        gpufl__report_with_model(req->server, req->who.workspace_id, req->params[0], one_model, &q);
    if (rc) {
        json_decref(q.doc);
        gpufl__query_store_error(rep, rc);
    } else if (!q.doc) {
        gpufl__reply_error(rep, 404,
                           "no function of that name has PC samples or SASS metrics in"
                           " this session");
        json_object_set_new(rep->json, "parameter", json_string("name"));
    } else {
        rep->status = 200;
        rep->json = q.doc;
    }
}
