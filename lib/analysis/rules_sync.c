// SPDX-License-Identifier: Apache-2.0
/*
 * rules_sync.c - the SYNCHRONIZATION insights: which source lines block the
 * host on the GPU (sync attribution), and which of them synchronize inside a
 * loop with kernel work between the calls (in-loop sync). Thresholds and
 * their reasons: docs/insights.md.
 *
 * A sync's line is the site of its CPU stack (gpufl__model_stack_site): the
 * innermost application frame with a source line. A stack with no
 * application frame is a call made inside the CUDA runtime or driver and is
 * grouped as <driver-internal>; a sync without a stack as <no stack>.
 */
#include "analysis/insight_rules.h"

#include "util/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHARE_HIGH       50.0 /* % of session wall time: HIGH above */
#define SHARE_MEDIUM     10.0 /* MEDIUM above, LOW otherwise */
#define LOOP_MIN_SYNCS   3    /* in-loop: at least this many syncs from one line */
#define LOOP_MIN_KERNELS 3    /* and a median of at least this many kernels between them */

#define DRIVER_INTERNAL "<driver-internal>"
#define NO_STACK        "<no stack>"

/* One sync and the line it came from. */
typedef struct sync_ref {
    const gpufl__model_sync_t *sync;
    const gpufl__model_frame_t *site; /* NULL: driver-internal or no stack */
    int no_stack;
} sync_ref_t;

/* The key a sync is grouped by: file and line, else module and function. */
static int cmp_site(const sync_ref_t *x, const sync_ref_t *y) {
    if (x->no_stack != y->no_stack) return x->no_stack - y->no_stack;
    if (!x->site || !y->site) return (x->site != NULL) - (y->site != NULL);
    int c = strcmp(x->site->file, y->site->file);
    if (c) return c;
    if (x->site->line != y->site->line) return x->site->line < y->site->line ? -1 : 1;
    if (*x->site->file && x->site->line > 0)
        return 0; /* one line: inlining may name another function */
    c = strcmp(x->site->module, y->site->module);
    return c ? c : strcmp(x->site->function, y->site->function);
}

static int cmp_ref(const void *a, const void *b) {
    const sync_ref_t *x = a, *y = b;
    int c = cmp_site(x, y);
    if (c) return c;
    if (x->sync->start_ns != y->sync->start_ns)
        return x->sync->start_ns < y->sync->start_ns ? -1 : 1;
    return x->sync->correlation < y->sync->correlation
               ? -1
               : x->sync->correlation > y->sync->correlation;
}

/* Pairs of int64 by their first. */
static int cmp_pair(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Kernel launches in call order: their distinct correlation ids, sorted. */
typedef struct launches {
    int64_t *corr;
    size_t n;
} launches_t;

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* From kernel rows (Trace), else from launch rows (engines that time no kernels
 * write the launch calls themselves, not CUPTI's kernel records). */
static int make_launches(const gpufl__model_t *m, launches_t *l) {
    memset(l, 0, sizeof *l);
    size_t rows = m->n_kernels ? m->n_kernels : m->n_launches;
    if (rows == 0) return 0;
    l->corr = malloc(rows * sizeof *l->corr);
    if (l->corr == NULL) return GPUFL_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < rows; i++) {
        int64_t c = m->n_kernels ? m->kernels[i].correlation : m->launches[i].correlation;
        if (c > 0) l->corr[n++] = c;
    }
    gpufl__insight_sort(l->corr, n, sizeof *l->corr, cmp_i64);
    size_t u = 0; /* a graph's kernels share their launch's correlation: one */
    for (size_t i = 0; i < n; i++)
        if (u == 0 || l->corr[u - 1] != l->corr[i]) l->corr[u++] = l->corr[i];
    l->n = u;
    return 0;
}

/* First launch with a correlation above c. */
static size_t launch_after(const launches_t *l, int64_t c) {
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->corr[mid] <= c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Distinct kernel correlations between two syncs: the launches made after
 * the first and before the second (correlation ids order every call of the
 * process), by any thread, as spec 003 counts them: a producer thread that
 * launches while another thread synchronizes is the same pattern. */
static size_t launches_between(const launches_t *l, const gpufl__model_sync_t *a,
                               const gpufl__model_sync_t *b) {
    size_t from = launch_after(l, a->correlation), to = launch_after(l, b->correlation - 1);
    return to > from ? to - from : 0;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* "train.cu:90", or the function when there is no line. */
static void site_label(const sync_ref_t *r, char *buf, size_t size) {
    if (r->no_stack)
        snprintf(buf, size, NO_STACK);
    else if (!r->site)
        snprintf(buf, size, DRIVER_INTERNAL);
    else if (r->site->line > 0 && *r->site->file)
        snprintf(buf, size, "%s:%lld", base_name(r->site->file), (long long)r->site->line);
    else if (*r->site->function)
        snprintf(buf, size, "%s (%s)", r->site->function, base_name(r->site->module));
    else
        snprintf(buf, size, "%s+0x%llx", base_name(r->site->module),
                 (unsigned long long)r->site->offset);
}

static gpufl_severity_t share_severity(double pct) {
    return pct > SHARE_HIGH     ? GPUFL_SEVERITY_HIGH
           : pct > SHARE_MEDIUM ? GPUFL_SEVERITY_MEDIUM
                                : GPUFL_SEVERITY_LOW;
}

/* The place of a group on an insight. */
static int set_place(gpufl__insight_t *in, const sync_ref_t *r) {
    if (!r->site) return 0;
    const gpufl__model_frame_t *f = r->site;
    if (*f->file && gpufl__insight_text(&in->file, "%s", f->file)) return GPUFL_ENOMEM;
    in->line = f->line;
    if (*f->function && gpufl__insight_text(&in->function, "%s", f->function)) return GPUFL_ENOMEM;
    if (*f->source && gpufl__insight_text(&in->source, "%s", f->source)) return GPUFL_ENOMEM;
    return 0;
}

/* The API of a group: the type with the most blocked time; of types tied,
 * the first of `order`. */
static const char *group_api(const sync_ref_t *g, size_t n) {
    static const int32_t order[] = {GPUFL_SYNC_TYPE_EVENT, GPUFL_SYNC_TYPE_STREAM_WAIT_EVENT,
                                    GPUFL_SYNC_TYPE_STREAM, GPUFL_SYNC_TYPE_DEVICE};
    double w[GPUFL_SYNC_TYPE_COUNT] = {0}; /* blocked ns, and a count to break ties */
    for (size_t i = 0; i < n; i++) {
        int32_t t = g[i].sync->sync_type;
        w[t > 0 && t < GPUFL_SYNC_TYPE_COUNT ? t : 0] +=
            (double)(g[i].sync->end_ns - g[i].sync->start_ns) + 1e-3;
    }
    int32_t best = GPUFL_SYNC_TYPE_UNKNOWN;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (w[order[i]] > w[best]) best = order[i];
    return gpufl__model_sync_name(best);
}

typedef struct group_stats {
    double blocked_ns, share_pct;
    double median_between; /* kernels launched between consecutive syncs */
    int loop_judged;       /* enough syncs to judge the loop rule */
} group_stats_t;

static int group_stats(const sync_ref_t *g, size_t n, const launches_t *l, double session_ns,
                       group_stats_t *st) {
    memset(st, 0, sizeof *st);
    for (size_t i = 0; i < n; i++)
        st->blocked_ns += (double)(g[i].sync->end_ns - g[i].sync->start_ns);
    st->share_pct = session_ns > 0 ? 100.0 * st->blocked_ns / session_ns : 0;
    if (n < LOOP_MIN_SYNCS || l->n == 0) return 0;
    /* Consecutive in call order: by correlation (start times may tie). */
    int64_t *between = malloc((n - 1) * sizeof *between);
    const gpufl__model_sync_t **order = malloc(n * sizeof *order);
    if (between == NULL || order == NULL) {
        free(between);
        free(order);
        return GPUFL_ENOMEM;
    }
    int64_t *keys = malloc(2 * n * sizeof *keys);
    if (keys == NULL) {
        free(between);
        free(order);
        return GPUFL_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        keys[2 * i] = g[i].sync->correlation;
        keys[2 * i + 1] = (int64_t)i;
    }
    gpufl__insight_sort(keys, n, 2 * sizeof *keys, cmp_pair);
    for (size_t i = 0; i < n; i++) order[i] = g[keys[2 * i + 1]].sync;
    for (size_t i = 0; i + 1 < n; i++)
        between[i] = (int64_t)launches_between(l, order[i], order[i + 1]);
    st->median_between = gpufl__insight_median_i64(between, n - 1);
    st->loop_judged = 1;
    free(keys);
    free(between);
    free(order);
    return 0;
}

static int attribution_insight(gpufl__insights_t *out, const sync_ref_t *g, size_t n,
                               const group_stats_t *st) {
    char where[512], dur[32];
    site_label(g, where, sizeof where);
    gpufl__insight_t *in = gpufl__insight_add(out, "sync_attribution", "SYNCHRONIZATION",
                                              share_severity(st->share_pct));
    if (in == NULL) return GPUFL_ENOMEM;
    const char *api = group_api(g, n);
    gpufl__insight_duration(st->blocked_ns, dur, sizeof dur);
    in->weight = st->blocked_ns;
    const gpufl__model_frame_t *f = g->site;
    const char *fn = f && *f->function ? f->function : NULL;
    int rc = gpufl__insight_text(&in->title, "%s \xc3\x97 %zu @ %s \xc2\xb7 %s (%.1f%% of session)",
                                 api, n, where, dur, st->share_pct);
    if (!rc)
        rc = gpufl__insight_text(&in->message,
                                 "%zu synchronization call%s at %s%s%s held the host thread for %s "
                                 "in all, %.1f%% of the session's wall time.",
                                 n, n == 1 ? "" : "s", where, fn ? " in " : "", fn ? fn : "", dur,
                                 st->share_pct);
    if (!rc) {
        const char *advice =
            g->no_stack ? "These calls have no CPU stack (stack capture lost them or was off for "
                          "part of the session): see trace_stats.stacks_lost."
            : !g->site  ? "No application frame is on these stacks: the CUDA runtime or driver "
                          "synchronized on its own (at module load, context teardown or a blocking "
                          "allocation). Look at the calls around them in the timeline."
            : st->share_pct > SHARE_MEDIUM
                ? "The host waits on the GPU here for a large share of the run. Synchronize only "
                  "where the host needs the results; use events (cudaEventRecord, "
                  "cudaStreamWaitEvent) to order streams without blocking the host."
                : "Check that this synchronization is needed; each one drains the GPU's queue and "
                  "stalls the host until it is empty.";
        rc = gpufl__insight_text(&in->advice, "%s", advice);
    }
    if (!rc) rc = set_place(in, g);
    gpufl__insight_evidence(in, "calls", (double)n, "count");
    gpufl__insight_evidence(in, "blocked_ns", st->blocked_ns, "ns");
    gpufl__insight_evidence(in, "session_share", st->share_pct, "%");
    return rc;
}

static int loop_insight(gpufl__insights_t *out, const sync_ref_t *g, size_t n,
                        const group_stats_t *st) {
    char where[512], dur[32];
    site_label(g, where, sizeof where);
    gpufl__insight_t *in = gpufl__insight_add(out, "in_loop_sync", "SYNCHRONIZATION",
                                              st->share_pct > SHARE_HIGH ? GPUFL_SEVERITY_HIGH
                                                                         : GPUFL_SEVERITY_MEDIUM);
    if (in == NULL) return GPUFL_ENOMEM;
    gpufl__insight_duration(st->blocked_ns, dur, sizeof dur);
    in->weight = st->blocked_ns;
    const gpufl__model_frame_t *f = g->site;
    const char *fn = f && *f->function ? f->function : "an unknown function";
    int rc = gpufl__insight_text(
        &in->title, "In-loop sync \xc3\x97 %zu \xe2\x80\x94 likely blocking GPU pipelining", n);
    if (!rc)
        rc = gpufl__insight_text(
            &in->message,
            "%s blocked across %zu calls at %s in %s, with a median of %g kernel launches between "
            "one call and the next: the host waits for the GPU to drain on every iteration, so the "
            "GPU idles while the host queues the next batch of work.",
            dur, n, where, fn, st->median_between);
    if (!rc)
        rc =
            gpufl__insight_text(&in->advice, "%s",
                                "If the results are needed only once the loop is done, synchronize "
                                "once after the loop. Otherwise capture the loop body into a CUDA "
                                "graph and launch it with cudaGraphLaunch: a replay amortizes the "
                                "kernel launch overhead and the host-side work of each iteration.");
    if (!rc) rc = set_place(in, g);
    gpufl__insight_evidence(in, "calls", (double)n, "count");
    gpufl__insight_evidence(in, "blocked_ns", st->blocked_ns, "ns");
    gpufl__insight_evidence(in, "session_share", st->share_pct, "%");
    gpufl__insight_evidence(in, "median_launches_between", (double)st->median_between, "count");
    return rc;
}

int gpufl__rules_sync(gpufl__insights_t *out, const gpufl__model_t *m) {
    if (m->n_syncs == 0) {
        int rc = gpufl__insight_skip(
            out, "sync_attribution",
            "the session has no synchronization rows (Trace engine with enable_synchronization)");
        return rc ? rc
                  : gpufl__insight_skip(out, "in_loop_sync",
                                        "the session has no synchronization rows");
    }
    size_t with_stack = 0;
    for (size_t i = 0; i < m->n_syncs; i++) with_stack += m->syncs[i].stack > 0;
    if (with_stack == 0) {
        int rc = gpufl__insight_skip(
            out, "sync_attribution",
            "the %zu synchronization calls carry no CPU stacks (enable_stack_trace was off)",
            m->n_syncs);
        return rc ? rc
                  : gpufl__insight_skip(out, "in_loop_sync",
                                        "the synchronization calls carry no CPU stacks");
    }
    sync_ref_t *refs = malloc(m->n_syncs * sizeof *refs);
    launches_t l;
    if (refs == NULL || make_launches(m, &l)) {
        free(refs);
        return GPUFL_ENOMEM;
    }
    for (size_t i = 0; i < m->n_syncs; i++) {
        const gpufl__model_sync_t *s = &m->syncs[i];
        int no_stack = s->stack <= 0 || gpufl__model_stack_find(m, s->stack) == NULL;
        refs[i] = (sync_ref_t){s, no_stack ? NULL : gpufl__model_stack_site(m, s->stack), no_stack};
    }
    qsort(refs, m->n_syncs, sizeof *refs, cmp_ref);
    double session_ns = gpufl__insight_session_ns(m);
    int rc = 0;
    size_t loop_judged = 0;
    for (size_t i = 0, j; i < m->n_syncs && !rc; i = j) {
        for (j = i + 1; j < m->n_syncs && cmp_site(&refs[i], &refs[j]) == 0; j++) {
        }
        group_stats_t st;
        rc = group_stats(refs + i, j - i, &l, session_ns, &st);
        if (!rc) rc = attribution_insight(out, refs + i, j - i, &st);
        if (!rc && st.loop_judged) loop_judged++;
        if (!rc && st.loop_judged && st.median_between >= LOOP_MIN_KERNELS && refs[i].site)
            rc = loop_insight(out, refs + i, j - i, &st);
    }
    if (!rc && loop_judged == 0)
        rc = gpufl__insight_skip(
            out, "in_loop_sync",
            l.n == 0 ? "the session has no kernel rows (nor launch rows) to count between syncs"
                     : "no source line made %d or more synchronization calls",
            LOOP_MIN_SYNCS);
    free(refs);
    free(l.corr);
    return rc;
}
