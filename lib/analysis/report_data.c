// SPDX-License-Identifier: Apache-2.0
/*
 * report_data.c - computes every section of a session's report once, into
 * the structs of report.h, for all four formats to render; plus the human
 * units the text, Markdown and HTML renderers share.
 *
 * Kernels are grouped by an integer name rank (each distinct name string
 * compared once) with a counting sort, and order statistics come from a
 * selection, not a sort: rendering 1 M kernels stays well under a second.
 */
#include "analysis/report.h"

#include "util/error.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int oom(void) { return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report"); }

#define cat gpufl__report_cat

/* ---------------------------------------------------------------------- */
/* Human units                                                              */
/* ---------------------------------------------------------------------- */

void gpufl__report_sig3(char *buf, size_t size, double v) {
    int decimals = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
    snprintf(buf, size, "%.*f", decimals, v);
}

void gpufl__report_fmt_ns(char *buf, size_t size, double ns) {
    static const double div[] = {1, 1e3, 1e6, 1e9};
    static const char *const unit[] = {"ns", "\xc2\xb5s", "ms", "s"};
    if (ns < 0 || ns != ns) {
        snprintf(buf, size, "?");
        return;
    }
    if (ns == 0) {
        snprintf(buf, size, "0 ns");
        return;
    }
    int i = 0;
    while (i < 3 && ns >= div[i + 1]) i++;
    double v = ns / div[i];
    if (v >= 999.5 && i < 3) v = ns / div[++i]; /* 999.7 ns reads "1.00 µs" */
    char num[20]; /* fits any value a log holds; larger ones are cut, not overrun */
    gpufl__report_sig3(num, sizeof num, v);
    snprintf(buf, size, "%s %s", num, unit[i]);
}

void gpufl__report_fmt_bytes(char *buf, size_t size, double bytes) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 0 || bytes != bytes) {
        snprintf(buf, size, "?");
        return;
    }
    if (bytes < 1000) {
        snprintf(buf, size, "%.0f B", bytes);
        return;
    }
    int i = 0;
    double v = bytes;
    while (i < 5 && v >= 999.5) v /= 1024, i++;
    char num[20]; /* fits any value a log holds; larger ones are cut, not overrun */
    gpufl__report_sig3(num, sizeof num, v);
    snprintf(buf, size, "%s %s", num, unit[i]);
}

void gpufl__report_fmt_pct(char *buf, size_t size, double pct) {
    if (pct < 0 || pct != pct)
        snprintf(buf, size, "?");
    else
        snprintf(buf, size, "%.1f%%", pct);
}

void gpufl__report_fmt_si(char *buf, size_t size, double v, const char *unit) {
    static const char *const prefix[] = {"", "k", "M", "G", "T", "P"};
    int i = 0;
    char num[24];
    while (i < 5 && v >= 999.5) v /= 1000, i++;
    gpufl__report_sig3(num, sizeof num, v);
    snprintf(buf, size, "%s %s%s", num, prefix[i], unit);
}

void gpufl__report_fmt_evidence(char *buf, size_t size, double v, const char *unit) {
    if (v != v || v - v != 0) { /* NaN or infinite */
        snprintf(buf, size, "?");
    } else if (strcmp(unit, "ns") == 0) {
        gpufl__report_fmt_ns(buf, size, v);
    } else if (strcmp(unit, "bytes") == 0) {
        gpufl__report_fmt_bytes(buf, size, v);
    } else if (strcmp(unit, "%") == 0) {
        gpufl__report_fmt_pct(buf, size, v);
    } else if (strcmp(unit, "count") == 0 && v == (double)(int64_t)v) {
        snprintf(buf, size, "%lld", (long long)v);
    } else {
        snprintf(buf, size, "%.4g%s%s", v, *unit ? " " : "", unit);
    }
}

const char *gpufl__report_dir_name(int dir) {
    static const char *const names[GPUFL_REPORT_DIR_COUNT] = {"host\xe2\x86\x92"
                                                              "device",
                                                              "device\xe2\x86\x92"
                                                              "host",
                                                              "device\xe2\x86\x92"
                                                              "device",
                                                              "peer", "other"};
    return dir >= 0 && dir < GPUFL_REPORT_DIR_COUNT ? names[dir] : "?";
}

/* Appends c to buf (of size) at *n when it fits, keeping it terminated. */
static void put_byte(char *buf, size_t size, size_t *n, char c) {
    if (*n + 1 >= size) return;
    buf[(*n)++] = c;
    buf[*n] = '\0';
}

/* Appends the first cols code points of s, control characters as '?'. */
static void put_tag(char *buf, size_t size, size_t *n, const char *s, size_t cols) {
    for (size_t w = 0; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c & 0xc0) != 0x80 && w++ == cols) break;
        put_byte(buf, size, n, c < 0x20 || c == 0x7f ? '?' : (char)c);
    }
}

static size_t code_points(const char *s) {
    size_t w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

void gpufl__report_fmt_calls(char *buf, size_t size, const gpufl__model_scope_path_t *p) {
    if (p->lost)
        snprintf(buf, size, "%zu +%zu lost", p->calls, p->lost);
    else
        snprintf(buf, size, "%zu", p->calls);
}

void gpufl__report_fmt_tags(char *buf, size_t size, const char *const *tags, size_t n) {
    size_t at = 0, width = 0, shown = 0;
    if (!size) return;
    buf[0] = '\0';
    if (!n) {
        cat(buf, size, &at, "-");
        return;
    }
    for (; shown < n; shown++) {
        size_t sep = shown ? 2 : 0, w = code_points(tags[shown]);
        if (width + sep + w > GPUFL_REPORT_TAGS_WIDTH) break;
        if (sep) cat(buf, size, &at, ", ");
        put_tag(buf, size, &at, tags[shown], w);
        width += sep + w;
    }
    if (shown == 0) { /* even the first is too long: its start, cut */
        put_tag(buf, size, &at, tags[0], GPUFL_REPORT_TAGS_WIDTH - 3);
        cat(buf, size, &at, "...");
        if (n > 1) cat(buf, size, &at, " (+%zu more)", n - 1);
    } else if (shown < n) {
        cat(buf, size, &at, ", ... (+%zu more)", n - shown);
    }
}

int gpufl__report_has_limits(const gpufl__model_kernel_config_t *r) {
    return r->limit_warps >= 0 || r->limit_registers >= 0 || r->limit_smem >= 0 ||
           r->limit_blocks >= 0 || *r->limiter;
}

void gpufl__report_fmt_count(char *buf, size_t size, int64_t v) {
    if (v < 0)
        snprintf(buf, size, "?");
    else
        snprintf(buf, size, "%lld", (long long)v);
}

int64_t gpufl__report_stat_count(const json_t *stats, const char *key) {
    int64_t v;
    return gpufl__reader_int(json_object_get(stats, key), &v) == 0 && v >= 0 ? v : -1;
}

json_t *gpufl__report_json_stats(const json_t *stats, const char *const *keys, size_t n) {
    if (!stats) return json_null();
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++) {
        int64_t v = gpufl__report_stat_count(stats, keys[i]);
        json_object_set_new(o, keys[i], v < 0 ? json_null() : json_integer(v));
    }
    return o;
}

void gpufl__report_kconf_cells(const gpufl__report_kconf_t *c, const char *disagrees,
                               char v[GPUFL_REPORT_KCONF_CELLS][GPUFL_REPORT_KCONF_CELL_BYTES]) {
    const gpufl__model_kernel_t *k = c->first;
    const gpufl__model_kernel_config_t *r = c->rec;
    char b1[24], b2[24], l[4][24];
    for (int i = 0; i < GPUFL_REPORT_KCONF_CELLS; i++) snprintf(v[i], sizeof v[i], "-");
    if (c->config >= 0) snprintf(v[0], sizeof v[0], "%lld%s", (long long)c->config, r ? "" : "?");
    snprintf(v[1], sizeof v[1], "%zu", c->calls);
    gpufl__report_fmt_ns(v[2], sizeof v[2], c->total_ns);
    if (c->same_grid)
        snprintf(v[3], sizeof v[3], "%dx%dx%d", k->grid_x, k->grid_y, k->grid_z);
    else
        snprintf(v[3], sizeof v[3], "various");
    if (c->same_block)
        snprintf(v[4], sizeof v[4], "%dx%dx%d", k->block_x, k->block_y, k->block_z);
    else
        snprintf(v[4], sizeof v[4], "various");
    snprintf(v[5], sizeof v[5], "%d", k->registers);
    gpufl__report_fmt_bytes(b1, sizeof b1, (double)k->static_smem_bytes);
    gpufl__report_fmt_bytes(b2, sizeof b2, (double)k->dynamic_smem_bytes);
    snprintf(v[6], sizeof v[6], "%s + %s", b1, c->same_dsmem ? b2 : "various");
    gpufl__report_fmt_bytes(v[7], sizeof v[7], (double)k->local_bytes_per_thread);
    if (r && r->occupancy >= 0) gpufl__report_fmt_pct(v[8], sizeof v[8], 100.0 * r->occupancy);
    if (r && !*r->occupancy_why) {
        gpufl__report_fmt_count(b1, sizeof b1, r->active_warps);
        gpufl__report_fmt_count(b2, sizeof b2, r->max_warps);
        snprintf(v[9], sizeof v[9], "%s/%s", b1, b2);
    }
    if (r && gpufl__report_has_limits(r)) {
        gpufl__report_fmt_count(l[0], sizeof l[0], r->limit_warps);
        gpufl__report_fmt_count(l[1], sizeof l[1], r->limit_registers);
        gpufl__report_fmt_count(l[2], sizeof l[2], r->limit_smem);
        gpufl__report_fmt_count(l[3], sizeof l[3], r->limit_blocks);
        snprintf(v[10], sizeof v[10], "%s/%s/%s/%s", l[0], l[1], l[2], l[3]);
        snprintf(v[11], sizeof v[11], "%s%s", *r->limiter ? r->limiter : "?",
                 r->breakdown_agrees == 0 ? disagrees : "");
    }
}

void gpufl__report_lgroup_cells(const gpufl__report_lgroup_t *g,
                                char v[GPUFL_REPORT_LGROUP_CELLS][GPUFL_REPORT_KCONF_CELL_BYTES]) {
    const gpufl__model_kernel_config_t *r = g->rec;
    char b1[24], b2[24];
    for (int i = 0; i < GPUFL_REPORT_LGROUP_CELLS; i++) snprintf(v[i], sizeof v[i], "-");
    if (g->config >= 0) snprintf(v[0], sizeof v[0], "%lld%s", (long long)g->config, r ? "" : "?");
    snprintf(v[1], sizeof v[1], "%zu", g->launches);
    snprintf(v[2], sizeof v[2], "%zu", g->scopes);
    if (!r) return;
    if (r->block_threads >= 0) snprintf(v[3], sizeof v[3], "%lld", (long long)r->block_threads);
    if (r->registers >= 0) snprintf(v[4], sizeof v[4], "%lld", (long long)r->registers);
    if (r->static_smem_bytes >= 0 || r->dynamic_smem_bytes >= 0) {
        gpufl__report_fmt_bytes(b1, sizeof b1,
                                r->static_smem_bytes > 0 ? (double)r->static_smem_bytes : 0);
        gpufl__report_fmt_bytes(b2, sizeof b2,
                                r->dynamic_smem_bytes > 0 ? (double)r->dynamic_smem_bytes : 0);
        snprintf(v[5], sizeof v[5], "%s + %s", b1, b2);
    }
    if (r->occupancy >= 0) gpufl__report_fmt_pct(v[6], sizeof v[6], 100.0 * r->occupancy);
    if (*r->limiter) snprintf(v[7], sizeof v[7], "%s", r->limiter);
}

/* ---------------------------------------------------------------------- */
/* Statistics                                                               */
/* ---------------------------------------------------------------------- */

static void st_add(gpufl__report_stat_t *a, double v) {
    if (v < 0) return;
    if (a->n == 0 || v > a->max) a->max = v;
    if (a->n == 0 || v < a->min) a->min = v;
    a->sum += v;
    a->n++;
}

static void ct_add(gpufl__report_counter_t *c, int64_t ts, int64_t v) {
    if (v < 0) return;
    if (c->n == 0 || ts < c->first_ts) c->first = v, c->first_ts = ts;
    if (c->n == 0 || ts >= c->last_ts) c->last = v, c->last_ts = ts;
    c->n++;
}

/* ---------------------------------------------------------------------- */
/* Summary and capabilities                                                 */
/* ---------------------------------------------------------------------- */

static const char *or_unknown(const char *s) { return s && *s ? s : "?"; }

/*
 * One fact of the capabilities record about `kind` ("backend", "engine"):
 * field is "requested", "running" or "reason". Reads the flat form the writer
 * uses (backend_requested, backend, backend_reason) and a nested one
 * (backend: {requested, running, reason}).
 */
static const char *cap_fact(const json_t *caps, const char *kind, const char *field) {
    if (!caps) return NULL;
    json_t *nested = json_object_get(caps, kind);
    const char *alt = strcmp(field, "reason") == 0 ? "why" : NULL;
    if (json_is_object(nested)) {
        const char *s = gpufl__model_json_str(nested, field);
        if (!s && alt) s = gpufl__model_json_str(nested, alt);
        return s;
    }
    if (strcmp(field, "running") == 0)
        return json_is_string(nested) ? json_string_value(nested) : NULL;
    char key[64];
    snprintf(key, sizeof key, "%s_%s", kind, field);
    const char *s = gpufl__model_json_str(caps, key);
    if (!s && alt) {
        snprintf(key, sizeof key, "%s_%s", kind, alt);
        s = gpufl__model_json_str(caps, key);
    }
    return s;
}

/* Why a feature is off ("why" or "reason" of features.<name>), or NULL. */
static const char *feature_why(const json_t *caps, const char *name) {
    json_t *fs = caps ? json_object_get(caps, "features") : NULL;
    json_t *f = json_is_object(fs) ? json_object_get(fs, name) : NULL;
    const char *why = gpufl__model_json_str(f, "why");
    return why ? why : gpufl__model_json_str(f, "reason");
}

/* Why the backend or engine runs as it does: its own reason, else the reason
 * the feature it stands for is off (nvml for the backend, cupti_trace for an
 * engine above Monitor that did not start). */
static const char *cap_reason(const json_t *caps, const char *kind) {
    const char *why = cap_fact(caps, kind, "reason");
    if (why && *why) return why;
    const char *req = cap_fact(caps, kind, "requested");
    const char *run = cap_fact(caps, kind, "running");
    if (strcmp(kind, "backend") == 0) {
        if (run && strcasecmp(run, "none") == 0) return feature_why(caps, "nvml");
    } else if (req && run && strcmp(req, run) != 0) {
        return feature_why(caps, "cupti_trace");
    }
    return NULL;
}

static gpufl__report_cap_t read_cap(const json_t *caps, const char *kind) {
    const char *why = cap_reason(caps, kind);
    return (gpufl__report_cap_t){cap_fact(caps, kind, "requested"), cap_fact(caps, kind, "running"),
                                 why && *why ? why : NULL};
}

static int cmp_feature(const void *a, const void *b) {
    return strcmp(((const gpufl__report_feature_t *)a)->name,
                  ((const gpufl__report_feature_t *)b)->name);
}

static int feature_on(const json_t *v) {
    if (json_is_boolean(v)) return json_is_true(v);
    if (json_is_integer(v)) return json_integer_value(v) != 0;
    return -1;
}

/* Reads one feature entry: a boolean, or an object {on|enabled, why|reason}. */
static int read_feature(const char *name, const json_t *v, gpufl__report_feature_t *f) {
    f->name = name;
    f->reason = NULL;
    f->on = feature_on(v);
    if (json_is_object(v)) {
        f->on = feature_on(json_object_get(v, "on"));
        if (f->on < 0) f->on = feature_on(json_object_get(v, "enabled"));
        f->reason = gpufl__model_json_str(v, "why");
        if (!f->reason) f->reason = gpufl__model_json_str(v, "reason");
        if (f->reason && !*f->reason) f->reason = NULL;
    }
    return f->name && f->on >= 0;
}

static int build_features(const json_t *caps, gpufl__report_summary_t *s) {
    json_t *fs = caps ? json_object_get(caps, "features") : NULL;
    size_t n = json_is_object(fs)  ? json_object_size(fs)
               : json_is_array(fs) ? json_array_size(fs)
                                   : 0;
    if (!n) return 0;
    gpufl__report_feature_t *list = calloc(n, sizeof *list);
    if (!list) return oom();
    size_t k = 0;
    if (json_is_object(fs)) {
        const char *key;
        json_t *v;
        json_object_foreach(fs, key, v) k += (size_t)read_feature(key, v, &list[k]);
    } else {
        for (size_t i = 0; i < n; i++) {
            json_t *v = json_array_get(fs, i);
            k += (size_t)read_feature(gpufl__model_json_str(v, "name"), v, &list[k]);
        }
    }
    qsort(list, k, sizeof *list, cmp_feature);
    s->features = list;
    s->n_features = k;
    return 0;
}

typedef struct ts_ref {
    int64_t ts;
    size_t idx;
} ts_ref_t;

static int cmp_ts_ref(const void *a, const void *b) {
    const ts_ref_t *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int build_summary(const gpufl__model_t *m, gpufl__report_summary_t *s) {
    const gpufl__model_header_t *h = &m->header;
    const json_t *hi = m->host_info;
    s->app = or_unknown(h->app_name);
    s->session_id = or_unknown(h->session_id);
    s->hostname = *h->hostname ? h->hostname : or_unknown(gpufl__model_json_str(hi, "hostname"));
    s->gpufl_version = or_unknown(h->gpufl_version);
    s->has_host_info = hi != NULL;
    s->cpu_count = s->mem_total_bytes = s->cgroup_version = -1;
    int64_t v;
    if (gpufl__reader_int(json_object_get(hi, "cpu_count"), &v) == 0) s->cpu_count = v;
    if (gpufl__reader_int(json_object_get(hi, "mem_total_bytes"), &v) == 0) s->mem_total_bytes = v;
    if (gpufl__reader_int(json_object_get(hi, "cgroup_version"), &v) == 0 && v > 0)
        s->cgroup_version = v;
    s->kernel_release = gpufl__model_json_str(hi, "kernel");
    if (!s->kernel_release) s->kernel_release = gpufl__model_json_str(hi, "kernel_release");
    s->pid = h->pid >= 0 ? h->pid : -1;
    s->start_unix_us = h->epoch_unix_us >= 0 ? h->epoch_unix_us : -1;
    const gpufl__model_session_end_t *e = &m->session_end;
    s->ended = e->present;
    s->duration_ns = e->present           ? (e->duration_ns >= 0 ? e->duration_ns : e->ts_ns)
                     : m->last_ts_ns >= 0 ? m->last_ts_ns
                                          : -1;
    s->has_caps = m->capabilities != NULL;
    if (s->has_caps) {
        s->backend = read_cap(m->capabilities, "backend");
        s->engine = read_cap(m->capabilities, "engine");
        if (build_features(m->capabilities, s)) return GPUFL_ENOMEM;
    }
    for (size_t i = 0; i < m->n_windows; i++) {
        if (m->windows[i].is_stop)
            s->window_stops++;
        else
            s->window_starts++;
    }
    const gpufl__model_drops_t *d = &m->drops;
    const gpufl__report_drop_t drops[5] = {{"records", d->records},
                                           {"threads_unbuffered", d->threads_unbuffered},
                                           {"names_truncated", d->names_truncated},
                                           {"unbalanced_ends", d->unbalanced_ends},
                                           {"depth_overflow", d->depth_overflow}};
    for (size_t i = 0; d->present && i < 5; i++)
        if (drops[i].count > 0) s->drops[s->n_drops++] = drops[i];
    for (size_t i = 0; i < m->n_events; i++) {
        if (m->events[i].level >= GPUFL_MODEL_LEVEL_WARN)
            s->warn_events++;
        else
            s->other_events++;
    }
    if (s->warn_events) {
        ts_ref_t *refs = malloc(s->warn_events * sizeof *refs);
        s->warn_order = malloc(s->warn_events * sizeof *s->warn_order);
        if (!refs || !s->warn_order) {
            free(refs);
            return oom();
        }
        size_t n = 0;
        for (size_t i = 0; i < m->n_events; i++)
            if (m->events[i].level >= GPUFL_MODEL_LEVEL_WARN)
                refs[n++] = (ts_ref_t){m->events[i].ts_ns, i};
        qsort(refs, n, sizeof *refs, cmp_ts_ref);
        for (size_t i = 0; i < n; i++) s->warn_order[i] = refs[i].idx;
        free(refs);
    }
    for (int f = 0; f < GPUFL_LOG_FILE_COUNT; f++) s->log_files += m->read.segments[f];
    s->problems = m->n_warnings + (size_t)m->warnings_over_cap;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Scope trees                                                              */
/* ---------------------------------------------------------------------- */

typedef struct node_key {
    long parent;
    double key;
    const char *path;
    size_t node;
} node_key_t;

/* Siblings: larger key first, then by path. */
static int cmp_node_key(const void *a, const void *b) {
    const node_key_t *x = a, *y = b;
    if (x->parent != y->parent) return x->parent < y->parent ? -1 : 1;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return strcmp(x->path, y->path);
}

/* Orders the scope paths parents first, depth first, siblings by key[]
 * (larger first): fills order[] with indexes into m->scope_paths. */
static int tree_order(const gpufl__model_t *m, const double *key, size_t *order) {
    size_t n = m->n_scope_paths;
    if (!n) return 0;
    node_key_t *keys = malloc(n * sizeof *keys);
    size_t *first = malloc((n + 1) * sizeof *first); /* first key of each parent's run */
    size_t *count = calloc(n + 1, sizeof *count);
    size_t *stack = malloc(n * sizeof *stack);
    int rc = 0;
    if (!keys || !first || !count || !stack) {
        rc = oom();
        goto free_temp;
    }
    for (size_t i = 0; i < n; i++)
        keys[i] = (node_key_t){m->scope_paths[i].parent, key[i], m->scope_paths[i].path, i};
    qsort(keys, n, sizeof *keys, cmp_node_key);
    /* Slot 0 holds the roots, slot p+1 the children of path p. */
    for (size_t i = n; i-- > 0;) {
        size_t slot = (size_t)(keys[i].parent + 1);
        first[slot] = i;
        count[slot]++;
    }
    size_t top = 0, out = 0;
    for (size_t i = count[0]; i-- > 0;) stack[top++] = keys[first[0] + i].node;
    while (top) {
        size_t nd = stack[--top];
        order[out++] = nd;
        size_t slot = nd + 1;
        for (size_t i = count[slot]; i-- > 0;) stack[top++] = keys[first[slot] + i].node;
    }
free_temp:
    free(keys);
    free(first);
    free(count);
    free(stack);
    return rc;
}

static void fill_row(gpufl__report_scope_row_t *row, const gpufl__model_scope_path_t *p) {
    row->path = p;
    row->avg_ns = p->calls ? p->total_ns / (double)p->calls : -1;
    row->per_iter_ns = p->bench_iters > 0 ? p->bench_total_ns / p->bench_iters : -1;
    row->tags = NULL;
    row->n_tags = 0;
}

typedef struct path_tag {
    size_t path;
    const char *tag;
} path_tag_t;

/* Numbers inside tags compare by value, so step=2 comes before step=10; tags
 * equal that way ("01", "1") fall back to their bytes, so distinct ones stay
 * distinct. */
int gpufl__report_cmp_natural(const char *a, const char *b) {
    const char *x = a, *y = b;
    while (*x && *y) {
        if (isdigit((unsigned char)*x) && isdigit((unsigned char)*y)) {
            while (*x == '0') x++;
            while (*y == '0') y++;
            size_t nx = 0, ny = 0;
            while (isdigit((unsigned char)x[nx])) nx++;
            while (isdigit((unsigned char)y[ny])) ny++;
            if (nx != ny) return nx < ny ? -1 : 1;
            int c = memcmp(x, y, nx);
            if (c) return c;
            x += nx, y += ny;
        } else {
            if (*x != *y) return (unsigned char)*x < (unsigned char)*y ? -1 : 1;
            x++, y++;
        }
    }
    if (*x || *y) return *x ? 1 : -1;
    return strcmp(a, b);
}

static int cmp_path_tag(const void *a, const void *b) {
    const path_tag_t *x = a, *y = b;
    if (x->path != y->path) return x->path < y->path ? -1 : 1;
    return gpufl__report_cmp_natural(x->tag, y->tag);
}

/* The distinct non-empty tags of every scope path, into sc->tags, and each
 * timing row's run of them. */
static int build_tags(const gpufl__model_t *m, gpufl__report_scopes_t *sc) {
    size_t n = 0, np = m->n_scope_paths, k = 0;
    for (size_t i = 0; i < m->n_scopes; i++) n += *m->scopes[i].tag && m->scopes[i].path_index < np;
    if (!n) return 0;
    path_tag_t *pt = malloc(n * sizeof *pt);
    size_t *first = calloc(np, sizeof *first), *count = calloc(np, sizeof *count);
    sc->tags = malloc(n * sizeof *sc->tags);
    int rc = 0;
    if (!pt || !first || !count || !sc->tags) {
        rc = oom();
        goto free_temp;
    }
    for (size_t i = 0; i < m->n_scopes; i++) {
        const gpufl__model_scope_t *s = &m->scopes[i];
        if (*s->tag && s->path_index < np) pt[k++] = (path_tag_t){s->path_index, s->tag};
    }
    qsort(pt, n, sizeof *pt, cmp_path_tag);
    k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && cmp_path_tag(&pt[i - 1], &pt[i]) == 0) continue;
        if (!count[pt[i].path]) first[pt[i].path] = k;
        count[pt[i].path]++;
        sc->tags[k++] = pt[i].tag;
    }
    for (size_t i = 0; i < sc->n_rows; i++) {
        size_t p = (size_t)(sc->rows[i].path - m->scope_paths);
        sc->rows[i].tags = sc->tags + first[p];
        sc->rows[i].n_tags = count[p];
    }
free_temp:
    free(pt);
    free(first);
    free(count);
    return rc;
}

static int build_scopes(const gpufl__model_t *m, gpufl__report_t *r) {
    size_t n = m->n_scope_paths;
    if (!n) return 0;
    double *key = malloc(n * sizeof *key);
    size_t *order = malloc(n * sizeof *order);
    r->scopes.rows = malloc(n * sizeof *r->scopes.rows);
    int rc = 0;
    if (!key || !order || !r->scopes.rows) {
        rc = oom();
        goto free_temp;
    }
    for (size_t i = 0; i < n; i++) {
        const gpufl__model_scope_path_t *p = &m->scope_paths[i];
        key[i] = p->total_ns;
        r->scopes.bench += p->bench_iters > 0;
        r->scopes.closed += p->calls;
        r->scopes.implicit += p->implicit;
    }
    rc = tree_order(m, key, order);
    if (rc) goto free_temp;
    for (size_t k = 0; k < n; k++) fill_row(&r->scopes.rows[k], &m->scope_paths[order[k]]);
    r->scopes.n_rows = n;
    for (size_t i = 0; i < m->n_scopes && r->scopes.n_open < GPUFL_REPORT_LIST_MAX; i++)
        if (m->scopes[i].open) r->scopes.open[r->scopes.n_open++] = &m->scopes[i];
    rc = build_tags(m, &r->scopes);
free_temp:
    free(key);
    free(order);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Damaged lines and what went with them                                    */
/* ---------------------------------------------------------------------- */

static int cmp_lost_by_path(const void *a, const void *b) {
    const gpufl__model_scope_t *x = *(const gpufl__model_scope_t *const *)a;
    const gpufl__model_scope_t *y = *(const gpufl__model_scope_t *const *)b;
    return strcmp(x->path, y->path);
}

/* A path of lost scopes: its string, how many, and the smallest id (scopes
 * are numbered as they begin: paths are listed in the order they began). */
typedef struct lost_path {
    const char *path;
    size_t count;
    int64_t first_id;
} lost_path_t;

static int cmp_lost_path(const void *a, const void *b) {
    const lost_path_t *x = a, *y = b;
    return x->first_id < y->first_id ? -1 : x->first_id > y->first_id;
}

/* The scope section's line on scope ends with no begin: each path they had
 * once, with its count, in the order they began (the first
 * GPUFL_REPORT_LIST_MAX), and how many had no name left. */
static int build_lost_scopes(const gpufl__model_t *m, gpufl__report_scopes_t *sc) {
    size_t n = 0, total = m->n_lost_scopes, named = 0, paths = 0;
    char *buf = sc->lost;
    size_t size = sizeof sc->lost;
    if (!total) return 0;
    const gpufl__model_scope_t **by_path = malloc(total * sizeof *by_path);
    lost_path_t *groups = malloc(total * sizeof *groups);
    if (!by_path || !groups) {
        free(by_path);
        free(groups);
        return oom();
    }
    const char *pathless[GPUFL_REPORT_LIST_MAX];
    size_t n_pathless = 0;
    for (size_t i = 0; i < total; i++) {
        const gpufl__model_scope_t *s = &m->lost_scopes[i];
        const char *name = s->name_id > 0 ? gpufl__model_str(m, s->name_id) : NULL;
        if (s->path)
            by_path[named++] = s;
        else if (name && *name && n_pathless < GPUFL_REPORT_LIST_MAX)
            pathless[n_pathless++] = name;
        else if (name && *name)
            n_pathless++;
    }
    sc->lost_total = total;
    sc->lost_pathless = n_pathless;
    sc->lost_unnamed = total - named - n_pathless;
    qsort(by_path, named, sizeof *by_path, cmp_lost_by_path);
    for (size_t i = 0; i < named; i++) {
        if (i == 0 || strcmp(by_path[i - 1]->path, by_path[i]->path) != 0)
            groups[paths++] = (lost_path_t){by_path[i]->path, 0, by_path[i]->id};
        lost_path_t *g = &groups[paths - 1];
        if (by_path[i]->id < g->first_id) g->first_id = by_path[i]->id;
        g->count++;
    }
    qsort(groups, paths, sizeof *groups, cmp_lost_path);
    sc->n_lost_paths = paths;
    for (size_t k = 0; k < paths && k < GPUFL_REPORT_LIST_MAX; k++) {
        sc->lost_paths[k] = groups[k].path;
        sc->lost_counts[k] = groups[k].count;
    }
    cat(buf, size, &n, "%zu scope end%s had no begin ", total, total == 1 ? "" : "s");
    if (m->damaged_scope_lines == 1)
        cat(buf, size, &n, "(lost with the damaged line in scope.log)");
    else if (m->damaged_scope_lines)
        cat(buf, size, &n, "(lost with %llu damaged lines in scope.log)",
            (unsigned long long)m->damaged_scope_lines);
    else
        cat(buf, size, &n, "(their scope_begin rows are not in the log)");
    for (size_t k = 0; k < paths && k < GPUFL_REPORT_LIST_MAX; k++) {
        cat(buf, size, &n, "%s %s", k ? "," : ":", groups[k].path);
        if (groups[k].count > 1) cat(buf, size, &n, " (%zu)", groups[k].count);
    }
    if (paths > GPUFL_REPORT_LIST_MAX)
        cat(buf, size, &n, ", and %zu more path%s", paths - GPUFL_REPORT_LIST_MAX,
            paths - GPUFL_REPORT_LIST_MAX == 1 ? "" : "s");
    /* What is missing: the name itself, or only the path above it. */
    if (sc->lost_unnamed == total)
        cat(buf, size, &n, "; no name left for them");
    else if (sc->lost_unnamed)
        cat(buf, size, &n, "; %zu with no name left", sc->lost_unnamed);
    if (n_pathless) {
        cat(buf, size, &n,
            "; %zu with a name but no path (the begin above %s was lost too):", n_pathless,
            n_pathless == 1 ? "it" : "them");
        for (size_t k = 0; k < n_pathless && k < GPUFL_REPORT_LIST_MAX; k++)
            cat(buf, size, &n, "%s %s", k ? "," : "", pathless[k]);
        if (n_pathless > GPUFL_REPORT_LIST_MAX) cat(buf, size, &n, ", ...");
    }
    free(by_path);
    free(groups);
    return 0;
}

/* One file segment's damaged lines, from m->damaged[*next] on (the kept
 * lines come in file order, so a segment's are together), into buf. */
static void damage_line(const gpufl__model_t *m, size_t *next, char *buf, size_t size) {
    enum { LINES_LISTED = 5 };
    size_t n = 0, i = *next, end = i, unknown = 0, at_least = 0;
    const char *file = m->damaged[i].file;
    uint64_t rows = 0;
    while (end < m->n_damaged && strcmp(m->damaged[end].file, file) == 0) {
        const gpufl__model_damage_t *d = &m->damaged[end++];
        if (d->rows < 0)
            unknown++;
        else
            rows += (uint64_t)d->rows, at_least += !d->rows_exact;
    }
    size_t lines = end - i;
    cat(buf, size, &n, "%zu damaged line%s in %s (line%s", lines, lines == 1 ? "" : "s", file,
        lines == 1 ? "" : "s");
    for (size_t k = i; k < end && k < i + LINES_LISTED; k++)
        cat(buf, size, &n, "%s %llu", k > i ? "," : "", (unsigned long long)m->damaged[k].line);
    if (lines > LINES_LISTED) cat(buf, size, &n, ", ...");
    if (unknown == lines)
        cat(buf, size, &n, "; rows unknown)");
    else
        cat(buf, size, &n, "; %s%llu row%s lost%s)", at_least ? "at least " : "",
            (unsigned long long)rows, rows == 1 ? "" : "s",
            unknown ? ", the rows of the others unknown" : "");
    *next = end;
}

/* The summary's lines on damaged lines: one per file segment, the last one
 * for the rest when there are more (or when some were not kept). */
static void build_damage(const gpufl__model_t *m, gpufl__report_summary_t *s) {
    size_t next = 0;
    while (next < m->n_damaged && s->n_damage < GPUFL_REPORT_DAMAGE_LINES) {
        size_t from = next;
        damage_line(m, &next, s->damage[s->n_damage], sizeof s->damage[0]);
        if (s->n_damage == GPUFL_REPORT_DAMAGE_LINES - 1 && m->damaged_lines > next) {
            next = from; /* the last line says how many more */
            break;
        }
        s->n_damage++;
    }
    s->damage_lines = m->damaged_lines;
    s->damage_rows_unknown = m->damaged_lines - m->n_damaged; /* past the cap: not kept */
    for (size_t i = 0; i < m->n_damaged; i++) {
        const gpufl__model_damage_t *d = &m->damaged[i];
        if (d->rows < 0)
            s->damage_rows_unknown++;
        else
            s->damage_rows += (uint64_t)d->rows, s->damage_rows_at_least |= !d->rows_exact;
    }
    uint64_t rest = m->damaged_lines - next;
    if (rest)
        snprintf(s->damage[s->n_damage++], sizeof s->damage[0], "and %llu more damaged line%s",
                 (unsigned long long)rest, rest == 1 ? "" : "s");
}

const char *gpufl__report_scope_label(const gpufl__model_scope_path_t *p, char *buf, size_t size) {
    if (p->source == GPUFL__MODEL_SOURCE_GPUFL) return p->name;
    snprintf(buf, size, "%s [nvtx%s%s%s]", p->name, *p->domain ? ":" : "", p->domain,
             p->source == GPUFL__MODEL_SOURCE_NVTX_START_END ? " start/end" : "");
    return buf;
}

static int has_work(const gpufl__model_gpu_work_t *w) {
    return w->kernels + w->copies + w->memsets > 0;
}

static int build_scope_gpu(const gpufl__model_t *m, gpufl__report_t *r) {
    if (!m->n_kernels && !m->n_copies && !m->n_memsets) return 0;
    if (!m->gpu_scoped_rows && !m->n_scope_paths) return 0; /* nothing to attribute to */
    r->scope_gpu_shown = 1;
    r->unattributed = -1;
    int start_end_work = 0; /* NVTX start/end ranges get work no row names */
    for (size_t i = 0; i < m->n_scope_paths; i++)
        start_end_work |= m->scope_paths[i].source == GPUFL__MODEL_SOURCE_NVTX_START_END &&
                          has_work(&m->scope_paths[i].gpu.self);
    if (!m->gpu_scoped_rows && !start_end_work) return 0;
    int64_t lost;
    if (gpufl__reader_int(json_object_get(m->trace_stats, "unattributed"), &lost) == 0)
        r->unattributed = lost;
    size_t n = m->n_scope_paths;
    double *key = malloc((n ? n : 1) * sizeof *key); /* n is 0 when scope.log is missing */
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    r->scope_gpu_rows = malloc((n ? n : 1) * sizeof *r->scope_gpu_rows);
    int rc = 0;
    if (!key || !order || !r->scope_gpu_rows) {
        rc = oom();
        goto free_temp;
    }
    for (size_t i = 0; i < n; i++) {
        const gpufl__model_scope_path_t *p = &m->scope_paths[i];
        key[i] = gpufl__model_gpu_ns(&p->gpu.total);
        /* A start/end range's work is also where its rows' scope puts it: an
         * overlay, left out of the sum so that the sum is the session's. */
        if (p->source == GPUFL__MODEL_SOURCE_NVTX_START_END)
            r->scope_gpu_start_end++;
        else
            r->gpu_in_scopes_ns += gpufl__model_gpu_ns(&p->gpu.self);
        r->scope_gpu_hidden += !has_work(&p->gpu.total);
    }
    r->gpu_all_ns = r->gpu_in_scopes_ns + gpufl__model_gpu_ns(&m->gpu_no_scope.self) +
                    gpufl__model_gpu_ns(&m->gpu_unknown_scope.self);
    rc = tree_order(m, key, order);
    if (rc) goto free_temp;
    for (size_t k = 0; k < n; k++) {
        const gpufl__model_scope_path_t *p = &m->scope_paths[order[k]];
        if (has_work(&p->gpu.total)) fill_row(&r->scope_gpu_rows[r->n_scope_gpu_rows++], p);
    }
free_temp:
    free(key);
    free(order);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* System metrics and GPU devices                                           */
/* ---------------------------------------------------------------------- */

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* What bounds the CPU figures (docs/log-format.md, host_info). */
static void cpu_bounds(const gpufl__model_t *m, gpufl__report_system_t *s) {
    const json_t *hi = m->host_info;
    int64_t v;
    s->cpus = s->cpu_min_interval_ns = -1;
    if (gpufl__reader_int(json_object_get(hi, "cpus_allowed"), &v) == 0 && v > 0)
        s->cpus = v;
    else if (gpufl__reader_int(json_object_get(hi, "cpu_count"), &v) == 0 && v > 0)
        s->cpus = v;
    if (gpufl__reader_int(json_object_get(hi, "cpu_min_interval_ns"), &v) == 0 && v > 0)
        s->cpu_min_interval_ns = v;
    s->clock_ticks_per_s = -1;
    if (gpufl__reader_int(json_object_get(hi, "clock_ticks_per_s"), &v) == 0 && v > 0)
        s->clock_ticks_per_s = v;
    if (s->cpu_min_interval_ns > 0)
        snprintf(s->cpu_why, sizeof s->cpu_why, "a figure needs %.0f ms",
                 (double)s->cpu_min_interval_ns / 1e6);
}

/* The CPU statistics with no figure at all, and why: the samples span less
 * than the figures' interval, or (a log without that interval) just that. A
 * cgroup statistic counts only where the log has a cgroup. */
static void cpu_none(const gpufl__model_t *m, gpufl__report_system_t *s) {
    int64_t v;
    int cgroup =
        s->st[GPUFL_RH_CG_MEM].n ||
        (gpufl__reader_int(json_object_get(m->host_info, "cgroup_version"), &v) == 0 && v > 0);
    const char *names[3];
    size_t k = 0, n = 0;
    if (!s->n) return;
    if (!s->st[GPUFL_RH_CPU].n) names[k++] = "host";
    if (!s->st[GPUFL_RH_PROC_CPU].n) names[k++] = "process";
    if (cgroup && !s->st[GPUFL_RH_CG_CPU].n) names[k++] = "cgroup";
    if (!k) return;
    char *o = s->cpu_none;
    size_t cap = sizeof s->cpu_none;
    cat(o, cap, &n, "no figure for ");
    for (size_t i = 0; i < k; i++)
        cat(o, cap, &n, "%s%s", i == 0 ? "" : i + 1 == k ? " and " : ", ", names[i]);
    cat(o, cap, &n, " CPU");
    if (s->cpu_min_interval_ns > 0 && s->clock_ticks_per_s > 0)
        cat(o, cap, &n, ": the samples span %.0f ms; a figure needs %.0f ms (%lld clock ticks)",
            (double)(s->last_ts_ns - s->first_ts_ns) / 1e6, (double)s->cpu_min_interval_ns / 1e6,
            (long long)(s->cpu_min_interval_ns * s->clock_ticks_per_s / 1000000000));
    else
        cat(o, cap, &n, " in the log");
}

static int build_system(const gpufl__model_t *m, gpufl__report_system_t *s) {
    s->n = m->n_samples;
    cpu_bounds(m, s);
    double most = 100.0 * (double)s->cpus;
    for (size_t i = 0; i < m->n_samples; i++) {
        const gpufl__model_host_sample_t *x = &m->samples[i];
        if (s->cpus > 0) {
            s->proc_cpu_over += x->proc_cpu_pct > most;
            s->cg_cpu_over += x->cg_cpu_pct > most;
        }
        if (i > 0 && s->cpu_min_interval_ns > 0 && x->ts_ns > m->samples[i - 1].ts_ns &&
            x->ts_ns - m->samples[i - 1].ts_ns < s->cpu_min_interval_ns)
            s->period_below_min = 1;
        st_add(&s->st[GPUFL_RH_CPU], x->cpu_pct);
        st_add(&s->st[GPUFL_RH_PROC_CPU], x->proc_cpu_pct);
        st_add(&s->st[GPUFL_RH_MEM_USED], (double)x->mem_used_bytes);
        st_add(&s->st[GPUFL_RH_MEM_TOTAL], (double)x->mem_total_bytes);
        st_add(&s->st[GPUFL_RH_RSS], (double)x->proc_rss_bytes);
        st_add(&s->st[GPUFL_RH_CG_MEM], (double)x->cg_mem_used_bytes);
        st_add(&s->st[GPUFL_RH_CG_LIMIT], (double)x->cg_mem_limit_bytes);
        st_add(&s->st[GPUFL_RH_CG_CPU], x->cg_cpu_pct);
        st_add(&s->st[GPUFL_RH_CG_CORES], x->cg_cpu_limit_cores);
        if (i == 0 || x->ts_ns < s->first_ts_ns) s->first_ts_ns = x->ts_ns;
        if (i == 0 || x->ts_ns > s->last_ts_ns) s->last_ts_ns = x->ts_ns;
    }
    cpu_none(m, s);
    if (!m->n_windows) return 0;
    s->window_names = malloc(m->n_windows * sizeof *s->window_names);
    if (!s->window_names) return oom();
    for (size_t i = 0; i < m->n_windows; i++) s->window_names[i] = m->windows[i].name;
    qsort(s->window_names, m->n_windows, sizeof *s->window_names, cmp_str_ptr);
    for (size_t i = 0; i < m->n_windows; i++)
        if (i == 0 || strcmp(s->window_names[i], s->window_names[s->n_window_names - 1]) != 0)
            s->window_names[s->n_window_names++] = s->window_names[i];
    return 0;
}

static void acc_gpu_sample(gpufl__report_gpu_t *a, const gpufl__model_gpu_sample_t *s) {
    if (a->n == 0 || s->ts_ns < a->first_ts_ns) a->first_ts_ns = s->ts_ns;
    if (a->n == 0 || s->ts_ns > a->last_ts_ns) a->last_ts_ns = s->ts_ns;
    a->n++;
    st_add(&a->st[GPUFL_RG_UTIL], s->gpu_util_pct);
    st_add(&a->st[GPUFL_RG_MEM_UTIL], s->mem_util_pct);
    st_add(&a->st[GPUFL_RG_MEM_USED], (double)s->mem_used_bytes);
    st_add(&a->st[GPUFL_RG_MEM_TOTAL], (double)s->mem_total_bytes);
    st_add(&a->st[GPUFL_RG_TEMP_GPU], s->temp_gpu_c);
    st_add(&a->st[GPUFL_RG_TEMP_MEM], s->temp_mem_c);
    st_add(&a->st[GPUFL_RG_POWER], (double)s->power_mw);
    st_add(&a->st[GPUFL_RG_POWER_LIMIT], (double)s->power_limit_mw);
    st_add(&a->st[GPUFL_RG_CLOCK_SM], s->clock_sm_mhz);
    st_add(&a->st[GPUFL_RG_CLOCK_MEM], s->clock_mem_mhz);
    st_add(&a->st[GPUFL_RG_FAN], s->fan_pct);
    st_add(&a->st[GPUFL_RG_PCIE_TX], (double)s->pcie_tx_bytes_per_s);
    st_add(&a->st[GPUFL_RG_PCIE_RX], (double)s->pcie_rx_bytes_per_s);
    st_add(&a->st[GPUFL_RG_NVLINK_TX], (double)s->nvlink_tx_bytes_per_s);
    st_add(&a->st[GPUFL_RG_NVLINK_RX], (double)s->nvlink_rx_bytes_per_s);
    st_add(&a->st[GPUFL_RG_SM_ACTIVE], s->sm_active_pct);
    st_add(&a->st[GPUFL_RG_SM_OCCUPANCY], s->sm_occupancy_pct);
    st_add(&a->st[GPUFL_RG_TENSOR], s->tensor_active_pct);
    st_add(&a->st[GPUFL_RG_DRAM_BW], s->dram_bw_util_pct);
    ct_add(&a->energy, s->ts_ns, s->energy_mj);
    ct_add(&a->sbe, s->ts_ns, s->ecc_sbe_volatile);
    ct_add(&a->dbe, s->ts_ns, s->ecc_dbe_volatile);
    if (s->throttle_reasons >= 0) {
        uint64_t bits = (uint64_t)s->throttle_reasons;
        a->throttle_n++;
        for (int b = 0; bits; b++, bits >>= 1) a->bit_n[b] += bits & 1;
    }
}

static int cmp_bit_share(const void *x, const void *y) {
    const gpufl__report_bit_share_t *a = x, *b = y;
    if (a->n != b->n) return a->n > b->n ? -1 : 1;
    return a->bit - b->bit;
}

/* The bit named gpu_idle (bit 0 when there is no legend), or -1. */
static int idle_bit(const gpufl__model_t *m) {
    if (!m->has_legend) return 0;
    for (int b = 0; b < GPUFL_MODEL_THROTTLE_BITS; b++)
        if (m->throttle_names[b] && strcmp(m->throttle_names[b], "gpu_idle") == 0) return b;
    return -1;
}

static void build_costs(const gpufl__model_t *m, gpufl__report_t *r) {
    for (int pass = 0; pass < 3; pass++) { /* host, nvml, then any other */
        for (size_t i = 0; i < m->n_source_costs; i++) {
            const gpufl__model_source_cost_t *c = &m->source_costs[i];
            int is_host = strcmp(c->source, "host") == 0, is_nvml = strcmp(c->source, "nvml") == 0;
            if ((pass == 0 && !is_host) || (pass == 1 && !is_nvml) ||
                (pass == 2 && (is_host || is_nvml)))
                continue;
            double mean = c->mean_ns >= 0 ? (double)c->mean_ns
                          : c->samples > 0 && c->total_ns >= 0
                              ? (double)c->total_ns / (double)c->samples
                              : -1;
            if (mean < 0 || c->samples == 0) continue;
            if (r->n_costs < sizeof r->costs / sizeof r->costs[0])
                r->costs[r->n_costs++] = (gpufl__report_cost_t){c->source, mean, is_nvml};
        }
    }
}

static int build_gpus(const gpufl__model_t *m, gpufl__report_t *r) {
    build_costs(m, r);
    r->idle_bit = idle_bit(m);
    if (!m->n_gpus) {
        const char *running = r->summary.backend.running, *why = r->summary.backend.reason;
        if (m->capabilities && (!running || strcasecmp(running, "none") == 0) && why)
            r->no_gpu_reason = why;
        return 0;
    }
    r->gpus = calloc(m->n_gpus, sizeof *r->gpus);
    if (!r->gpus) return oom();
    const gpufl__model_gpu_t *last = NULL;
    for (size_t i = 0; i < m->n_gpu_samples; i++) {
        const gpufl__model_gpu_sample_t *s = &m->gpu_samples[i];
        if (!last || last->device != s->device) last = gpufl__model_gpu_find(m, s->device);
        if (last) acc_gpu_sample(&r->gpus[last - m->gpus], s);
    }
    for (size_t i = 0; i < m->n_gpus; i++) {
        gpufl__report_gpu_t *a = &r->gpus[i];
        const gpufl__model_gpu_t *g = &m->gpus[i];
        a->gpu = g;
        a->mem_total_bytes = a->st[GPUFL_RG_MEM_TOTAL].n ? a->st[GPUFL_RG_MEM_TOTAL].max
                             : g->mem_total_bytes >= 0   ? (double)g->mem_total_bytes
                                                         : -1;
        a->power_limit_mw = a->st[GPUFL_RG_POWER_LIMIT].n ? a->st[GPUFL_RG_POWER_LIMIT].max
                            : g->power_limit_mw > 0       ? (double)g->power_limit_mw
                                                          : -1;
        for (int b = 0; b < GPUFL_MODEL_THROTTLE_BITS; b++)
            if (b != r->idle_bit && a->bit_n[b])
                a->shares[a->n_shares++] = (gpufl__report_bit_share_t){b, a->bit_n[b]};
        qsort(a->shares, a->n_shares, sizeof *a->shares, cmp_bit_share);
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Kernels: name ranks, hotspots, launch configurations                     */
/* ---------------------------------------------------------------------- */

/* rank[i] for each kernel: its name's place in strcmp order (equal strings,
 * equal rank), comparing each distinct name pointer once. *n_ranks is one
 * past the largest rank. */
static int rank_names(const gpufl__model_t *m, uint32_t *rank, size_t *n_ranks) {
    gpufl__idmap_t seen; /* name pointer -> index in names */
    const char **names = NULL, **sorted = NULL;
    uint32_t *of_name = NULL;
    size_t n_names = 0, alloc = 0;
    int rc = 0;
    gpufl__idmap_init(&seen);
    for (size_t i = 0; i < m->n_kernels; i++) {
        const char *name = m->kernels[i].demangled;
        size_t idx;
        int put = gpufl__idmap_put(&seen, (uint64_t)(uintptr_t)name, n_names, &idx);
        if (put < 0) {
            rc = put;
            goto free_temp;
        }
        if (put == 0) {
            if (n_names == alloc) {
                size_t grown = alloc ? alloc * 2 : 64;
                const char **p = realloc(names, grown * sizeof *p);
                if (!p) {
                    rc = GPUFL_ENOMEM;
                    goto free_temp;
                }
                names = p;
                alloc = grown;
            }
            idx = n_names;
            names[n_names++] = name;
        }
        rank[i] = (uint32_t)idx;
    }
    sorted = malloc((n_names ? n_names : 1) * sizeof *sorted);
    of_name = malloc((n_names ? n_names : 1) * sizeof *of_name);
    if (!sorted || !of_name) {
        rc = GPUFL_ENOMEM;
        goto free_temp;
    }
    if (n_names) memcpy(sorted, names, n_names * sizeof *sorted);
    qsort(sorted, n_names, sizeof *sorted, cmp_str_ptr);
    uint32_t r = 0;
    for (size_t i = 0; i < n_names; i++) {
        if (i > 0 && strcmp(sorted[i], sorted[i - 1]) != 0) r++;
        size_t idx;
        gpufl__idmap_get(&seen, (uint64_t)(uintptr_t)sorted[i], &idx);
        of_name[idx] = r;
    }
    *n_ranks = n_names ? (size_t)r + 1 : 0;
    for (size_t i = 0; i < m->n_kernels; i++) rank[i] = of_name[rank[i]];
free_temp:
    free(names);
    free(sorted);
    free(of_name);
    gpufl__idmap_fini(&seen);
    return rc ? oom() : 0;
}

/* The k-th smallest (0-based) of v[0..n), reordering v (Hoare's selection). */
static int64_t select_kth(int64_t *v, size_t n, size_t k) {
    long lo = 0, hi = (long)n - 1, want = (long)k;
    while (lo < hi) {
        int64_t a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi];
        int64_t pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
        long i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) {
                int64_t t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (want <= j)
            hi = j;
        else if (want >= i)
            lo = i;
        else
            return v[want];
    }
    return v[want];
}

/* The value at rank ceil(pct/100 * n) (1-based) of n durations. */
static int64_t rank_dur(int64_t *d, size_t n, unsigned pct) {
    size_t rank = (n * pct + 99) / 100;
    if (rank < 1) rank = 1;
    return select_kth(d, n, rank - 1);
}

static int cmp_kgroup(const void *a, const void *b) {
    const gpufl__report_kgroup_t *x = a, *y = b;
    if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Names by total GPU time, then name; in a name, configs by time, then id
 * (launches without one last). */
static int cmp_kconf(const void *a, const void *b) {
    const gpufl__report_kconf_t *x = a, *y = b;
    if (x->name_total_ns != y->name_total_ns) return x->name_total_ns > y->name_total_ns ? -1 : 1;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns ? -1 : 1;
    uint64_t cx = (uint64_t)x->config, cy = (uint64_t)y->config; /* UNKNOWN (-1) sorts last */
    return cx < cy ? -1 : cx > cy;
}

/* The launch configurations of the kernels by[from..to) (one name, in log
 * order) into r->kconfs. */
static int group_configs(const gpufl__model_t *m, gpufl__report_t *r, const size_t *by, size_t from,
                         size_t to, uint32_t rank) {
    gpufl__idmap_t cfg; /* config + 2 -> index in r->kconfs */
    gpufl__idmap_init(&cfg);
    size_t first = r->n_kconfs;
    for (size_t i = from; i < to; i++) {
        const gpufl__model_kernel_t *k = &m->kernels[by[i]];
        uint64_t key = (uint64_t)k->config + 2; /* UNKNOWN (-1) is 1 */
        size_t idx;
        int put = gpufl__idmap_put(&cfg, key == 0 ? 1 : key, r->n_kconfs, &idx);
        if (put < 0) {
            gpufl__idmap_fini(&cfg);
            return oom();
        }
        gpufl__report_kconf_t *c;
        if (put == 0) {
            c = &r->kconfs[r->n_kconfs++];
            memset(c, 0, sizeof *c);
            c->first = k;
            c->name = k->demangled;
            c->rank = rank;
            c->config = k->config;
            c->rec = gpufl__model_config_find(m, k->config);
            c->same_grid = c->same_block = c->same_dsmem = 1;
        } else {
            c = &r->kconfs[idx];
        }
        const gpufl__model_kernel_t *f = c->first;
        c->calls++;
        c->total_ns += (double)(k->end_ns - k->start_ns);
        c->same_grid &= k->grid_x == f->grid_x && k->grid_y == f->grid_y && k->grid_z == f->grid_z;
        c->same_block &=
            k->block_x == f->block_x && k->block_y == f->block_y && k->block_z == f->block_z;
        c->same_dsmem &= k->dynamic_smem_bytes == f->dynamic_smem_bytes;
    }
    gpufl__idmap_fini(&cfg);
    double total = 0;
    size_t calls = 0;
    for (size_t k = first; k < r->n_kconfs; k++)
        total += r->kconfs[k].total_ns, calls += r->kconfs[k].calls;
    for (size_t k = first; k < r->n_kconfs; k++)
        r->kconfs[k].name_total_ns = total, r->kconfs[k].name_calls = calls;
    return 0;
}

static int build_kernels(const gpufl__model_t *m, gpufl__report_t *r) {
    size_t n = m->n_kernels, n_ranks = 0;
    if (!n) return 0;
    int rc = 0;
    uint32_t *rank = malloc(n * sizeof *rank);
    size_t *by = malloc(n * sizeof *by); /* kernel indexes by rank, log order within */
    size_t *start = NULL;
    int64_t *dur = malloc(n * sizeof *dur);
    r->kgroups = malloc(n * sizeof *r->kgroups);
    r->kconfs = malloc(n * sizeof *r->kconfs);
    if (!rank || !by || !dur || !r->kgroups || !r->kconfs) {
        rc = oom();
        goto free_temp;
    }
    rc = rank_names(m, rank, &n_ranks);
    if (rc) goto free_temp;
    start = calloc(n_ranks + 1, sizeof *start);
    if (!start) {
        rc = oom();
        goto free_temp;
    }
    for (size_t i = 0; i < n; i++) start[rank[i] + 1]++;
    for (size_t k = 0; k < n_ranks; k++) start[k + 1] += start[k];
    for (size_t i = 0; i < n; i++) by[start[rank[i]]++] = i;
    for (size_t k = n_ranks; k > 0; k--) start[k] = start[k - 1];
    start[0] = 0;

    for (size_t g = 0; g < n_ranks; g++) {
        size_t from = start[g], to = start[g + 1];
        if (from == to) continue;
        gpufl__report_kgroup_t *kg = &r->kgroups[r->n_kgroups++];
        memset(kg, 0, sizeof *kg);
        kg->name = m->kernels[by[from]].demangled;
        kg->rank = (uint32_t)g;
        kg->calls = to - from;
        for (size_t i = from; i < to; i++) {
            const gpufl__model_kernel_t *k = &m->kernels[by[i]];
            int64_t d = k->end_ns - k->start_ns;
            dur[i - from] = d;
            kg->total_ns += (double)d;
            if (i == from || d < kg->min_ns) kg->min_ns = d;
            if (i == from || d > kg->max_ns) kg->max_ns = d;
        }
        kg->p50_ns = rank_dur(dur, kg->calls, 50);
        kg->p99_ns = rank_dur(dur, kg->calls, 99);
        r->kernel_ns += kg->total_ns;
        rc = group_configs(m, r, by, from, to, (uint32_t)g);
        if (rc) goto free_temp;
    }
    qsort(r->kgroups, r->n_kgroups, sizeof *r->kgroups, cmp_kgroup);
    qsort(r->kconfs, r->n_kconfs, sizeof *r->kconfs, cmp_kconf);
    r->kernel_names = r->n_kgroups;
    for (size_t i = 0; i < r->n_kconfs; i++) {
        if (r->kconfs[i].config < 0)
            r->unconfigured += r->kconfs[i].calls;
        else
            r->configs++;
    }
free_temp:
    free(rank);
    free(by);
    free(start);
    free(dur);
    return rc;
}

int gpufl__report_copy_dir(int32_t copy_kind) {
    switch (copy_kind) {
    case GPUFL_MODEL_COPY_HTOD: return GPUFL_REPORT_DIR_HTOD;
    case GPUFL_MODEL_COPY_DTOH: return GPUFL_REPORT_DIR_DTOH;
    case GPUFL_MODEL_COPY_DTOD: return GPUFL_REPORT_DIR_DTOD;
    case GPUFL_MODEL_COPY_PTOP: return GPUFL_REPORT_DIR_PEER;
    default: return GPUFL_REPORT_DIR_OTHER;
    }
}

static void build_copies(const gpufl__model_t *m, gpufl__report_t *r) {
    for (size_t i = 0; i < m->n_copies; i++) {
        const gpufl__model_copy_t *c = &m->copies[i];
        int d = gpufl__report_copy_dir(c->copy_kind);
        int host = d == GPUFL_REPORT_DIR_HTOD   ? c->src_kind
                   : d == GPUFL_REPORT_DIR_DTOH ? c->dst_kind
                                                : 0;
        gpufl__report_dir_t *a = &r->dirs[d];
        a->count++;
        a->bytes += (double)c->bytes;
        a->time_ns += (double)(c->end_ns - c->start_ns);
        a->pageable += host == GPUFL_MODEL_MEM_PAGEABLE;
        a->pinned += host == GPUFL_MODEL_MEM_PINNED;
        r->copy_bytes += (double)c->bytes;
    }
}

/* ---------------------------------------------------------------------- */
/* Launch rows (engines that time no kernels)                              */
/* ---------------------------------------------------------------------- */

static int cmp_lgroup(const void *a, const void *b) {
    const gpufl__report_lgroup_t *x = a, *y = b;
    if (x->launches != y->launches) return x->launches > y->launches ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return (x->config > y->config) - (x->config < y->config);
}

static int cmp_name_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* (group, scope path) pairs, to count the distinct paths of a group. */
static int cmp_size_pair(const void *a, const void *b) {
    const size_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* One group per kernel_config id that launch rows name (one for the rows
 * that name none or a missing record, by id). */
static int build_launches(const gpufl__model_t *m, gpufl__report_t *r) {
    if (!m->n_launches) return 0;
    r->untimed = m->n_kernels == 0;
    size_t ng = m->n_configs + 1; /* the last: launches without a record */
    size_t *count = calloc(ng, sizeof *count);
    size_t *pairs = malloc(m->n_launches * 2 * sizeof *pairs);
    size_t *slot = malloc(ng * sizeof *slot);
    r->lgroups = calloc(ng, sizeof *r->lgroups);
    int rc = 0;
    if (!count || !pairs || !slot || !r->lgroups) {
        rc = oom();
        goto free_temp;
    }
    size_t np = 0;
    for (size_t i = 0; i < m->n_launches; i++) {
        const gpufl__model_launch_t *l = &m->launches[i];
        size_t g = l->config_index >= 0 ? (size_t)l->config_index : m->n_configs;
        count[g]++;
        if (l->config <= 0 || l->config_index < 0) r->launches_without_config++;
        const gpufl__model_scope_t *s = l->scope > 0 ? gpufl__model_scope_find(m, l->scope) : NULL;
        if (s) {
            pairs[np++] = g;
            pairs[np++] = s->path_index;
        }
    }
    size_t n = 0;
    for (size_t g = 0; g < ng; g++) {
        slot[g] = SIZE_MAX;
        if (!count[g]) continue;
        const gpufl__model_kernel_config_t *c = g < m->n_configs ? &m->configs[g] : NULL;
        slot[g] = n;
        r->lgroups[n++] = (gpufl__report_lgroup_t){c, c && *c->demangled ? c->demangled : "?",
                                                   c ? c->id : GPUFL_MODEL_UNKNOWN, count[g], 0};
    }
    qsort(pairs, np / 2, 2 * sizeof *pairs, cmp_size_pair);
    for (size_t i = 0; i < np; i += 2)
        if (i == 0 || pairs[i] != pairs[i - 2] || pairs[i + 1] != pairs[i - 1])
            r->lgroups[slot[pairs[i]]].scopes++;
    r->n_lgroups = n;
    qsort(r->lgroups, n, sizeof *r->lgroups, cmp_lgroup);
    const char **names = malloc((n ? n : 1) * sizeof *names); /* distinct names */
    if (!names) {
        rc = oom();
        goto free_temp;
    }
    for (size_t i = 0; i < n; i++) names[i] = r->lgroups[i].name;
    qsort(names, n, sizeof *names, cmp_name_ptr);
    for (size_t i = 0; i < n; i++) r->launch_names += i == 0 || strcmp(names[i], names[i - 1]);
    free(names);
free_temp:
    free(count);
    free(pairs);
    free(slot);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Public                                                                   */
/* ---------------------------------------------------------------------- */

int gpufl__report_build(const gpufl__model_t *m, gpufl__report_t *r) {
    memset(r, 0, sizeof *r);
    r->m = m;
    r->idle_bit = -1;
    r->unattributed = -1;
    int rc = build_summary(m, &r->summary);
    if (!rc) rc = gpufl__insights_compute(&r->insights, m);
    if (!rc) rc = build_scopes(m, r);
    if (!rc) rc = build_lost_scopes(m, &r->scopes);
    if (!rc) build_damage(m, &r->summary);
    if (!rc) rc = build_system(m, &r->system);
    if (!rc) rc = build_gpus(m, r);
    if (!rc) rc = build_kernels(m, r);
    if (!rc) rc = build_launches(m, r);
    if (!rc) build_copies(m, r);
    if (!rc) rc = build_scope_gpu(m, r);
    if (!rc) rc = gpufl__report_build_pc(m, &r->pc);
    if (!rc) rc = gpufl__report_build_sass_metrics(m, &r->sass_metrics);
    if (!rc) rc = gpufl__report_build_range(m, &r->range);
    if (!rc) rc = gpufl__report_build_ops(m, &r->ops);
    return rc;
}

void gpufl__report_free(gpufl__report_t *r) {
    if (!r) return;
    free(r->summary.features);
    free(r->summary.warn_order);
    gpufl__insights_free(&r->insights);
    free(r->scopes.rows);
    free(r->scopes.tags);
    free(r->system.window_names);
    free(r->gpus);
    free(r->kgroups);
    free(r->kconfs);
    free(r->lgroups);
    free(r->scope_gpu_rows);
    gpufl__report_free_pc(&r->pc);
    gpufl__report_free_sass_metrics(&r->sass_metrics);
    gpufl__report_free_range(&r->range);
    gpufl__report_free_ops(&r->ops);
    memset(r, 0, sizeof *r);
}
