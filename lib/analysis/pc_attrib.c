// SPDX-License-Identifier: Apache-2.0
/*
 * pc_attrib.c - gives the samples of pc_sample rows to scope paths by time.
 *
 * Continuous PC sampling names a function and a window, never a launch: a
 * row's samples were taken before t1_ns and reached gpufl up to one CUPTI
 * decode period (worker_sleep_ms, 100 ms when unknown) late, so they belong
 * to kernels of that function (same mangled name, same device) whose GPU
 * execution overlaps [t0_ns - W, t1_ns]. They are split over those kernels
 * in proportion to each one's overlapped GPU time, and reach scope paths
 * through the kernels' scopes. The precision is counted, in samples: exact
 * (all candidate kernels in one scope path: the usual case, since one
 * window holds one phase of a program), split (several paths: a share is a
 * time-weighted guess), fallback (no kernel overlaps: split by the
 * function's kernel time over the session) and unattributed (the function
 * has no kernel rows, e.g. the Trace engine did not run: scope
 * "(unattributed)").
 *
 * Under the PcSampling and Deep engines there are no kernel rows (CUPTI's
 * kernel timing would move samples out of the kernels: docs/log-format.md,
 * `launch`) but launch rows: host times of the launch calls. A function
 * with no kernel rows on the device but with launch rows has its samples
 * given to its launches (same context when both are known) made in
 * [t0_ns - W, t1_ns], one weight per launch, as no durations exist; with
 * none there, to all its launches over the session (fallback). Same
 * accounting; pc_attrib.by_launch counts what went through launches.
 *
 * Cost: kernels sorted by (name, device, start) with a running maximum of
 * their ends; rows sorted by (function, context, window); each window of a
 * function does two binary searches and visits the kernels it overlaps
 * (each kernel about 1 + W / window times). O(n log n) in rows and kernels.
 * Launches: sorted by (name, time), the same two searches per window.
 */
#include "analysis/model_internal.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

/* A kernel as attribution sees it. */
typedef struct kref {
    const char *name;
    int64_t start_ns, end_ns;
    int64_t max_end_ns; /* the latest end of this and the kernels before it in its group */
    size_t slot;        /* scope path slot */
    int32_t device;
} kref_t;

/* A launch as attribution sees it: a host time, weight one. */
typedef struct lref {
    const char *name; /* mangled, from its kernel_config record */
    int64_t ts_ns;
    int64_t context; /* < 0 unknown */
    size_t slot;
} lref_t;

/* A candidate scope path and its weight. */
typedef struct cand {
    size_t slot;
    double weight;
} cand_t;

typedef struct attrib {
    gpufl__model_t *m;
    kref_t *k;
    size_t nk;
    lref_t *l;
    size_t nl;
    gpufl__idmap_t lfb; /* function << 32 | context + 1 -> index in fb_pool runs */
    cand_t *c;
    size_t nc, c_alloc;
    gpufl__idmap_t acc; /* slot * n_reasons + reason + 1 -> index in m->pc_scopes */
    gpufl__idmap_t fb;  /* function << 32 | device + 1 -> index in fb_pool runs */
    cand_t *fb_pool;
    size_t fb_n, fb_alloc;
    size_t *fb_runs; /* start, count pairs */
    size_t fb_runs_n, fb_runs_alloc;
} attrib_t;

static int oom(void) {
    return gpufl__set_error(GPUFL_ENOMEM, "out of memory for PC sample attribution");
}

static size_t slot_of(const gpufl__model_t *m, int64_t scope) {
    size_t idx;
    if (scope <= 0) return GPUFL_MODEL_PC_SLOT_NO_SCOPE(m);
    if (!gpufl__idmap_get(&m->scope_index, (uint64_t)scope, &idx))
        return GPUFL_MODEL_PC_SLOT_UNKNOWN_SCOPE(m);
    return m->scopes[idx].path_index;
}

static int cmp_kref(const void *a, const void *b) {
    const kref_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    if (x->device != y->device) return x->device < y->device ? -1 : 1;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
}

static int cmp_lref(const void *a, const void *b) {
    const lref_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

static int cmp_row(const void *a, const void *b, void *rows) {
    const gpufl__model_pc_sample_t *x = (const gpufl__model_pc_sample_t *)rows + *(const size_t *)a;
    const gpufl__model_pc_sample_t *y = (const gpufl__model_pc_sample_t *)rows + *(const size_t *)b;
    if (x->function != y->function) return x->function < y->function ? -1 : 1;
    if (x->context != y->context) return x->context < y->context ? -1 : 1;
    if (x->t0_ns != y->t0_ns) return x->t0_ns < y->t0_ns ? -1 : 1;
    if (x->t1_ns != y->t1_ns) return x->t1_ns < y->t1_ns ? -1 : 1;
    return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

static int cmp_cand(const void *a, const void *b) {
    const cand_t *x = a, *y = b;
    return (x->slot > y->slot) - (x->slot < y->slot);
}

static int cmp_scope(const void *a, const void *b) {
    const gpufl__model_pc_scope_t *x = a, *y = b;
    if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
    return (x->reason > y->reason) - (x->reason < y->reason);
}

/* The kernels [lo, hi) named name (on device, unless device < 0). */
static void name_range(const attrib_t *a, const char *name, int64_t device, size_t *lo,
                       size_t *hi) {
    size_t l = 0, h = a->nk;
    while (l < h) { /* first kernel >= (name, device) */
        size_t mid = l + (h - l) / 2;
        int c = strcmp(a->k[mid].name, name);
        if (c < 0 || (c == 0 && device >= 0 && a->k[mid].device < device))
            l = mid + 1;
        else
            h = mid;
    }
    size_t e = l;
    while (e < a->nk && strcmp(a->k[e].name, name) == 0 && (device < 0 || a->k[e].device == device))
        e++;
    *lo = l;
    *hi = e;
}

static int push_cand(attrib_t *a, size_t slot, double weight) {
    if (gpufl__model_reserve((void **)&a->c, &a->c_alloc, a->nc, sizeof *a->c, SIZE_MAX / 2))
        return oom();
    a->c[a->nc++] = (cand_t){slot, weight};
    return 0;
}

/* Candidates among one group of kernels (one name and device, sorted by
 * start) that overlap [from, to]. */
static int overlap_group(attrib_t *a, size_t lo, size_t hi, int64_t from, int64_t to) {
    size_t l = lo, h = hi;
    while (l < h) { /* first with max_end >= from */
        size_t mid = l + (h - l) / 2;
        if (a->k[mid].max_end_ns < from)
            l = mid + 1;
        else
            h = mid;
    }
    for (size_t i = l; i < hi && a->k[i].start_ns <= to; i++) {
        const kref_t *k = &a->k[i];
        if (k->end_ns < from) continue;
        int64_t s = k->start_ns > from ? k->start_ns : from;
        int64_t e = k->end_ns < to ? k->end_ns : to;
        if (push_cand(a, k->slot, e > s ? (double)(e - s) : 0)) return GPUFL_ENOMEM;
    }
    return 0;
}

/* Merges the candidates by slot; returns the number of slots left. Zero
 * weights throughout (instant kernels) count each kernel as one. */
static size_t merge_cands(attrib_t *a) {
    double total = 0;
    for (size_t i = 0; i < a->nc; i++) total += a->c[i].weight;
    if (total <= 0)
        for (size_t i = 0; i < a->nc; i++) a->c[i].weight = 1;
    qsort(a->c, a->nc, sizeof *a->c, cmp_cand);
    size_t n = 0;
    for (size_t i = 0; i < a->nc; i++) {
        if (n && a->c[n - 1].slot == a->c[i].slot)
            a->c[n - 1].weight += a->c[i].weight;
        else
            a->c[n++] = a->c[i];
    }
    a->nc = n;
    return n;
}

/* Pushes the candidates of a fallback: every kernel (by GPU time) or every
 * launch (one each, of the context unless it is unknown) in [lo, hi). */
static int push_all(attrib_t *a, int launches, int64_t context, size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; i++) {
        int rc = 0;
        if (!launches)
            rc = push_cand(a, a->k[i].slot, (double)(a->k[i].end_ns - a->k[i].start_ns));
        else if (context < 0 || a->l[i].context < 0 || a->l[i].context == context)
            rc = push_cand(a, a->l[i].slot, 1);
        if (rc) return rc;
    }
    return 0;
}

/* The session-wide split of a function's kernel time (or launch count)
 * over scope paths, cached per function and device (or context), into a->c. */
static int fallback_cands(attrib_t *a, int launches, uint32_t function, int64_t where, size_t lo,
                          size_t hi) {
    uint64_t key = ((uint64_t)function << 32 | (uint32_t)(where + 1)) + 1;
    gpufl__idmap_t *map = launches ? &a->lfb : &a->fb;
    size_t run;
    a->nc = 0;
    if (!gpufl__idmap_get(map, key, &run)) {
        if (push_all(a, launches, where, lo, hi)) return GPUFL_ENOMEM;
        size_t n = a->nc ? merge_cands(a) : 0;
        if (gpufl__model_reserve((void **)&a->fb_runs, &a->fb_runs_alloc, a->fb_runs_n + 1,
                                 sizeof *a->fb_runs, SIZE_MAX / 2))
            return oom();
        for (size_t i = 0; i < n; i++) {
            if (gpufl__model_reserve((void **)&a->fb_pool, &a->fb_alloc, a->fb_n,
                                     sizeof *a->fb_pool, SIZE_MAX / 2))
                return oom();
            a->fb_pool[a->fb_n++] = a->c[i];
        }
        run = a->fb_runs_n;
        a->fb_runs[a->fb_runs_n++] = a->fb_n - n;
        a->fb_runs[a->fb_runs_n++] = n;
        if (gpufl__idmap_put(map, key, run, NULL) < 0) return oom();
        return 0;
    }
    for (size_t i = 0; i < a->fb_runs[run + 1]; i++)
        if (push_cand(a, a->fb_pool[a->fb_runs[run] + i].slot,
                      a->fb_pool[a->fb_runs[run] + i].weight))
            return GPUFL_ENOMEM;
    return 0;
}

/* Adds samples of reason to slot. */
static int add_share(attrib_t *a, size_t slot, uint32_t reason, double samples) {
    gpufl__model_t *m = a->m;
    uint64_t key = (uint64_t)slot * (m->n_pc_reasons ? m->n_pc_reasons : 1) + reason + 1;
    size_t idx;
    if (!gpufl__idmap_get(&a->acc, key, &idx)) {
        if (gpufl__model_reserve((void **)&m->pc_scopes, &m->pc_scopes_alloc, m->n_pc_scopes,
                                 sizeof *m->pc_scopes, SIZE_MAX / 2))
            return oom();
        idx = m->n_pc_scopes++;
        m->pc_scopes[idx] = (gpufl__model_pc_scope_t){slot, reason, 0};
        if (gpufl__idmap_put(&a->acc, key, idx, NULL) < 0) return oom();
    }
    m->pc_scopes[idx].samples += samples;
    return 0;
}

/* The launches [lo, hi) of name. */
static void launch_range(const attrib_t *a, const char *name, size_t *lo, size_t *hi) {
    size_t l = 0, h = a->nl;
    while (l < h) {
        size_t mid = l + (h - l) / 2;
        if (strcmp(a->l[mid].name, name) < 0)
            l = mid + 1;
        else
            h = mid;
    }
    size_t e = l;
    while (e < a->nl && strcmp(a->l[e].name, name) == 0) e++;
    *lo = l;
    *hi = e;
}

/* Candidates among the launches [lo, hi) of one function (sorted by time)
 * made in [from, to] on context (any, when either is unknown): one each. */
static int launch_cands(attrib_t *a, size_t lo, size_t hi, int64_t context, int64_t from,
                        int64_t to) {
    size_t l = lo, h = hi;
    while (l < h) { /* first at or after from */
        size_t mid = l + (h - l) / 2;
        if (a->l[mid].ts_ns < from)
            l = mid + 1;
        else
            h = mid;
    }
    for (size_t i = l; i < hi && a->l[i].ts_ns <= to; i++)
        if (context < 0 || a->l[i].context < 0 || a->l[i].context == context)
            if (push_cand(a, a->l[i].slot, 1)) return GPUFL_ENOMEM;
    return 0;
}

/* Attributes the rows order[from, to): one function, context and window. */
static int attribute_window(attrib_t *a, const size_t *order, size_t from, size_t to) {
    gpufl__model_t *m = a->m;
    const gpufl__model_pc_sample_t *r0 = &m->pc_samples[order[from]];
    const gpufl__model_pc_context_t *ctx = gpufl__model_pc_context(m, r0->context);
    int64_t device = ctx ? ctx->device : GPUFL_MODEL_UNKNOWN;
    int64_t wait_ms =
        ctx && ctx->worker_sleep_ms >= 0 ? ctx->worker_sleep_ms : GPUFL_MODEL_PC_WORKER_SLEEP_MS;
    const char *name = gpufl__model_str(m, r0->function);
    size_t lo = 0, hi = 0;
    if (name) name_range(a, name, device, &lo, &hi);
    double *kind = NULL;
    a->nc = 0;
    int rc = 0;
    int64_t begin = r0->t0_ns - wait_ms * 1000000;
    for (size_t g = lo; g < hi && !rc;) { /* each device's group of the name */
        size_t e = g;
        while (e < hi && a->k[e].device == a->k[g].device) e++;
        rc = overlap_group(a, g, e, begin, r0->t1_ns);
        g = e;
    }
    if (rc) return rc;
    int by_launch = 0;
    if (lo == hi && name) { /* no kernel rows: the launches, if any */
        launch_range(a, name, &lo, &hi);
        by_launch = lo < hi;
        if (by_launch && launch_cands(a, lo, hi, r0->context, begin, r0->t1_ns))
            return GPUFL_ENOMEM;
    }
    size_t slots = a->nc ? merge_cands(a) : 0;
    if (a->nc)
        kind = slots == 1 ? &m->pc_attrib.exact : &m->pc_attrib.split;
    else if (lo < hi) {
        rc = fallback_cands(a, by_launch, r0->function, by_launch ? r0->context : device, lo, hi);
        if (rc) return rc;
        kind = &m->pc_attrib.fallback;
    }
    if (!a->nc) { /* no kernel or launch rows (of this context) */
        by_launch = 0;
        a->nc = 0;
        if (push_cand(a, GPUFL_MODEL_PC_SLOT_UNATTRIBUTED(m), 1)) return GPUFL_ENOMEM;
        kind = &m->pc_attrib.unattributed;
    }
    double total = 0;
    for (size_t i = 0; i < a->nc; i++) total += a->c[i].weight;
    for (size_t i = from; i < to; i++) {
        const gpufl__model_pc_sample_t *r = &m->pc_samples[order[i]];
        *kind += r->samples;
        if (by_launch) m->pc_attrib.by_launch += r->samples;
        for (size_t c = 0; c < a->nc; c++)
            if (add_share(a, a->c[c].slot, r->reason, r->samples * a->c[c].weight / total))
                return GPUFL_ENOMEM;
    }
    return 0;
}

static int build_krefs(attrib_t *a) {
    gpufl__model_t *m = a->m;
    if (!m->n_kernels) return 0;
    a->k = malloc(m->n_kernels * sizeof *a->k);
    if (!a->k) return oom();
    for (size_t i = 0; i < m->n_kernels; i++) {
        const gpufl__model_kernel_t *k = &m->kernels[i];
        a->k[i] = (kref_t){k->name, k->start_ns, k->end_ns, 0, slot_of(m, k->scope), k->device};
    }
    a->nk = m->n_kernels;
    qsort(a->k, a->nk, sizeof *a->k, cmp_kref);
    for (size_t i = 0; i < a->nk; i++) {
        kref_t *k = &a->k[i];
        int same = i > 0 && k[-1].device == k->device && strcmp(k[-1].name, k->name) == 0;
        k->max_end_ns = same && k[-1].max_end_ns > k->end_ns ? k[-1].max_end_ns : k->end_ns;
    }
    return 0;
}

/* Launches whose kernel_config record names them; the others cannot be
 * matched with a function. */
static int build_lrefs(attrib_t *a) {
    gpufl__model_t *m = a->m;
    if (!m->n_launches) return 0;
    a->l = malloc(m->n_launches * sizeof *a->l);
    if (!a->l) return oom();
    for (size_t i = 0; i < m->n_launches; i++) {
        const gpufl__model_launch_t *l = &m->launches[i];
        const gpufl__model_kernel_config_t *c = gpufl__model_launch_config(m, l);
        if (c && *c->name)
            a->l[a->nl++] = (lref_t){c->name, l->ts_ns, l->context, slot_of(m, l->scope)};
    }
    qsort(a->l, a->nl, sizeof *a->l, cmp_lref);
    return 0;
}

int gpufl__model_attribute_pc(gpufl__model_t *m) {
    if (!m->n_pc_samples) return 0;
    attrib_t a;
    memset(&a, 0, sizeof a);
    a.m = m;
    gpufl__idmap_init(&a.acc);
    gpufl__idmap_init(&a.fb);
    gpufl__idmap_init(&a.lfb);
    size_t *order = malloc(m->n_pc_samples * sizeof *order);
    int rc = order ? build_krefs(&a) : oom();
    if (!rc) rc = build_lrefs(&a);
    if (!rc) {
        for (size_t i = 0; i < m->n_pc_samples; i++) order[i] = i;
        qsort_r(order, m->n_pc_samples, sizeof *order, cmp_row, m->pc_samples);
    }
    for (size_t i = 0, j; !rc && i < m->n_pc_samples; i = j) {
        const gpufl__model_pc_sample_t *r = &m->pc_samples[order[i]];
        for (j = i + 1; j < m->n_pc_samples; j++) {
            const gpufl__model_pc_sample_t *s = &m->pc_samples[order[j]];
            if (s->function != r->function || s->context != r->context || s->t0_ns != r->t0_ns ||
                s->t1_ns != r->t1_ns)
                break;
        }
        rc = attribute_window(&a, order, i, j);
    }
    if (!rc && m->n_pc_scopes > 1)
        qsort(m->pc_scopes, m->n_pc_scopes, sizeof *m->pc_scopes, cmp_scope);
    free(order);
    free(a.k);
    free(a.l);
    gpufl__idmap_fini(&a.lfb);
    free(a.c);
    free(a.fb_pool);
    free(a.fb_runs);
    gpufl__idmap_fini(&a.acc);
    gpufl__idmap_fini(&a.fb);
    return rc;
}
