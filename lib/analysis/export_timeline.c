// SPDX-License-Identifier: Apache-2.0
/*
 * export_timeline.c - builds the timeline the trace exporters write: groups
 * the model's rows into tracks, repairs nesting (threads) or spreads overlap
 * into lanes (GPU), and sorts every row into one time order. Also the names
 * and arguments of rows, so that Chrome JSON and Perfetto say the same.
 *
 * Two sorts of the rows: by track (to nest and lay out lanes), then by time.
 */
#include "analysis/export_timeline.h"

#include "util/error.h"
#include "util/jsonw.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Groups: a thread, a GPU stream (or a device's copies), a counter. A    */
/* group becomes one track, or one per lane.                               */
/* ---------------------------------------------------------------------- */

typedef struct group {
    gpufl__export_track_kind_t kind;
    int64_t a, b;   /* thread: tid; GPU: device, stream; counter: device (-1 host), metric */
    unsigned lanes; /* tracks it needs */
    uint32_t base;  /* its first track */
} group_t;

typedef struct group_map {
    uint32_t *slots; /* group index + 1; 0 empty */
    size_t mask;
    group_t *groups;
    size_t n, alloc;
} group_map_t;

static uint64_t key_hash(int kind, int64_t a, int64_t b) {
    uint64_t h = (uint64_t)kind * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)a + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= (uint64_t)b + 0x85EBCA77C2B2AE63ull + (h << 6) + (h >> 2);
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    return h;
}

static int map_grow(group_map_t *gm) {
    size_t n = gm->mask ? (gm->mask + 1) * 2 : 64;
    uint32_t *s = calloc(n, sizeof *s);
    if (!s) return -1;
    for (size_t g = 0; g < gm->n; g++) {
        const group_t *x = &gm->groups[g];
        size_t i = key_hash((int)x->kind, x->a, x->b) & (n - 1);
        while (s[i]) i = (i + 1) & (n - 1);
        s[i] = (uint32_t)g + 1;
    }
    free(gm->slots);
    gm->slots = s;
    gm->mask = n - 1;
    return 0;
}

/* The group of a key, added when new; UINT32_MAX when out of memory. */
static uint32_t group_of(group_map_t *gm, gpufl__export_track_kind_t kind, int64_t a, int64_t b) {
    if ((gm->n + 1) * 2 > gm->mask && map_grow(gm)) return UINT32_MAX;
    size_t i = key_hash((int)kind, a, b) & gm->mask;
    for (;; i = (i + 1) & gm->mask) {
        uint32_t s = gm->slots[i];
        if (!s) break;
        const group_t *x = &gm->groups[s - 1];
        if (x->kind == kind && x->a == a && x->b == b) return s - 1;
    }
    if (gm->n == gm->alloc) {
        size_t n = gm->alloc ? gm->alloc * 2 : 64;
        group_t *g = realloc(gm->groups, n * sizeof *g);
        if (!g) return UINT32_MAX;
        gm->groups = g;
        gm->alloc = n;
    }
    gm->groups[gm->n] = (group_t){kind, a, b, 1, 0};
    gm->slots[i] = (uint32_t)++gm->n;
    return (uint32_t)(gm->n - 1);
}

/* Track order: threads by tid (unknown last), GPU tracks by device and stream
 * (copies last), counters host first, then by device and metric. */
static int group_cmp(const void *pa, const void *pb) {
    const group_t *x = pa, *y = pb;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    int64_t xa = x->a, ya = y->a, xb = x->b, yb = y->b;
    if (x->kind == GPUFL_EXPORT_TRACK_THREAD) {
        uint64_t ux = (uint64_t)xa, uy = (uint64_t)ya; /* -1 (unknown) sorts last */
        return ux < uy ? -1 : ux > uy;
    }
    if (x->kind == GPUFL_EXPORT_TRACK_GPU) {
        if (xa != ya) return xa < ya ? -1 : 1;
        uint64_t ux = (uint64_t)xb ^ (1ull << 63), uy = (uint64_t)yb ^ (1ull << 63);
        if (xb == GPUFL_EXPORT_COPY_STREAM) ux = UINT64_MAX;
        if (yb == GPUFL_EXPORT_COPY_STREAM) uy = UINT64_MAX;
        return ux < uy ? -1 : ux > uy;
    }
    if (xa != ya) return xa < ya ? -1 : 1;
    return xb < yb ? -1 : xb > yb;
}

/* ---------------------------------------------------------------------- */
/* Metrics                                                                  */
/* ---------------------------------------------------------------------- */

static const char *const metric_names[GPUFL_EXPORT_METRICS] = {
    "utilization (%)", "memory used (bytes)", "power (W)",
    "SM clock (MHz)",  "temperature (C)",     "SM active (%)",
    "host CPU (%)",    "process CPU (%)",     "process RSS (bytes)"};

/* 1 when sample i holds a value of metric; the value in *i or *d. */
static int metric_value(const gpufl__model_t *m, unsigned metric, size_t idx, int64_t *iv,
                        double *dv, int *is_double) {
    *is_double = 0;
    if (metric <= GPUFL_EXPORT_GPU_SM_ACTIVE) {
        const gpufl__model_gpu_sample_t *s = &m->gpu_samples[idx];
        switch (metric) {
        case GPUFL_EXPORT_GPU_UTIL: *iv = s->gpu_util_pct; break;
        case GPUFL_EXPORT_GPU_MEM_USED: *iv = s->mem_used_bytes; break;
        case GPUFL_EXPORT_GPU_POWER:
            *is_double = 1;
            *dv = (double)s->power_mw / 1000.0;
            return s->power_mw >= 0;
        case GPUFL_EXPORT_GPU_SM_CLOCK: *iv = s->clock_sm_mhz; break;
        case GPUFL_EXPORT_GPU_TEMP: *iv = s->temp_gpu_c; break;
        default:
            *is_double = 1;
            *dv = s->sm_active_pct;
            return *dv >= 0;
        }
        return *iv >= 0;
    }
    const gpufl__model_host_sample_t *h = &m->samples[idx];
    switch (metric) {
    case GPUFL_EXPORT_HOST_CPU:
        *is_double = 1;
        *dv = h->cpu_pct;
        return *dv >= 0;
    case GPUFL_EXPORT_PROC_CPU:
        *is_double = 1;
        *dv = h->proc_cpu_pct;
        return *dv >= 0;
    default: *iv = h->proc_rss_bytes; return *iv >= 0;
    }
}

int gpufl__export_counter_value(const gpufl__export_timeline_t *tl, const gpufl__export_row_t *r,
                                int64_t *i, double *d) {
    int is_double = 0;
    *i = 0;
    *d = 0;
    metric_value(tl->m, r->metric, r->index, i, d, &is_double);
    return is_double;
}

/* ---------------------------------------------------------------------- */
/* Building                                                                 */
/* ---------------------------------------------------------------------- */

/* Within a group: by start, longer first (so a parent comes before its
 * children); ties keep the order of collection. */
static int row_cmp_group(const gpufl__export_row_t *x, const gpufl__export_row_t *y) {
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return x->end_ns > y->end_ns ? -1 : x->end_ns < y->end_ns;
}

/* The output order: by start; at one time outer slices before inner ones;
 * ties keep track order, then the order on the track. */
static int row_cmp_time(const gpufl__export_row_t *x, const gpufl__export_row_t *y) {
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return x->depth < y->depth ? -1 : x->depth > y->depth;
}

typedef int (*row_cmp_t)(const gpufl__export_row_t *, const gpufl__export_row_t *);

static void merge_runs(const gpufl__export_row_t *a, size_t na, const gpufl__export_row_t *b,
                       size_t nb, gpufl__export_row_t *out, row_cmp_t cmp) {
    size_t i = 0, j = 0, o = 0;
    while (i < na && j < nb) out[o++] = cmp(&b[j], &a[i]) < 0 ? b[j++] : a[i++];
    memcpy(out + o, a + i, (na - i) * sizeof *a);
    memcpy(out + o + na - i, b + j, (nb - j) * sizeof *b);
}

/* Stable natural merge sort of n rows (tmp: room for n). The rows come in
 * long ordered runs (a stream's kernels, a thread's scopes), so merging the
 * runs found costs far less than sorting from scratch; sorted input costs
 * n - 1 comparisons. */
static void sort_rows(gpufl__export_row_t *a, size_t n, gpufl__export_row_t *tmp, row_cmp_t cmp) {
    if (n < 2) return;
    gpufl__export_row_t *src = a, *dst = tmp;
    for (;;) {
        size_t runs = 0;
        for (size_t i = 0; i < n;) {
            size_t j = i + 1, k;
            while (j < n && cmp(&src[j - 1], &src[j]) <= 0) j++;
            if (j == n) {
                if (i == 0) goto copy_back; /* one run: sorted */
                memcpy(dst + i, src + i, (n - i) * sizeof *src);
                runs++;
                break;
            }
            for (k = j + 1; k < n && cmp(&src[k - 1], &src[k]) <= 0; k++) continue;
            merge_runs(src + i, j - i, src + j, k - j, dst + i, cmp);
            runs++;
            i = k;
        }
        gpufl__export_row_t *t = src;
        src = dst;
        dst = t;
        if (runs == 1) break;
    }
copy_back:
    if (src != a) memcpy(a, src, n * sizeof *a);
}

typedef struct builder {
    const gpufl__model_t *m;
    gpufl__export_timeline_t *tl;
    group_map_t gm;
    size_t *stack; /* nesting on one thread group */
    int oom;
} builder_t;

static void add_row(builder_t *b, gpufl__export_kind_t kind, uint32_t group, size_t index,
                    int64_t start, int64_t end, unsigned metric) {
    if (group == UINT32_MAX) {
        b->oom = 1;
        return;
    }
    gpufl__export_row_t *r = &b->tl->rows[b->tl->n_rows++];
    *r = (gpufl__export_row_t){
        start,          end < start ? start : end, group, (uint32_t)index, 0, (uint8_t)kind, 0, 0,
        (uint8_t)metric};
}

static uint32_t thread_group(builder_t *b, int64_t tid) {
    return group_of(&b->gm, GPUFL_EXPORT_TRACK_THREAD, tid < 0 ? GPUFL_MODEL_UNKNOWN : tid, 0);
}

static void collect_rows(builder_t *b) {
    const gpufl__model_t *m = b->m;
    gpufl__export_timeline_t *tl = b->tl;
    for (size_t i = 0; i < m->n_scopes; i++) {
        const gpufl__model_scope_t *s = &m->scopes[i];
        int64_t end = s->end_ns == GPUFL_MODEL_UNKNOWN || s->open ? tl->end_ns : s->end_ns;
        /* NVTX start/end ranges overlap without nesting: a track of their own,
         * spread into lanes, instead of being cut to nest on a thread. */
        uint32_t g = s->source == GPUFL__MODEL_SOURCE_NVTX_START_END
                         ? group_of(&b->gm, GPUFL_EXPORT_TRACK_THREAD, GPUFL_EXPORT_NVTX_TID, 0)
                         : thread_group(b, s->tid);
        add_row(b, GPUFL_EXPORT_SCOPE, g, i, s->begin_ns, end, 0);
    }
    for (size_t i = 0; i < m->n_syncs; i++) {
        const gpufl__model_sync_t *s = &m->syncs[i];
        add_row(b, GPUFL_EXPORT_SYNC, thread_group(b, s->tid), i, s->start_ns, s->end_ns, 0);
    }
    /* Consecutive kernels mostly share a stream: remember the last group. */
    int32_t last_dev = -1;
    int64_t last_stream = 0;
    uint32_t last_group = UINT32_MAX;
    for (size_t i = 0; i < m->n_kernels; i++) {
        const gpufl__model_kernel_t *k = &m->kernels[i];
        if (last_group == UINT32_MAX || k->device != last_dev || k->stream != last_stream) {
            last_group = group_of(&b->gm, GPUFL_EXPORT_TRACK_GPU, k->device, k->stream);
            last_dev = k->device;
            last_stream = k->stream;
        }
        add_row(b, GPUFL_EXPORT_KERNEL, last_group, i, k->start_ns, k->end_ns, 0);
        if (k->launch_ns >= 0) {
            tl->rows[tl->n_rows - 1].flow = 1;
            add_row(b, GPUFL_EXPORT_LAUNCH, thread_group(b, k->tid), i, k->launch_ns,
                    k->launch_ns + GPUFL_EXPORT_LAUNCH_NS, 0);
            tl->rows[tl->n_rows - 1].flow = 1;
            tl->flows++;
        } else {
            tl->no_launch++;
        }
    }
    /* Without kernel rows (engines that time no kernels) the launch calls themselves:
     * instants on the launching thread. */
    for (size_t i = 0; m->n_kernels == 0 && i < m->n_launches; i++) {
        const gpufl__model_launch_t *l = &m->launches[i];
        add_row(b, GPUFL_EXPORT_LAUNCH_CALL, thread_group(b, l->tid), i, l->ts_ns, l->ts_ns, 0);
    }
    for (size_t i = 0; i < m->n_copies; i++) {
        const gpufl__model_copy_t *c = &m->copies[i];
        uint32_t g = group_of(&b->gm, GPUFL_EXPORT_TRACK_GPU, c->device, GPUFL_EXPORT_COPY_STREAM);
        add_row(b, GPUFL_EXPORT_COPY, g, i, c->start_ns, c->end_ns, 0);
    }
    for (size_t i = 0; i < m->n_memsets; i++) {
        const gpufl__model_memset_t *s = &m->memsets[i];
        uint32_t g = group_of(&b->gm, GPUFL_EXPORT_TRACK_GPU, s->device, GPUFL_EXPORT_COPY_STREAM);
        add_row(b, GPUFL_EXPORT_MEMSET, g, i, s->start_ns, s->end_ns, 0);
    }
    int64_t iv;
    double dv;
    int is_double;
    for (size_t i = 0; i < m->n_gpu_samples; i++) {
        const gpufl__model_gpu_sample_t *s = &m->gpu_samples[i];
        for (unsigned k = GPUFL_EXPORT_GPU_UTIL; k <= GPUFL_EXPORT_GPU_SM_ACTIVE; k++) {
            if (!metric_value(m, k, i, &iv, &dv, &is_double)) continue;
            uint32_t g = group_of(&b->gm, GPUFL_EXPORT_TRACK_COUNTER, s->device, k);
            add_row(b, GPUFL_EXPORT_COUNTER, g, i, s->ts_ns, s->ts_ns, k);
        }
    }
    for (size_t i = 0; i < m->n_samples; i++) {
        for (unsigned k = GPUFL_EXPORT_HOST_CPU; k <= GPUFL_EXPORT_PROC_RSS; k++) {
            if (!metric_value(m, k, i, &iv, &dv, &is_double)) continue;
            uint32_t g = group_of(&b->gm, GPUFL_EXPORT_TRACK_COUNTER, -1, k);
            int64_t ts = m->samples[i].ts_ns;
            add_row(b, GPUFL_EXPORT_COUNTER, g, i, ts, ts, k);
        }
    }
}

/* A thread: slices nest; one that outlives its parent is cut at the
 * parent's end. A launch ends where the thread's next slice starts. */
static void nest_group(builder_t *b, gpufl__export_row_t *r, size_t n) {
    size_t sp = 0;
    for (size_t i = 0; i < n; i++) {
        gpufl__export_row_t *x = &r[i];
        if (x->kind == GPUFL_EXPORT_LAUNCH && i + 1 < n && r[i + 1].start_ns < x->end_ns)
            x->end_ns = r[i + 1].start_ns;
        while (sp && r[b->stack[sp - 1]].end_ns <= x->start_ns) sp--;
        if (sp && x->end_ns > r[b->stack[sp - 1]].end_ns) {
            x->end_ns = r[b->stack[sp - 1]].end_ns;
            if (x->kind != GPUFL_EXPORT_LAUNCH) b->tl->clipped++;
        }
        x->depth = sp > 255 ? 255 : (uint8_t)sp;
        b->stack[sp++] = i;
    }
}

/* GPU work (and rows of no known thread): overlap goes to the next free
 * lane; past the last lane, a row starts when the lane frees (clipped). */
static unsigned lane_group(builder_t *b, gpufl__export_row_t *r, size_t n) {
    int64_t lane_end[GPUFL_EXPORT_LANES_MAX];
    unsigned lanes = 0;
    for (size_t i = 0; i < n; i++) {
        gpufl__export_row_t *x = &r[i];
        unsigned l = 0;
        while (l < lanes && lane_end[l] > x->start_ns) l++;
        if (l == lanes && lanes < GPUFL_EXPORT_LANES_MAX) {
            lanes++;
        } else if (l == lanes) {
            l = 0;
            for (unsigned j = 1; j < lanes; j++)
                if (lane_end[j] < lane_end[l]) l = j;
            x->start_ns = lane_end[l];
            if (x->end_ns < x->start_ns) x->end_ns = x->start_ns;
            b->tl->clipped++;
        }
        lane_end[l] = x->end_ns;
        x->lane = (uint16_t)l;
    }
    return lanes ? lanes : 1;
}

static void name_track(const gpufl__export_timeline_t *tl, gpufl__export_track_t *t,
                       unsigned lanes) {
    char lane[32] = "";
    if (lanes > 1 && t->lane > 0) snprintf(lane, sizeof lane, " #%u", t->lane + 1);
    switch (t->kind) {
    case GPUFL_EXPORT_TRACK_THREAD:
        if (t->tid == GPUFL_EXPORT_NVTX_TID)
            snprintf(t->name, sizeof t->name, "NVTX start/end ranges%s", lane);
        else if (t->tid < 0)
            snprintf(t->name, sizeof t->name, "thread unknown%s", lane);
        else
            snprintf(t->name, sizeof t->name, "%sthread %" PRId64,
                     t->tid == tl->pid && tl->pid > 0 ? "main " : "", t->tid);
        break;
    case GPUFL_EXPORT_TRACK_GPU:
        if (t->stream == GPUFL_EXPORT_COPY_STREAM)
            snprintf(t->name, sizeof t->name, "GPU %d copies and memsets%s", (int)t->device, lane);
        else
            snprintf(t->name, sizeof t->name, "GPU %d stream %" PRId64 "%s", (int)t->device,
                     t->stream, lane);
        break;
    default:
        if (t->device < 0)
            snprintf(t->name, sizeof t->name, "%s", metric_names[t->metric]);
        else
            snprintf(t->name, sizeof t->name, "GPU %d %s", (int)t->device, metric_names[t->metric]);
    }
}

static int make_tracks(builder_t *b) {
    gpufl__export_timeline_t *tl = b->tl;
    size_t n = 0;
    for (size_t g = 0; g < b->gm.n; g++) {
        b->gm.groups[g].base = (uint32_t)n;
        n += b->gm.groups[g].lanes;
    }
    tl->tracks = calloc(n ? n : 1, sizeof *tl->tracks);
    if (!tl->tracks) return -1;
    tl->n_tracks = n;
    for (size_t g = 0; g < b->gm.n; g++) {
        const group_t *gr = &b->gm.groups[g];
        for (unsigned l = 0; l < gr->lanes; l++) {
            gpufl__export_track_t *t = &tl->tracks[gr->base + l];
            t->kind = gr->kind;
            t->tid = gr->kind == GPUFL_EXPORT_TRACK_THREAD ? gr->a : GPUFL_MODEL_UNKNOWN;
            t->device = gr->kind == GPUFL_EXPORT_TRACK_THREAD ? -1 : (int32_t)gr->a;
            t->stream = gr->kind == GPUFL_EXPORT_TRACK_GPU ? gr->b : 0;
            t->lane = l;
            t->metric = gr->kind == GPUFL_EXPORT_TRACK_COUNTER ? (gpufl__export_metric_t)gr->b : 0;
            t->metric_is_bytes =
                gr->kind == GPUFL_EXPORT_TRACK_COUNTER &&
                (gr->b == GPUFL_EXPORT_GPU_MEM_USED || gr->b == GPUFL_EXPORT_PROC_RSS);
            size_t idx = gr->base + l;
            /* Real threads keep their id; the others get ids no Linux thread has. */
            t->chrome_tid = t->kind == GPUFL_EXPORT_TRACK_THREAD && t->tid >= 0 && l == 0
                                ? t->tid
                                : (int64_t)(0x40000000 + idx);
            t->sort_index = (int32_t)idx;
            name_track(tl, t, gr->lanes);
        }
    }
    return 0;
}

int gpufl__export_timeline_build(const gpufl__model_t *m, gpufl__export_timeline_t *tl) {
    memset(tl, 0, sizeof *tl);
    tl->m = m;
    tl->pid = m->header.pid > 0 ? m->header.pid : 0;
    snprintf(tl->process_name, sizeof tl->process_name, "%s",
             m->header.app_name[0] ? m->header.app_name : "gpufl session");
    tl->end_ns = m->session_end.present ? m->session_end.ts_ns : m->last_ts_ns;
    if (tl->end_ns < 0) tl->end_ns = 0;

    size_t cap = m->n_scopes + m->n_syncs + 2 * m->n_kernels + m->n_copies + m->n_memsets +
                 (size_t)(GPUFL_EXPORT_GPU_SM_ACTIVE + 1) * m->n_gpu_samples + 3 * m->n_samples +
                 (m->n_kernels ? 0 : m->n_launches);
    if (cap >= UINT32_MAX)
        return gpufl__set_error(GPUFL_ENOMEM, "export: %zu rows are more than one trace holds",
                                cap);
    builder_t b = {m, tl, {0}, NULL, 0};
    gpufl__export_row_t *tmp = NULL;
    tl->rows = malloc((cap ? cap : 1) * sizeof *tl->rows);
    b.stack = malloc((cap ? cap : 1) * sizeof *b.stack);
    if (!tl->rows || !b.stack) goto free_rows;
    collect_rows(&b);
    if (b.oom) goto free_rows;

    /* Put the groups in track order and renumber the rows' groups. */
    uint32_t *order = malloc((b.gm.n ? b.gm.n : 1) * sizeof *order);
    if (!order) goto free_rows;
    for (size_t g = 0; g < b.gm.n; g++) b.gm.groups[g].base = (uint32_t)g; /* old index */
    if (b.gm.n > 1) qsort(b.gm.groups, b.gm.n, sizeof *b.gm.groups, group_cmp); /* NULL when none */
    for (size_t g = 0; g < b.gm.n; g++) order[b.gm.groups[g].base] = (uint32_t)g;
    for (size_t i = 0; i < tl->n_rows; i++) tl->rows[i].track = order[tl->rows[i].track];
    free(order);

    /* By group (counting sort, stable), then each group by time. */
    uint32_t *first = calloc(b.gm.n + 1, sizeof *first);
    tmp = malloc((tl->n_rows ? tl->n_rows : 1) * sizeof *tmp);
    if (!first || !tmp) {
        free(first);
        goto free_rows;
    }
    for (size_t i = 0; i < tl->n_rows; i++) first[tl->rows[i].track + 1]++;
    for (size_t g = 0; g < b.gm.n; g++) first[g + 1] += first[g];
    for (size_t i = 0; i < tl->n_rows; i++) tmp[first[tl->rows[i].track]++] = tl->rows[i];
    free(first);
    gpufl__export_row_t *swap = tl->rows;
    tl->rows = tmp;
    tmp = swap;
    for (size_t i = 0, j; i < tl->n_rows; i = j) {
        uint32_t g = tl->rows[i].track;
        for (j = i; j < tl->n_rows && tl->rows[j].track == g; j++) continue;
        sort_rows(tl->rows + i, j - i, tmp, row_cmp_group);
        group_t *gr = &b.gm.groups[g];
        if (gr->kind == GPUFL_EXPORT_TRACK_GPU ||
            (gr->kind == GPUFL_EXPORT_TRACK_THREAD && gr->a < 0))
            gr->lanes = lane_group(&b, tl->rows + i, j - i);
        else if (gr->kind == GPUFL_EXPORT_TRACK_THREAD)
            nest_group(&b, tl->rows + i, j - i);
    }
    if (make_tracks(&b)) goto free_rows;
    for (size_t i = 0; i < tl->n_rows; i++) {
        gpufl__export_row_t *r = &tl->rows[i];
        r->track = b.gm.groups[r->track].base + r->lane;
        if (r->kind == GPUFL_EXPORT_COUNTER)
            tl->counters++;
        else
            tl->slices++;
    }
    /* Each track is in time order now: merging them gives the output order. */
    sort_rows(tl->rows, tl->n_rows, tmp, row_cmp_time);
    free(tmp);
    free(b.stack);
    free(b.gm.slots);
    free(b.gm.groups);
    return 0;
free_rows:
    free(tmp);
    free(b.stack);
    free(b.gm.slots);
    free(b.gm.groups);
    gpufl__export_timeline_fini(tl);
    return gpufl__set_error(GPUFL_ENOMEM, "export: out of memory for the timeline");
}

void gpufl__export_timeline_fini(gpufl__export_timeline_t *tl) {
    free(tl->rows);
    free(tl->tracks);
    const gpufl__model_t *m = tl->m;
    memset(tl, 0, sizeof *tl);
    tl->m = m;
}

/* ---------------------------------------------------------------------- */
/* Names and arguments                                                      */
/* ---------------------------------------------------------------------- */

/* The names profilers give copies: CUPTI's short forms, which trace viewers
 * users know. */
static const char *copy_name(int32_t kind) {
    switch (kind) {
    case GPUFL_COPY_KIND_HOST_TO_DEVICE: return "Memcpy HtoD";
    case GPUFL_COPY_KIND_DEVICE_TO_HOST: return "Memcpy DtoH";
    case GPUFL_COPY_KIND_HOST_TO_ARRAY: return "Memcpy HtoA";
    case GPUFL_COPY_KIND_ARRAY_TO_HOST: return "Memcpy AtoH";
    case GPUFL_COPY_KIND_ARRAY_TO_ARRAY: return "Memcpy AtoA";
    case GPUFL_COPY_KIND_ARRAY_TO_DEVICE: return "Memcpy AtoD";
    case GPUFL_COPY_KIND_DEVICE_TO_ARRAY: return "Memcpy DtoA";
    case GPUFL_COPY_KIND_DEVICE_TO_DEVICE: return "Memcpy DtoD";
    case GPUFL_COPY_KIND_HOST_TO_HOST: return "Memcpy HtoH";
    case GPUFL_COPY_KIND_PEER: return "Memcpy PtoP";
    default: return "Memcpy";
    }
}

/* The legend's name of a memory kind, "unknown" for a value not known. */
static const char *memory_kind_name(int32_t kind) {
    const char *name = gpufl_memory_kind_name(kind);
    return name ? name : "unknown";
}

const char *gpufl__export_kind_name(gpufl__export_kind_t kind) {
    static const char *const names[] = {"scope",  "sync",   "launch",  "kernel",
                                        "memcpy", "memset", "counter", "launch"};
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

const char *gpufl__export_row_name(const gpufl__export_timeline_t *tl,
                                   const gpufl__export_row_t *r) {
    const gpufl__model_t *m = tl->m;
    const char *s = NULL;
    switch ((gpufl__export_kind_t)r->kind) {
    case GPUFL_EXPORT_SCOPE: s = m->scopes[r->index].name; break;
    case GPUFL_EXPORT_SYNC: s = gpufl__model_sync_name(m->syncs[r->index].sync_type); break;
    case GPUFL_EXPORT_LAUNCH: s = "launch"; break;
    case GPUFL_EXPORT_KERNEL:
        s = m->kernels[r->index].demangled;
        if (!s || !*s) s = m->kernels[r->index].name;
        break;
    case GPUFL_EXPORT_COPY: s = copy_name(m->copies[r->index].copy_kind); break;
    case GPUFL_EXPORT_MEMSET: s = "Memset"; break;
    case GPUFL_EXPORT_COUNTER: s = tl->tracks[r->track].name; break;
    case GPUFL_EXPORT_LAUNCH_CALL: s = gpufl__model_launch_name(m, &m->launches[r->index]); break;
    }
    return s && *s ? s : "?";
}

static void scope_arg(const gpufl__model_t *m, int64_t scope, const gpufl__export_args_t *out) {
    if (scope <= 0) return;
    const gpufl__model_scope_t *s = gpufl__model_scope_find(m, scope);
    if (s && s->path && *s->path) out->str(out->user, "scope", s->path);
}

const char *gpufl__export_site(const gpufl__model_t *m, int64_t stack, char *buf, size_t size) {
    if (stack <= 0) return NULL;
    const gpufl__model_frame_t *f = gpufl__model_stack_site(m, stack);
    if (!f) {
        if (!gpufl__model_stack_find(m, stack)) return NULL;
        snprintf(buf, size, "<driver-internal>");
    } else if (*f->file && f->line > 0) {
        snprintf(buf, size, "%s:%" PRId64 " in %s", f->file, f->line,
                 *f->function ? f->function : "?");
    } else if (*f->function) {
        snprintf(buf, size, "%s in %s", f->function, *f->module ? f->module : "?");
    } else {
        snprintf(buf, size, "%s+0x%" PRIx64, *f->module ? f->module : "?", f->offset);
    }
    return buf;
}

static void site_arg(const gpufl__model_t *m, int64_t stack, const gpufl__export_args_t *out) {
    char buf[1024];
    const char *site = gpufl__export_site(m, stack, buf, sizeof buf);
    if (site) out->str(out->user, "site", site);
}

/* "128x64x1" (printf is too slow for a million kernels). */
static const char *dims(char *buf, int32_t x, int32_t y, int32_t z) {
    char *p = gpufl__fmt_i64(buf, x);
    *p++ = 'x';
    p = gpufl__fmt_i64(p, y);
    *p++ = 'x';
    p = gpufl__fmt_i64(p, z);
    *p = '\0';
    return buf;
}

static void kernel_args(const gpufl__model_t *m, const gpufl__model_kernel_t *k,
                        const gpufl__export_args_t *out) {
    char buf[96];
    out->i64(out->user, "device", k->device);
    out->i64(out->user, "stream", k->stream);
    out->str(out->user, "grid", dims(buf, k->grid_x, k->grid_y, k->grid_z));
    out->str(out->user, "block", dims(buf, k->block_x, k->block_y, k->block_z));
    if (k->registers >= 0) out->i64(out->user, "registers_per_thread", k->registers);
    if (k->static_smem_bytes >= 0) out->i64(out->user, "static_smem_bytes", k->static_smem_bytes);
    if (k->dynamic_smem_bytes >= 0)
        out->i64(out->user, "dynamic_smem_bytes", k->dynamic_smem_bytes);
    if (k->local_bytes_per_thread > 0)
        out->i64(out->user, "local_bytes_per_thread", k->local_bytes_per_thread);
    const gpufl__model_kernel_config_t *c =
        k->config > 0 ? gpufl__model_config_find(m, k->config) : NULL;
    if (c && c->occupancy >= 0) out->dbl(out->user, "occupancy_pct", c->occupancy * 100.0);
    if (c && c->limiter && *c->limiter) out->str(out->user, "limiter", c->limiter);
    if (k->correlation >= 0) out->i64(out->user, "correlation", k->correlation);
    if (k->graph_id > 0) out->i64(out->user, "graph_id", k->graph_id);
    if (k->external_id >= 0) out->i64(out->user, "external_id", k->external_id);
    scope_arg(m, k->scope, out);
    site_arg(m, k->stack, out);
}

void gpufl__export_row_args(const gpufl__export_timeline_t *tl, const gpufl__export_row_t *r,
                            const gpufl__export_args_t *out) {
    const gpufl__model_t *m = tl->m;
    switch ((gpufl__export_kind_t)r->kind) {
    case GPUFL_EXPORT_SCOPE: {
        const gpufl__model_scope_t *s = &m->scopes[r->index];
        if (s->path && *s->path) out->str(out->user, "path", s->path);
        if (s->tag && *s->tag) out->str(out->user, "tag", s->tag);
        if (s->repeat > 0) {
            out->i64(out->user, "repeat", s->repeat);
            out->i64(out->user, "warmup", s->warmup);
        }
        if (s->open) out->i64(out->user, "open", 1);
        if (s->implicit) out->i64(out->user, "implicit_end", 1);
        if (s->source != GPUFL__MODEL_SOURCE_GPUFL) {
            out->str(out->user, "source",
                     s->source == GPUFL__MODEL_SOURCE_NVTX_START_END ? "nvtx_start_end" : "nvtx");
            if (*s->domain) out->str(out->user, "domain", s->domain);
            if (*s->category) out->str(out->user, "category", s->category);
            if (*s->payload) out->str(out->user, "payload", s->payload);
            if (s->source == GPUFL__MODEL_SOURCE_NVTX_START_END) out->i64(out->user, "tid", s->tid);
        }
        break;
    }
    case GPUFL_EXPORT_SYNC: {
        const gpufl__model_sync_t *s = &m->syncs[r->index];
        if (s->stream >= 0) out->i64(out->user, "stream", s->stream);
        if (s->event >= 0) out->i64(out->user, "event", s->event);
        if (s->correlation >= 0) out->i64(out->user, "correlation", s->correlation);
        scope_arg(m, s->scope, out);
        site_arg(m, s->stack, out);
        break;
    }
    case GPUFL_EXPORT_LAUNCH: {
        const gpufl__model_kernel_t *k = &m->kernels[r->index];
        if (k->correlation >= 0) out->i64(out->user, "correlation", k->correlation);
        site_arg(m, k->stack, out);
        break;
    }
    case GPUFL_EXPORT_KERNEL: kernel_args(m, &m->kernels[r->index], out); break;
    case GPUFL_EXPORT_COPY: {
        const gpufl__model_copy_t *c = &m->copies[r->index];
        out->i64(out->user, "bytes", c->bytes);
        out->str(out->user, "src", memory_kind_name(c->src_kind));
        out->str(out->user, "dst", memory_kind_name(c->dst_kind));
        scope_arg(m, c->scope, out);
        break;
    }
    case GPUFL_EXPORT_MEMSET: {
        const gpufl__model_memset_t *s = &m->memsets[r->index];
        out->i64(out->user, "bytes", s->bytes);
        out->str(out->user, "memory", memory_kind_name(s->memory_kind));
        scope_arg(m, s->scope, out);
        break;
    }
    case GPUFL_EXPORT_COUNTER: break;
    case GPUFL_EXPORT_LAUNCH_CALL: {
        const gpufl__model_launch_t *l = &m->launches[r->index];
        if (l->correlation >= 0) out->i64(out->user, "correlation", l->correlation);
        if (l->config > 0) out->i64(out->user, "config", l->config);
        if (l->context >= 0) out->i64(out->user, "context", l->context);
        if (l->external_id >= 0) out->i64(out->user, "external_id", l->external_id);
        scope_arg(m, l->scope, out);
        site_arg(m, l->stack, out);
        break;
    }
    }
}
