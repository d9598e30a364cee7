// SPDX-License-Identifier: Apache-2.0
/*
 * model_pc.c - loads the PC sampling records (pc_sampling, pc_sample,
 * pc_window, pc_sampling_stats) and the sass records into the model
 * (docs/log-format.md, "PC sampling" and "sass").
 *
 * pc_sample rows are the bulk of such a session (millions), so they are
 * kept as small fixed rows of dict ids; the stall reasons they name become
 * one small table after loading, sorted by short name. A sass record is kept
 * as its instructions (pc, file, line, text) sorted by pc, the records
 * sorted by (cubin, function) for the lookups of the report and insights.
 */
#include "analysis/model_internal.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

#define MAX_PC_CONTEXTS ((size_t)65536)
#define MAX_SASS        ((size_t)1 << 20)
#define MAX_SASS_FILES  4096 /* files one sass record may name */

static int oom(const char *what) {
    return gpufl__set_error(GPUFL_ENOMEM, "out of memory for %s", what);
}

/* Helpers shared with model_sass_metrics.c (model_internal.h). */

int64_t gpufl__model_count(const json_t *v) {
    int64_t x;
    return gpufl__reader_int(v, &x) == 0 && x >= 0 ? x : GPUFL_MODEL_UNKNOWN;
}

double gpufl__model_ms(const json_t *v) {
    double ms;
    return gpufl__reader_num(v, &ms) == 0 && ms >= 0 ? ms : GPUFL_MODEL_UNKNOWN;
}

int gpufl__model_keep_last(json_t **slot, json_t *rec) {
    json_decref(*slot);
    *slot = json_incref(rec);
    return 0;
}

int gpufl__model_context_head(gpufl__model_t *m, const gpufl__reader_pos_t *pos, const char *type,
                              json_t *rec, const char *names, int64_t *context, int64_t *ts) {
    if (gpufl__reader_int(json_object_get(rec, "context"), context) != 0 || *context < 0)
        return gpufl__model_bad_line(m, pos, type, "no context id");
    if (gpufl__reader_int(json_object_get(rec, "ts_ns"), ts) != 0 || *ts < 0)
        return gpufl__model_bad_line(m, pos, type, "no integer ts_ns");
    json_t *a = json_object_get(rec, names);
    if (a && !json_is_array(a) && !json_is_null(a))
        return gpufl__model_bad_line(m, pos, type, "%s is not an array", names);
    gpufl__model_note_ts(m, *ts);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* pc_sampling (pc_sampling_stats is kept whole: gpufl__model_keep_last)   */
/* ---------------------------------------------------------------------- */

static int on_pc_sampling(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    int64_t context, ts;
    int rc = gpufl__model_context_head(m, pos, "pc_sampling", rec, "reasons", &context, &ts);
    if (rc) return rc;
    json_t *reasons = json_object_get(rec, "reasons");
    if (gpufl__model_pc_context(m, context)) {
        gpufl__model_warn(m, pos->name, pos->line,
                          "pc_sampling: context %lld started again (the first record kept)",
                          (long long)context);
        return 0;
    }
    rc = gpufl__model_reserve((void **)&m->pc_contexts, &m->pc_contexts_alloc, m->n_pc_contexts,
                              sizeof *m->pc_contexts, MAX_PC_CONTEXTS);
    if (rc) return rc < 0 ? rc : 0;
    gpufl__model_pc_context_t *c = &m->pc_contexts[m->n_pc_contexts];
    memset(c, 0, sizeof *c);
    c->ts_ns = ts;
    c->context = context;
    c->device = gpufl__model_count(json_object_get(rec, "device"));
    c->period = gpufl__model_count(json_object_get(rec, "period"));
    c->worker_sleep_ms = gpufl__model_count(json_object_get(rec, "worker_sleep_ms"));
    c->scratch_bytes = gpufl__model_count(json_object_get(rec, "scratch_bytes"));
    c->hardware_buffer_bytes = gpufl__model_count(json_object_get(rec, "hardware_buffer_bytes"));
    c->enable_ms = gpufl__model_ms(json_object_get(rec, "enable_ms"));
    c->late = json_is_true(json_object_get(rec, "late"));
    c->n_reasons = json_is_array(reasons) ? json_array_size(reasons) : 0;
    c->mode = gpufl__model_member_str(m, rec, "mode");
    c->error = gpufl__model_member_str(m, rec, "error");
    if (!c->mode || !c->error) return oom("pc_sampling");
    m->n_pc_contexts++;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* pc_sample, pc_window                                                     */
/* ---------------------------------------------------------------------- */

enum pc_col {
    P_T0,
    P_T1,
    P_CONTEXT,
    P_FUNCTION,
    P_PC,
    P_REASON,
    P_SAMPLES,
    P_CUBIN,
    P_DEMANGLED,
    P_NCOL
};

static void fill_pc_sample(void *row, const int64_t *v) {
    gpufl__model_pc_sample_t *s = row;
    s->t0_ns = v[P_T0];
    s->t1_ns = v[P_T1];
    s->context = (uint32_t)v[P_CONTEXT];
    s->function = (uint32_t)v[P_FUNCTION];
    s->pc = (uint32_t)v[P_PC];
    s->reason = (uint32_t)v[P_REASON]; /* a dict id until gpufl__model_finish_pc */
    s->samples = (uint32_t)v[P_SAMPLES];
    s->cubin = v[P_CUBIN] > 0 ? (uint32_t)v[P_CUBIN] : 0;
    s->demangled = v[P_DEMANGLED] > 0 ? (uint32_t)v[P_DEMANGLED] : s->function;
}

static int on_pc_sample(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec,
                        const gpufl__reader_batch_t *view) {
    static const char *const names[P_NCOL] = {"t0_ns",  "t1_ns",   "context", "function", "pc",
                                              "reason", "samples", "cubin",   "demangled"};
    static const int64_t max[P_NCOL] = {
        [P_CONTEXT] = UINT32_MAX,  [P_FUNCTION] = UINT32_MAX, [P_PC] = UINT32_MAX,
        [P_REASON] = UINT32_MAX,   [P_SAMPLES] = UINT32_MAX,  [P_CUBIN] = UINT32_MAX,
        [P_DEMANGLED] = UINT32_MAX};
    static const trace_cols_t t = {"pc_sample", names, max, P_NCOL, P_CUBIN, 0};
    size_t start = m->n_pc_samples;
    uint64_t over = m->pc_samples_over_cap;
    int rc = gpufl__model_load_rows(m, pos, rec, view, &t, ROWS(m, pc_samples, max_pc_samples),
                                    fill_pc_sample);
    if (rc) return rc;
    uint64_t total = 0;
    for (size_t i = start; i < m->n_pc_samples; i++) {
        const gpufl__model_pc_sample_t *s = &m->pc_samples[i];
        if (s->function == 0 || s->reason == 0) {
            m->n_pc_samples = start;
            m->pc_samples_over_cap = over;
            return gpufl__model_bad_line(m, pos, "pc_sample", "row %zu: %s is 0 (no dict id)",
                                         i - start, s->function == 0 ? "function" : "reason");
        }
        total += s->samples;
    }
    m->pc_samples_total += total;
    return 0;
}

enum win_col {
    W_T0,
    W_T1,
    W_CONTEXT,
    W_DRAINS,
    W_SAMPLES,
    W_RECORDED,
    W_NON_USER,
    W_DROPPED,
    W_BUFFER_FULL,
    W_PCS_LEFT,
    W_LOST,
    W_UNPLACED,
    W_NCOL
};

static void fill_pc_window(void *row, const int64_t *v) {
    gpufl__model_pc_window_t *w = row;
    w->t0_ns = v[W_T0];
    w->t1_ns = v[W_T1];
    w->context = v[W_CONTEXT];
    w->drains = v[W_DRAINS];
    w->samples = v[W_SAMPLES];
    w->recorded = v[W_RECORDED];
    w->non_user = v[W_NON_USER];
    w->dropped = v[W_DROPPED];
    w->buffer_full = v[W_BUFFER_FULL];
    w->pc_sampling_left = v[W_PCS_LEFT];
    w->lost = v[W_LOST];
    w->unplaced = v[W_UNPLACED];
}

static int on_pc_window(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec,
                        const gpufl__reader_batch_t *view) {
    static const char *const names[W_NCOL] = {"t0_ns",       "t1_ns",    "context",  "drains",
                                              "samples",     "recorded", "non_user", "dropped",
                                              "buffer_full", "pcs_left", "lost",     "unplaced"};
    static const int64_t max[W_NCOL] = {0};
    static const trace_cols_t t = {"pc_window", names, max, W_NCOL, W_DRAINS, 0};
    return gpufl__model_load_rows(m, pos, rec, view, &t, ROWS(m, pc_windows, max_pc_windows),
                                  fill_pc_window);
}

/* ---------------------------------------------------------------------- */
/* sass                                                                     */
/* ---------------------------------------------------------------------- */

/* Checks the parallel arrays of a sass record. Returns 0 or -1 with why. */
static int sass_arrays(const json_t *rec, json_t **pc, json_t **text, json_t **file, json_t **line,
                       json_t **files, char *why, size_t size) {
    *pc = json_object_get(rec, "pc");
    *text = json_object_get(rec, "text");
    *file = json_object_get(rec, "file");
    *line = json_object_get(rec, "line");
    *files = json_object_get(rec, "files");
    if (!json_is_array(*pc) || !json_is_array(*text)) {
        snprintf(why, size, "pc and text must be arrays");
        return -1;
    }
    size_t n = json_array_size(*pc);
    if (json_array_size(*text) != n || (*file && json_array_size(*file) != n) ||
        (*line && json_array_size(*line) != n) || (*file && !json_is_array(*file)) ||
        (*line && !json_is_array(*line))) {
        snprintf(why, size, "pc, text, file and line are not arrays of one length");
        return -1;
    }
    if (*files && !json_is_array(*files)) {
        snprintf(why, size, "files is not an array");
        return -1;
    }
    if (json_array_size(*files) > MAX_SASS_FILES) {
        snprintf(why, size, "more than %d files", MAX_SASS_FILES);
        return -1;
    }
    return 0;
}

/* Reads instruction i of a sass record into *out. Returns 0 or -1. */
static int sass_insn(gpufl__model_t *m, json_t *pc, json_t *text, json_t *file, json_t *line,
                     const char **files, size_t n_files, size_t i, gpufl__model_sass_insn_t *out) {
    int64_t v;
    json_t *t = json_array_get(text, i);
    if (gpufl__reader_int(json_array_get(pc, i), &v) != 0 || v < 0 || v > UINT32_MAX ||
        !json_is_string(t))
        return -1;
    out->pc = (uint32_t)v;
    out->text = gpufl__model_pool_str(m, json_string_value(t), json_string_length(t));
    out->file = "";
    out->line = 0;
    int64_t fi, ln;
    int frc = gpufl__reader_int(json_array_get(file, i), &fi);
    int lrc = gpufl__reader_int(json_array_get(line, i), &ln);
    if (frc < 0 || lrc < 0) return -1;
    if (frc == 0 && lrc == 0) {
        if (fi < 0 || (size_t)fi >= n_files || ln < 0 || ln > INT32_MAX) return -1;
        out->file = files[fi];
        out->line = (int32_t)ln;
    }
    return 0;
}

static int on_sass(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    int64_t cubin, function;
    if (gpufl__reader_int(json_object_get(rec, "cubin"), &cubin) != 0 || cubin <= 0 ||
        gpufl__reader_int(json_object_get(rec, "function"), &function) != 0 || function <= 0)
        return gpufl__model_bad_line(m, pos, "sass", "cubin and function must be dict ids");
    const char *error = gpufl__model_member_str(m, rec, "error");
    const char *arch = gpufl__model_member_str(m, rec, "arch");
    if (!error || !arch) return oom("sass");
    json_t *pc = NULL, *text = NULL, *file = NULL, *line = NULL, *files = NULL;
    char why[160];
    if (!*error && sass_arrays(rec, &pc, &text, &file, &line, &files, why, sizeof why))
        return gpufl__model_bad_line(m, pos, "sass", "%s", why);
    size_t n = *error ? 0 : json_array_size(pc);
    const char *file_names[MAX_SASS_FILES];
    size_t n_files = json_array_size(files);
    for (size_t i = 0; i < n_files; i++) {
        json_t *f = json_array_get(files, i);
        if (!json_is_string(f))
            return gpufl__model_bad_line(m, pos, "sass", "files[%zu] is not a string", i);
        file_names[i] = gpufl__model_pool_str(m, json_string_value(f), json_string_length(f));
        if (!file_names[i]) return oom("sass");
    }
    int rc = gpufl__model_reserve((void **)&m->sass, &m->sass_alloc, m->n_sass, sizeof *m->sass,
                                  MAX_SASS);
    if (rc) return rc < 0 ? rc : 0;
    if (m->n_sass_insns + n > m->limits.max_sass_insns) {
        m->sass_insns_over_cap += n;
        return 0;
    }
    size_t first = m->n_sass_insns;
    for (size_t i = 0; i < n; i++) {
        rc = gpufl__model_reserve((void **)&m->sass_insns, &m->sass_insns_alloc, m->n_sass_insns,
                                  sizeof *m->sass_insns, m->limits.max_sass_insns);
        if (rc) return rc < 0 ? rc : oom("sass");
        gpufl__model_sass_insn_t *in = &m->sass_insns[m->n_sass_insns];
        if (sass_insn(m, pc, text, file, line, file_names, n_files, i, in)) {
            m->n_sass_insns = first;
            return gpufl__model_bad_line(m, pos, "sass", "instruction %zu is malformed", i);
        }
        if (!in->text) return oom("sass");
        m->n_sass_insns++;
    }
    m->sass[m->n_sass++] = (gpufl__model_sass_t){cubin, function, arch, error, first, n};
    return 0;
}

/* ---------------------------------------------------------------------- */
/* After reading                                                            */
/* ---------------------------------------------------------------------- */

const char *gpufl__model_pc_reason_short(const char *name) {
    static const char *const prefixes[] = {"smsp__pcsamp_warps_issue_stalled_", "smsp__pcsamp_"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t len = strlen(prefixes[i]);
        if (strncmp(name, prefixes[i], len) == 0 && name[len]) return name + len;
    }
    return name;
}

static int cmp_reason(const void *a, const void *b) {
    const gpufl__model_pc_reason_t *x = a, *y = b;
    int c = strcmp(x->short_name, y->short_name);
    return c ? c : strcmp(x->name, y->name);
}

/* The distinct reasons of the rows, sorted by short name; rows then hold
 * an index into them instead of the dict id. */
static int build_reasons(gpufl__model_t *m) {
    gpufl__idmap_t ids;
    gpufl__idmap_init(&ids);
    int rc = 0;
    for (size_t i = 0; i < m->n_pc_samples && !rc; i++) {
        size_t idx;
        uint32_t id = m->pc_samples[i].reason;
        if (gpufl__idmap_get(&ids, id, &idx)) continue;
        rc = gpufl__model_reserve((void **)&m->pc_reasons, &m->pc_reasons_alloc, m->n_pc_reasons,
                                  sizeof *m->pc_reasons, UINT32_MAX);
        if (rc || gpufl__idmap_put(&ids, id, m->n_pc_reasons, NULL) < 0) {
            rc = oom("stall reasons");
            break;
        }
        gpufl__model_pc_reason_t *r = &m->pc_reasons[m->n_pc_reasons++];
        r->id = id;
        r->name = gpufl__model_resolve(m, id);
        r->short_name = gpufl__model_pc_reason_short(r->name);
        r->issued = strcmp(r->short_name, "selected") == 0;
    }
    size_t *to = NULL;
    if (!rc && m->n_pc_reasons) {
        qsort(m->pc_reasons, m->n_pc_reasons, sizeof *m->pc_reasons, cmp_reason);
        to = malloc(m->n_pc_reasons * sizeof *to);
        if (!to) rc = oom("stall reasons");
    }
    for (size_t i = 0; to && i < m->n_pc_reasons; i++) {
        size_t idx;
        gpufl__idmap_get(&ids, (uint64_t)m->pc_reasons[i].id, &idx);
        to[idx] = i;
    }
    for (size_t i = 0; to && i < m->n_pc_samples; i++) {
        size_t idx;
        gpufl__idmap_get(&ids, m->pc_samples[i].reason, &idx);
        m->pc_samples[i].reason = (uint32_t)to[idx];
    }
    free(to);
    gpufl__idmap_fini(&ids);
    return rc;
}

static int cmp_sass(const void *a, const void *b) {
    const gpufl__model_sass_t *x = a, *y = b;
    if (x->cubin != y->cubin) return x->cubin < y->cubin ? -1 : 1;
    if (x->function != y->function) return x->function < y->function ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first; /* the first record first */
}

static int cmp_insn(const void *a, const void *b) {
    uint32_t x = ((const gpufl__model_sass_insn_t *)a)->pc;
    uint32_t y = ((const gpufl__model_sass_insn_t *)b)->pc;
    return x < y ? -1 : x > y;
}

int gpufl__model_finish_pc(gpufl__model_t *m) {
    int rc = build_reasons(m);
    if (rc) return rc;
    for (size_t i = 0; i < m->n_sass; i++) /* records with an error have no instructions */
        if (m->sass[i].n > 1)
            qsort(m->sass_insns + m->sass[i].first, m->sass[i].n, sizeof *m->sass_insns, cmp_insn);
    if (m->n_sass > 1) qsort(m->sass, m->n_sass, sizeof *m->sass, cmp_sass);
    size_t kept = 0, repeated = 0;
    for (size_t i = 0; i < m->n_sass; i++) {
        if (kept && m->sass[kept - 1].cubin == m->sass[i].cubin &&
            m->sass[kept - 1].function == m->sass[i].function) {
            repeated++;
            continue;
        }
        m->sass[kept++] = m->sass[i];
    }
    m->n_sass = kept;
    if (repeated)
        gpufl__model_warn(m, "", 0, "%zu sass records repeat a (cubin, function) (the first kept)",
                          repeated);
    return 0;
}

void gpufl__model_free_pc(gpufl__model_t *m) {
    free(m->pc_contexts);
    free(m->pc_samples);
    free(m->pc_windows);
    free(m->pc_reasons);
    free(m->sass);
    free(m->sass_insns);
    free(m->pc_scopes);
    json_decref(m->pc_stats);
}

/* ---------------------------------------------------------------------- */
/* Lookups                                                                  */
/* ---------------------------------------------------------------------- */

const gpufl__model_pc_context_t *gpufl__model_pc_context(const gpufl__model_t *m, int64_t context) {
    for (size_t i = 0; i < m->n_pc_contexts; i++)
        if (m->pc_contexts[i].context == context) return &m->pc_contexts[i];
    return NULL;
}

const gpufl__model_sass_t *gpufl__model_sass_find(const gpufl__model_t *m, int64_t cubin,
                                                  int64_t function) {
    size_t lo = 0, hi = m->n_sass;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const gpufl__model_sass_t *s = &m->sass[mid];
        if (s->cubin < cubin || (s->cubin == cubin && s->function < function))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < m->n_sass && m->sass[lo].cubin == cubin && m->sass[lo].function == function)
        return &m->sass[lo];
    for (size_t i = 0; i < m->n_sass; i++)
        if (m->sass[i].function == function) return &m->sass[i];
    return NULL;
}

const gpufl__model_sass_insn_t *gpufl__model_sass_insn(const gpufl__model_t *m,
                                                       const gpufl__model_sass_t *s, uint32_t pc) {
    if (!s || !s->n) return NULL;
    const gpufl__model_sass_insn_t *v = m->sass_insns + s->first;
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].pc < pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n && v[lo].pc == pc ? &v[lo] : NULL;
}

static int on_pc_sampling_stats(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    (void)pos;
    return gpufl__model_keep_last(&m->pc_stats, rec);
}

const gpufl__model_handler_t gpufl__model_pc_handlers[] = {
    {"pc_sampling", on_pc_sampling, NULL},
    {"pc_sample", NULL, on_pc_sample},
    {"pc_window", NULL, on_pc_window},
    {"pc_sampling_stats", on_pc_sampling_stats, NULL},
    {"sass", on_sass, NULL},
    {NULL, NULL, NULL},
};
