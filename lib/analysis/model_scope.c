// SPDX-License-Identifier: Apache-2.0
/*
 * model_scope.c - the scope domain of the model: scope_begin and scope_end
 * rows, joined after everything is read (so their order across lines,
 * threads, files and segments does not matter), the instances grouped into
 * scope paths, and every kernel, copy and memset attributed to the path of
 * its scope instance.
 */
#include "analysis/model_internal.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

/* Reads cell `row` of an integer column; absent columns give def. */
static int cell_int(json_t *col, size_t row, int64_t def, int64_t *out) {
    if (!col) {
        *out = def;
        return 0;
    }
    return gpufl__reader_int(json_array_get(col, row), out) == 0 ? 0 : -1;
}

static int on_scope_begin(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    enum {
        TS,
        TID,
        ID,
        PARENT,
        DEPTH,
        NAME,
        TAG,
        PATH,
        REPEAT,
        WARMUP,
        SOURCE,
        DOMAIN,
        CATEGORY,
        PAYLOAD,
        NCOL
    };
    /* From repeat on, a log may lack them (older writers): 0 then. */
    static const char *const names[NCOL] = {"ts_ns",  "tid",    "id",       "parent", "depth",
                                            "name",   "tag",    "path",     "repeat", "warmup",
                                            "source", "domain", "category", "payload"};
    json_t *cols[NCOL];
    size_t rows;
    char why[160];
    if (gpufl__reader_columns(rec, names, cols, NCOL, REPEAT, &rows, why, sizeof why))
        return gpufl__model_bad_line(m, pos, "scope_begin", "%s", why);
    size_t start = m->n_scopes;
    uint64_t over = 0;
    int64_t lo = INT64_MAX, hi = -1;
    for (size_t r = 0; r < rows; r++) {
        int64_t v[NCOL];
        for (int c = 0; c < NCOL; c++) {
            if (cell_int(cols[c], r, 0, &v[c]) != 0) {
                m->n_scopes = start;
                return gpufl__model_bad_line(m, pos, "scope_begin", "row %zu: %s is not an integer",
                                             r, names[c]);
            }
        }
        if (v[ID] <= 0) {
            m->n_scopes = start;
            return gpufl__model_bad_line(m, pos, "scope_begin", "row %zu: id %lld is not positive",
                                         r, (long long)v[ID]);
        }
        if (v[TS] < lo) lo = v[TS];
        if (v[TS] > hi) hi = v[TS];
        int rc = gpufl__model_reserve((void **)&m->scopes, &m->scopes_alloc, m->n_scopes,
                                      sizeof *m->scopes, m->limits.max_scopes);
        if (rc < 0) return rc;
        if (rc) {
            over++;
            continue;
        }
        gpufl__model_scope_t *s = &m->scopes[m->n_scopes++];
        s->id = v[ID];
        s->parent = v[PARENT];
        s->tid = v[TID];
        s->begin_ns = v[TS];
        s->end_ns = GPUFL_MODEL_UNKNOWN;
        s->name_id = v[NAME];
        s->tag_id = v[TAG];
        s->path_id = v[PATH];
        s->name = s->tag = s->path = NULL;
        s->depth = (int32_t)v[DEPTH];
        s->repeat = (int32_t)v[REPEAT];
        s->warmup = (int32_t)v[WARMUP];
        s->source = v[SOURCE] >= 0 && v[SOURCE] <= 2 ? (uint8_t)v[SOURCE] : 0;
        s->domain_id = v[DOMAIN];
        s->category_id = v[CATEGORY];
        s->payload_id = v[PAYLOAD];
        s->domain = s->category = s->payload = "";
        s->open = 1;
        s->implicit = 0;
        s->lost = 0;
    }
    m->scopes_over_cap += over;
    if (rows) gpufl__model_note_ts(m, lo), gpufl__model_note_ts(m, hi);
    return 0;
}

static int on_scope_end(gpufl__model_t *m, const gpufl__reader_pos_t *pos, json_t *rec) {
    enum { TS, TID, ID, IMPLICIT, NCOL };
    static const char *const names[NCOL] = {"ts_ns", "tid", "id", "implicit"};
    load_state_t *st = m->load_state;
    json_t *cols[NCOL];
    size_t rows;
    char why[160];
    if (gpufl__reader_columns(rec, names, cols, NCOL, IMPLICIT, &rows, why, sizeof why))
        return gpufl__model_bad_line(m, pos, "scope_end", "%s", why);
    size_t start = st->n_ends;
    uint64_t over = 0;
    int64_t lo = INT64_MAX, hi = -1;
    for (size_t r = 0; r < rows; r++) {
        int64_t v[NCOL];
        for (int c = 0; c < NCOL; c++) {
            if (cell_int(cols[c], r, 0, &v[c]) != 0) {
                st->n_ends = start;
                return gpufl__model_bad_line(m, pos, "scope_end", "row %zu: %s is not an integer",
                                             r, names[c]);
            }
        }
        if (v[TS] < lo) lo = v[TS];
        if (v[TS] > hi) hi = v[TS];
        int rc = gpufl__model_reserve((void **)&st->ends, &st->ends_alloc, st->n_ends,
                                      sizeof *st->ends, m->limits.max_scopes);
        if (rc < 0) return rc;
        if (rc) {
            over++;
            continue;
        }
        scope_end_row_t *e = &st->ends[st->n_ends++];
        e->ts_ns = v[TS];
        e->tid = v[TID];
        e->id = v[ID];
        e->implicit = v[IMPLICIT];
    }
    m->scope_ends_over_cap += over;
    if (rows) gpufl__model_note_ts(m, lo), gpufl__model_note_ts(m, hi);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* After reading                                                          */
/* ---------------------------------------------------------------------- */

static int join_scopes(gpufl__model_t *m) {
    load_state_t *st = m->load_state;
    for (size_t i = 0; i < m->n_scopes; i++) {
        int rc = gpufl__idmap_put(&m->scope_index, (uint64_t)m->scopes[i].id, i, NULL);
        if (rc < 0) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the scope index");
        if (rc == 1) st->scope_ids_duplicate++;
    }
    for (size_t i = 0; i < st->n_ends; i++) {
        const scope_end_row_t *e = &st->ends[i];
        size_t idx;
        if (e->id <= 0 || !gpufl__idmap_get(&m->scope_index, (uint64_t)e->id, &idx)) {
            m->scope_ends_unmatched++;
            int rc = gpufl__model_add_lost_scope(m, e);
            if (rc) return rc;
            continue;
        }
        gpufl__model_scope_t *s = &m->scopes[idx];
        if (!s->open) {
            m->scope_ends_duplicate++;
            continue;
        }
        s->open = 0;
        s->end_ns = e->ts_ns;
        s->implicit = e->implicit != 0;
        if (s->end_ns < s->begin_ns) st->scopes_backwards++;
    }
    m->n_open_scopes = 0;
    for (size_t i = 0; i < m->n_scopes; i++) {
        gpufl__model_scope_t *s = &m->scopes[i];
        s->name = gpufl__model_resolve(m, s->name_id);
        s->tag = gpufl__model_resolve(m, s->tag_id);
        s->path = gpufl__model_resolve(m, s->path_id);
        if (s->domain_id > 0) s->domain = gpufl__model_resolve(m, s->domain_id);
        if (s->category_id > 0) s->category = gpufl__model_resolve(m, s->category_id);
        if (s->payload_id > 0) s->payload = gpufl__model_resolve(m, s->payload_id);
        if (s->open) m->n_open_scopes++;
    }
    return gpufl__model_name_lost_scopes(m);
}

/* ---------------------------------------------------------------------- */
/* Scope paths                                                              */
/* ---------------------------------------------------------------------- */

static int cmp_scope_path_tag(const void *a, const void *b) {
    const gpufl__model_scope_t *x = *(const gpufl__model_scope_t *const *)a;
    const gpufl__model_scope_t *y = *(const gpufl__model_scope_t *const *)b;
    int c = strcmp(x->path, y->path);
    if (c) return c;
    c = strcmp(x->tag, y->tag);
    if (c) return c;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The index of the first len bytes of path in the sorted paths, or -1. */
long gpufl__model_path_find(const gpufl__model_t *m, const char *path, size_t len) {
    size_t lo = 0, hi = m->n_scope_paths;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strncmp(m->scope_paths[mid].path, path, len);
        if (c == 0 && m->scope_paths[mid].path[len] != '\0') c = 1;
        if (c == 0) return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The enclosing path of path i: the path of a parent instance, else the
 * longest existing '/' prefix. */
static long path_parent(const gpufl__model_t *m, size_t i, int64_t parent_scope) {
    const gpufl__model_scope_t *p = gpufl__model_scope_find(m, parent_scope);
    if (p) {
        long k = gpufl__model_path_find(m, p->path, strlen(p->path));
        if (k >= 0 && (size_t)k != i) return k;
    }
    const char *path = m->scope_paths[i].path;
    size_t len = strlen(path);
    while (len > 0) {
        while (len > 0 && path[len - 1] != '/') len--;
        if (len == 0) break;
        len--; /* drop the '/' */
        long k = gpufl__model_path_find(m, path, len);
        if (k >= 0) return k;
    }
    return -1;
}

/* Adds one instance to its path's host figures. */
static void path_add(gpufl__model_scope_path_t *p, const gpufl__model_scope_t *s) {
    if (s->lost) { /* an end without its begin: no time to add */
        p->lost++;
        return;
    }
    if (s->open) {
        p->open++;
        return;
    }
    /* in double: any two int64 times from a damaged log may differ by more than int64 holds */
    double d = s->end_ns > s->begin_ns ? (double)s->end_ns - (double)s->begin_ns : 0.0;
    if (p->calls == 0 || d < p->min_ns) p->min_ns = d;
    if (p->calls == 0 || d > p->max_ns) p->max_ns = d;
    p->calls++;
    p->total_ns += d;
    p->implicit += s->implicit;
    if (s->repeat > 0) {
        p->bench_total_ns += d;
        p->bench_iters += s->repeat;
    }
}

/* Links the paths to their parents (dropping links that would form a
 * cycle) and sets their depths. parent_scope: a parent instance per path. */
static int link_paths(gpufl__model_t *m, const int64_t *parent_scope) {
    gpufl__model_scope_path_t *p = m->scope_paths;
    size_t n = m->n_scope_paths;
    for (size_t i = 0; i < n; i++) p[i].parent = path_parent(m, i, parent_scope[i]);
    for (size_t i = 0; i < n; i++) {
        long k = p[i].parent;
        size_t steps = 0;
        while (k >= 0 && steps <= n) k = p[k].parent, steps++;
        if (steps > n) p[i].parent = -1;
    }
    uint8_t *known = calloc(n, 1);
    if (!known) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the scope paths");
    for (size_t i = 0; i < n; i++) {
        size_t steps = 0;
        long k = (long)i;
        while (k >= 0 && !known[k]) steps++, k = p[k].parent;
        size_t d = (k >= 0 ? p[k].depth + 1 : 0) + steps - 1;
        for (k = (long)i; k >= 0 && !known[k]; k = p[k].parent) p[k].depth = d--, known[k] = 1;
    }
    free(known);
    return 0;
}

/* Groups the scope instances into paths, sorted by path; lost scopes (an
 * end without a begin) whose path is known keep their place in the tree. */
static int build_paths(gpufl__model_t *m) {
    size_t n = m->n_scopes, np = 0;
    for (size_t i = 0; i < m->n_lost_scopes; i++) n += m->lost_scopes[i].path != NULL;
    if (!n) return 0;
    int rc = 0;
    int64_t *parent_scope = NULL;
    gpufl__model_scope_t **by_path = malloc(n * sizeof *by_path);
    if (!by_path) goto set_oom_error;
    for (size_t i = 0; i < m->n_scopes; i++) by_path[i] = &m->scopes[i];
    for (size_t i = 0, k = m->n_scopes; i < m->n_lost_scopes; i++)
        if (m->lost_scopes[i].path) by_path[k++] = &m->lost_scopes[i];
    qsort(by_path, n, sizeof *by_path, cmp_scope_path_tag);
    for (size_t i = 0; i < n; i++) np += i == 0 || strcmp(by_path[i - 1]->path, by_path[i]->path);
    m->scope_paths = calloc(np, sizeof *m->scope_paths);
    parent_scope = calloc(np, sizeof *parent_scope);
    if (!m->scope_paths || !parent_scope) goto set_oom_error;
    m->n_scope_paths = np;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        gpufl__model_scope_t *s = by_path[i];
        gpufl__model_scope_path_t *p = k ? &m->scope_paths[k - 1] : NULL;
        if (!p || strcmp(p->path, s->path) != 0) {
            p = &m->scope_paths[k++];
            p->path = s->path;
            p->name = s->name;
            p->source = s->source;
            p->domain = s->domain ? s->domain : "";
            if (*s->tag) p->tags = 1;
        } else if (*s->tag && strcmp(by_path[i - 1]->tag, s->tag) != 0) {
            p->tags++;
        }
        s->path_index = k - 1;
        if (!parent_scope[k - 1] && s->parent > 0) parent_scope[k - 1] = s->parent;
        path_add(p, s);
    }
    /* When a name could not be resolved, show the last part of the path. */
    for (size_t i = 0; i < np; i++) {
        gpufl__model_scope_path_t *p = &m->scope_paths[i];
        if (strcmp(p->name, "?") == 0 && strcmp(p->path, "?") != 0) {
            const char *slash = strrchr(p->path, '/');
            p->name = slash ? slash + 1 : p->path;
        }
    }
    rc = link_paths(m, parent_scope);
    goto free_temp;
set_oom_error:
    rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory for the scope paths");
free_temp:
    free(by_path);
    free(parent_scope);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* GPU time per scope                                                       */
/* ---------------------------------------------------------------------- */

/* Where a kernel's time is listed: slot n_scope_paths is no scope, the one
 * after it an unknown scope. */
typedef struct kernel_ref {
    size_t slot;
    size_t rank; /* the name's place in strcmp order; equal names, equal rank */
    const char *name;
    double ns;
} kernel_ref_t;

static int cmp_kernel_ref(const void *a, const void *b) {
    const kernel_ref_t *x = a, *y = b;
    if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sets refs[i].rank so that sorting by rank orders as strcmp on the names
 * would, comparing each distinct name string once instead of per kernel (a
 * session has few names and many kernels). */
static int rank_kernel_names(kernel_ref_t *refs, size_t n) {
    gpufl__idmap_t seen; /* name pointer -> index in names */
    const char **names = NULL;
    size_t *rank = NULL, n_names = 0, alloc = 0;
    int rc = 0;
    gpufl__idmap_init(&seen);
    for (size_t i = 0; i < n && !rc; i++) {
        size_t idx;
        rc = gpufl__idmap_put(&seen, (uint64_t)(uintptr_t)refs[i].name, n_names, &idx);
        if (rc == 1) {
            refs[i].rank = idx;
            rc = 0;
        } else if (rc == 0) {
            if (n_names == alloc) {
                size_t grown = alloc ? alloc * 2 : 64;
                const char **p = realloc(names, grown * sizeof *p);
                if (!p) {
                    rc = GPUFL_ENOMEM;
                    break;
                }
                names = p;
                alloc = grown;
            }
            refs[i].rank = n_names;
            names[n_names++] = refs[i].name;
        }
    }
    const char **sorted = rc ? NULL : malloc((n_names ? n_names : 1) * sizeof *sorted);
    rank = rc ? NULL : malloc((n_names ? n_names : 1) * sizeof *rank);
    if (!rc && (!sorted || !rank)) rc = GPUFL_ENOMEM;
    if (!rc) {
        memcpy(sorted, names, n_names * sizeof *sorted);
        qsort(sorted, n_names, sizeof *sorted, cmp_str_ptr);
        for (size_t i = 0, r = 0; i < n_names; i++) {
            if (i > 0 && strcmp(sorted[i], sorted[i - 1]) != 0) r = i;
            size_t idx;
            gpufl__idmap_get(&seen, (uint64_t)(uintptr_t)sorted[i], &idx);
            rank[idx] = r;
        }
        for (size_t i = 0; i < n; i++) refs[i].rank = rank[refs[i].rank];
    }
    free(sorted);
    free(rank);
    free(names);
    gpufl__idmap_fini(&seen);
    if (rc) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for GPU time per scope");
    return 0;
}

static gpufl__model_scope_gpu_t *gpu_of_slot(gpufl__model_t *m, size_t slot) {
    if (slot < m->n_scope_paths) return &m->scope_paths[slot].gpu;
    return slot == m->n_scope_paths ? &m->gpu_no_scope : &m->gpu_unknown_scope;
}

/* The slot of a row's scope instance id. */
static size_t gpu_slot_of(gpufl__model_t *m, int64_t scope) {
    size_t idx;
    if (scope <= 0) return m->n_scope_paths;
    m->gpu_scoped_rows++;
    if (!gpufl__idmap_get(&m->scope_index, (uint64_t)scope, &idx)) return m->n_scope_paths + 1;
    return m->scopes[idx].path_index;
}

/* Keeps the GPUFL_MODEL_TOP_KERNELS largest names, by time then name. */
static void top_insert(gpufl__model_scope_gpu_t *g, const char *name, uint64_t calls, double ns) {
    size_t i = g->n_top;
    while (i > 0 && (g->top[i - 1].total_ns < ns ||
                     (g->top[i - 1].total_ns == ns && strcmp(g->top[i - 1].name, name) > 0)))
        i--;
    if (i >= GPUFL_MODEL_TOP_KERNELS) return;
    size_t kept = g->n_top < GPUFL_MODEL_TOP_KERNELS ? g->n_top : GPUFL_MODEL_TOP_KERNELS - 1;
    memmove(&g->top[i + 1], &g->top[i], (kept - i) * sizeof g->top[0]);
    g->top[i] = (gpufl__model_top_kernel_t){name, calls, ns};
    if (g->n_top < GPUFL_MODEL_TOP_KERNELS) g->n_top++;
}

static void work_add(gpufl__model_gpu_work_t *to, const gpufl__model_gpu_work_t *w) {
    to->kernels += w->kernels;
    to->copies += w->copies;
    to->memsets += w->memsets;
    to->kernel_ns += w->kernel_ns;
    to->copy_ns += w->copy_ns;
    to->memset_ns += w->memset_ns;
}

/* ---- NVTX start/end ranges: on no thread's stack, so no row names them;
 * they get the work launched while they were open (docs/nvtx.md) ---- */

typedef struct timed {
    int64_t t;
    double ns;
    int kind; /* 0 kernel, 1 copy, 2 memset */
    const char *name;
} timed_t;

static int cmp_timed(const void *a, const void *b) {
    const timed_t *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* The first index whose time is >= t. */
static size_t timed_lower(const timed_t *v, size_t n, int64_t t) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].t < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Lists the kernels of refs (n, each with its slot) in their slots' top
 * lists, by name: ranks the names, sorts, and counts each slot's names. */
static int list_top_kernels(gpufl__model_t *m, kernel_ref_t *refs, size_t n) {
    if (!n) return 0;
    int rc = rank_kernel_names(refs, n);
    if (rc) return rc;
    qsort(refs, n, sizeof *refs, cmp_kernel_ref);
    for (size_t i = 0, j; i < n; i = j) {
        double ns = 0;
        for (j = i; j < n && refs[j].slot == refs[i].slot && refs[j].rank == refs[i].rank; j++)
            ns += refs[j].ns;
        gpufl__model_scope_gpu_t *g = gpu_of_slot(m, refs[i].slot);
        g->kernel_names++;
        top_insert(g, refs[i].name, (uint64_t)(j - i), ns);
    }
    return 0;
}

/* Adds to each closed start/end range's path the kernels launched (their
 * GPU start when the launch time is unknown), copies and memsets started
 * within [begin, end] of an instance; its top kernels by name over all its
 * instances, as attribute_gpu lists them. */
static int attribute_start_end(gpufl__model_t *m) {
    size_t ranges = 0;
    for (size_t i = 0; i < m->n_scopes; i++)
        ranges += m->scopes[i].source == GPUFL__MODEL_SOURCE_NVTX_START_END;
    size_t n = m->n_kernels + m->n_copies + m->n_memsets;
    if (!ranges || !n) return 0;
    int rc = 0;
    kernel_ref_t *hits = NULL;
    size_t n_hits = 0, hits_alloc = 0;
    timed_t *v = malloc(n * sizeof *v);
    if (!v) goto set_oom_error;
    size_t k = 0;
    for (size_t i = 0; i < m->n_kernels; i++) {
        const gpufl__model_kernel_t *x = &m->kernels[i];
        int64_t t = x->launch_ns != GPUFL_MODEL_UNKNOWN ? x->launch_ns : x->start_ns;
        v[k++] = (timed_t){t, (double)(x->end_ns - x->start_ns), 0, x->demangled};
    }
    for (size_t i = 0; i < m->n_copies; i++)
        v[k++] = (timed_t){m->copies[i].start_ns,
                           (double)(m->copies[i].end_ns - m->copies[i].start_ns), 1, NULL};
    for (size_t i = 0; i < m->n_memsets; i++)
        v[k++] = (timed_t){m->memsets[i].start_ns,
                           (double)(m->memsets[i].end_ns - m->memsets[i].start_ns), 2, NULL};
    qsort(v, n, sizeof *v, cmp_timed);
    for (size_t i = 0; i < m->n_scopes; i++) {
        const gpufl__model_scope_t *s = &m->scopes[i];
        if (s->source != GPUFL__MODEL_SOURCE_NVTX_START_END || s->open) continue;
        gpufl__model_gpu_work_t *w = &m->scope_paths[s->path_index].gpu.self;
        for (size_t j = timed_lower(v, n, s->begin_ns); j < n && v[j].t <= s->end_ns; j++) {
            if (v[j].kind == 1) {
                w->copies++, w->copy_ns += v[j].ns;
                continue;
            }
            if (v[j].kind == 2) {
                w->memsets++, w->memset_ns += v[j].ns;
                continue;
            }
            w->kernels++, w->kernel_ns += v[j].ns;
            rc = gpufl__model_reserve((void **)&hits, &hits_alloc, n_hits, sizeof *hits,
                                      m->limits.max_scopes);
            if (rc < 0) goto free_all;
            if (rc == 0)
                hits[n_hits++] =
                    (kernel_ref_t){s->path_index, 0, v[j].name ? v[j].name : "?", v[j].ns};
            rc = 0; /* past the cap: counted in the work, left out of the top list */
        }
    }
    rc = list_top_kernels(m, hits, n_hits);
    goto free_all;
set_oom_error:
    rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory for NVTX start/end ranges");
free_all:
    free(v);
    free(hits);
    return rc;
}

/* Attributes every kernel, copy and memset to the scope path of its scope
 * instance, lists each path's top kernels, and adds each path's own work to
 * the totals of its ancestors. */
static int attribute_gpu(gpufl__model_t *m) {
    kernel_ref_t *refs = NULL;
    if (m->n_kernels) {
        refs = malloc(m->n_kernels * sizeof *refs);
        if (!refs) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for GPU time per scope");
    }
    for (size_t i = 0; i < m->n_kernels; i++) {
        const gpufl__model_kernel_t *k = &m->kernels[i];
        size_t slot = gpu_slot_of(m, k->scope);
        gpufl__model_gpu_work_t *w = &gpu_of_slot(m, slot)->self;
        double ns = (double)(k->end_ns - k->start_ns);
        w->kernels++;
        w->kernel_ns += ns;
        refs[i] = (kernel_ref_t){slot, 0, k->demangled, ns};
    }
    for (size_t i = 0; i < m->n_copies; i++) {
        gpufl__model_gpu_work_t *w = &gpu_of_slot(m, gpu_slot_of(m, m->copies[i].scope))->self;
        w->copies++;
        w->copy_ns += (double)(m->copies[i].end_ns - m->copies[i].start_ns);
    }
    for (size_t i = 0; i < m->n_memsets; i++) {
        gpufl__model_gpu_work_t *w = &gpu_of_slot(m, gpu_slot_of(m, m->memsets[i].scope))->self;
        w->memsets++;
        w->memset_ns += (double)(m->memsets[i].end_ns - m->memsets[i].start_ns);
    }
    int rc = list_top_kernels(m, refs, m->n_kernels);
    free(refs);
    if (!rc) rc = attribute_start_end(m);
    if (rc) return rc;
    for (size_t i = 0; i < m->n_scope_paths; i++)
        for (long k = (long)i; k >= 0; k = m->scope_paths[k].parent)
            work_add(&m->scope_paths[k].gpu.total, &m->scope_paths[i].gpu.self);
    work_add(&m->gpu_no_scope.total, &m->gpu_no_scope.self);
    work_add(&m->gpu_unknown_scope.total, &m->gpu_unknown_scope.self);
    return 0;
}

int gpufl__model_finish_scopes(gpufl__model_t *m) { return join_scopes(m); }

int gpufl__model_finish_paths(gpufl__model_t *m) {
    int rc = build_paths(m);
    return rc ? rc : attribute_gpu(m);
}

const gpufl__model_handler_t gpufl__model_scope_handlers[] = {
    {"scope_begin", on_scope_begin, NULL},
    {"scope_end", on_scope_end, NULL},
    {NULL, NULL, NULL},
};
