/*
 * report.c - formats the session model as a text report for people.
 *
 * Sections: session summary, scope timing (a tree of scope paths), system
 * metrics, GPU devices (identity and what their NVML samples say, one block
 * per device; or why there is no GPU data), kernel hotspots, kernel details
 * (launch configurations and occupancy), memory transfers and GPU time per
 * scope (Trace engine rows, when there are any) and the log problems met
 * while reading. Values use human units with three significant digits; nothing
 * here depends on the clock, the locale's time zone or memory addresses, so
 * the same logs always give the same bytes.
 */
#include "analysis/report.h"

#include "core/error.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define LIST_MAX     10 /* events, open scopes, window names listed */
#define PROBLEMS_MAX 20 /* log problems listed */
#define NAME_COL_MAX 50 /* widest scope column, in characters */
#define INDENT_MAX   20 /* deepest indentation level shown */

/* ---------------------------------------------------------------------- */
/* Number formatting                                                        */
/* ---------------------------------------------------------------------- */

/* v (>= 0) with three significant digits. */
static void sig3(char *buf, size_t size, double v) {
    int decimals = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
    snprintf(buf, size, "%.*f", decimals, v);
}

/* A duration or a time since the epoch, in ns/µs/ms/s. */
static void fmt_ns(char *buf, size_t size, double ns) {
    static const double div[] = {1, 1e3, 1e6, 1e9};
    static const char *const unit[] = {"ns", "\xc2\xb5s", "ms", "s"};
    if (ns < 0) {
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
    sig3(num, sizeof num, v);
    snprintf(buf, size, "%s %s", num, unit[i]);
}

static void fmt_bytes(char *buf, size_t size, double bytes) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 0) {
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
    sig3(num, sizeof num, v);
    snprintf(buf, size, "%s %s", num, unit[i]);
}

static void fmt_pct(char *buf, size_t size, double pct) {
    if (pct < 0)
        snprintf(buf, size, "?");
    else
        snprintf(buf, size, "%.1f%%", pct);
}

/* Display width of UTF-8 text: one column per code point. */
static size_t text_width(const char *s) {
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80) w++;
    return w;
}

/* Writes s padded to width columns (right-aligned when right), cutting it
 * with "..." when too wide. */
static void put_cell(FILE *out, const char *s, size_t width, int right) {
    size_t w = text_width(s);
    if (w > width && width > 3) {
        size_t keep = width - 3, cols = 0;
        const char *p = s;
        while (*p) {
            if (((unsigned char)*p & 0xc0) != 0x80) {
                if (cols == keep) break;
                cols++;
            }
            p++;
        }
        fprintf(out, "%.*s...", (int)(p - s), s);
        return;
    }
    if (right)
        for (size_t i = w; i < width; i++) fputc(' ', out);
    fputs(s, out);
    if (!right)
        for (size_t i = w; i < width; i++) fputc(' ', out);
}

/* A "label      value" line of a section. */
static void put_field(FILE *out, const char *label, const char *value) {
    fprintf(out, "  %-18s %s\n", label, value);
}

/* ---------------------------------------------------------------------- */
/* Capabilities                                                             */
/* ---------------------------------------------------------------------- */

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

static void put_cap_line(FILE *out, const json_t *caps, const char *kind) {
    const char *req = cap_fact(caps, kind, "requested");
    const char *run = cap_fact(caps, kind, "running");
    const char *why = cap_reason(caps, kind);
    char line[512];
    int n = snprintf(line, sizeof line, "asked %s, running %s", req ? req : "?", run ? run : "?");
    if (why && *why && n > 0 && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, ": %s", why);
    put_field(out, kind, line);
}

typedef struct feature {
    const char *name;
    const char *reason;
    int on;
} feature_t;

static int cmp_feature(const void *a, const void *b) {
    return strcmp(((const feature_t *)a)->name, ((const feature_t *)b)->name);
}

static int feature_on(const json_t *v) {
    if (json_is_boolean(v)) return json_is_true(v);
    if (json_is_integer(v)) return json_integer_value(v) != 0;
    return -1;
}

/* Reads one feature entry: a boolean, or an object {on|enabled, why|reason}. */
static int read_feature(const char *name, const json_t *v, feature_t *f) {
    f->name = name;
    f->reason = NULL;
    f->on = feature_on(v);
    if (json_is_object(v)) {
        f->on = feature_on(json_object_get(v, "on"));
        if (f->on < 0) f->on = feature_on(json_object_get(v, "enabled"));
        f->reason = gpufl__model_json_str(v, "why");
        if (!f->reason) f->reason = gpufl__model_json_str(v, "reason");
    }
    return f->name && f->on >= 0;
}

/* The features, sorted by name: those on in one line, then one line per
 * feature off with its reason. */
static int put_features(FILE *out, const json_t *caps) {
    json_t *fs = caps ? json_object_get(caps, "features") : NULL;
    size_t n = json_is_object(fs)  ? json_object_size(fs)
               : json_is_array(fs) ? json_array_size(fs)
                                   : 0;
    if (!n) return 0;
    feature_t *list = calloc(n, sizeof *list);
    if (!list) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
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
    size_t shown = 0;
    for (size_t i = 0; i < k; i++) {
        if (!list[i].on) continue;
        if (shown == 0) fprintf(out, "  %-18s ", "features on");
        fprintf(out, "%s%s", shown ? ", " : "", list[i].name);
        shown++;
    }
    if (shown) fputc('\n', out);
    shown = 0;
    for (size_t i = 0; i < k; i++) {
        if (list[i].on) continue;
        fprintf(out, "  %-18s %s", shown ? "" : "features off", list[i].name);
        if (list[i].reason && *list[i].reason) fprintf(out, ": %s", list[i].reason);
        fputc('\n', out);
        shown++;
    }
    free(list);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Session summary                                                          */
/* ---------------------------------------------------------------------- */

static const char *or_unknown(const char *s) { return s && *s ? s : "?"; }

static const char *plural(size_t n) { return n == 1 ? "" : "s"; }

static void put_host(FILE *out, const gpufl_model_t *m) {
    const json_t *hi = m->host_info;
    const char *host = *m->header.hostname ? m->header.hostname
                                           : or_unknown(gpufl__model_json_str(hi, "hostname"));
    char line[512], num[32];
    size_t n = (size_t)snprintf(line, sizeof line, "%s", host);
    if (hi) {
        const char *sep = " (";
        int64_t v;
        if (gpufl__reader_int(json_object_get(hi, "cpu_count"), &v) == 0 && n < sizeof line) {
            n += (size_t)snprintf(line + n, sizeof line - n, "%s%lld CPUs", sep, (long long)v);
            sep = ", ";
        }
        if (gpufl__reader_int(json_object_get(hi, "mem_total_bytes"), &v) == 0 && n < sizeof line) {
            fmt_bytes(num, sizeof num, (double)v);
            n += (size_t)snprintf(line + n, sizeof line - n, "%s%s memory", sep, num);
            sep = ", ";
        }
        const char *kr = gpufl__model_json_str(hi, "kernel");
        if (!kr) kr = gpufl__model_json_str(hi, "kernel_release");
        if (kr && n < sizeof line) {
            n += (size_t)snprintf(line + n, sizeof line - n, "%sLinux %s", sep, kr);
            sep = ", ";
        }
        if (gpufl__reader_int(json_object_get(hi, "cgroup_version"), &v) == 0 && v > 0 &&
            n < sizeof line) {
            n += (size_t)snprintf(line + n, sizeof line - n, "%scgroup v%lld", sep, (long long)v);
            sep = ", ";
        }
        if (strcmp(sep, ", ") == 0 && n < sizeof line) snprintf(line + n, sizeof line - n, ")");
    }
    put_field(out, "host", line);
}

static void put_start(FILE *out, const gpufl_model_t *m) {
    int64_t us = m->header.epoch_unix_us;
    char line[64];
    if (us < 0) {
        put_field(out, "started", "?");
        return;
    }
    time_t secs = (time_t)(us / 1000000);
    struct tm tm;
    if (!gmtime_r(&secs, &tm)) {
        put_field(out, "started", "?");
        return;
    }
    snprintf(line, sizeof line, "%04d-%02d-%02d %02d:%02d:%02d.%03d UTC", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(us % 1000000 / 1000));
    put_field(out, "started", line);
}

static void put_duration(FILE *out, const gpufl_model_t *m) {
    char num[32], line[128];
    const gpufl_model_session_end_t *e = &m->session_end;
    if (e->present) {
        fmt_ns(num, sizeof num, (double)(e->duration_ns >= 0 ? e->duration_ns : e->ts_ns));
        put_field(out, "duration", num);
        return;
    }
    if (m->last_ts_ns >= 0)
        fmt_ns(num, sizeof num, (double)m->last_ts_ns);
    else
        snprintf(num, sizeof num, "?");
    snprintf(line, sizeof line, "%s (no session_end: still running or killed)", num);
    put_field(out, "duration", line);
}

static void put_drops(FILE *out, const gpufl_model_t *m) {
    const gpufl_model_drops_t *d = &m->drops;
    struct {
        const char *name;
        int64_t v;
    } c[] = {{"records", d->records},
             {"threads_unbuffered", d->threads_unbuffered},
             {"names_truncated", d->names_truncated},
             {"unbalanced_ends", d->unbalanced_ends},
             {"depth_overflow", d->depth_overflow}};
    char line[512];
    size_t n = 0;
    line[0] = '\0';
    if (d->present) {
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
            if (c[i].v <= 0 || n >= sizeof line) continue;
            n += (size_t)snprintf(line + n, sizeof line - n, "%s%s %lld", n ? ", " : "", c[i].name,
                                  (long long)c[i].v);
        }
    }
    put_field(out, "drops", n ? line : "no records dropped");
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

/* The warn and error events, oldest first. */
static int put_events(FILE *out, const gpufl_model_t *m) {
    size_t n = 0, warn = 0, other = 0;
    for (size_t i = 0; i < m->n_events; i++) {
        if (m->events[i].level >= GPUFL_MODEL_LEVEL_WARN)
            warn++;
        else
            other++;
    }
    char line[256];
    if (!warn)
        snprintf(line, sizeof line, "none recorded");
    else
        snprintf(line, sizeof line, "%zu recorded", warn);
    if (other) {
        size_t len = strlen(line);
        snprintf(line + len, sizeof line - len, " (and %zu debug/info events)", other);
    }
    put_field(out, "warnings", line);
    if (!warn) return 0;
    ts_ref_t *refs = malloc(warn * sizeof *refs);
    if (!refs) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
    for (size_t i = 0; i < m->n_events; i++)
        if (m->events[i].level >= GPUFL_MODEL_LEVEL_WARN)
            refs[n++] = (ts_ref_t){m->events[i].ts_ns, i};
    qsort(refs, n, sizeof *refs, cmp_ts_ref);
    for (size_t i = 0; i < n && i < LIST_MAX; i++) {
        const gpufl_model_event_t *e = &m->events[refs[i].idx];
        char at[32];
        fmt_ns(at, sizeof at, (double)e->ts_ns);
        fprintf(out, "    at %s: %s %s: %s\n", at, e->level_name, or_unknown(e->code), e->message);
    }
    if (n > LIST_MAX) fprintf(out, "    ... and %zu more\n", n - LIST_MAX);
    free(refs);
    return 0;
}

static void put_log_lines(FILE *out, const gpufl_model_t *m) {
    const gpufl_reader_stats_t *r = &m->read;
    char line[512];
    unsigned files = 0;
    for (int f = 0; f < GPUFL_LOG_FILE_COUNT; f++) files += r->segments[f];
    size_t n = (size_t)snprintf(line, sizeof line, "%llu lines in %u file%s",
                                (unsigned long long)r->lines, files, files == 1 ? "" : "s");
    for (int f = 0; f < GPUFL_LOG_FILE_COUNT && n < sizeof line; f++)
        if (!r->segments[f])
            n += (size_t)snprintf(line + n, sizeof line - n, ", no %s",
                                  gpufl__reader_file_name((gpufl_log_file_t)f));
    if (r->truncated_lines && n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, ", %llu incomplete last line%s ignored",
                              (unsigned long long)r->truncated_lines,
                              r->truncated_lines == 1 ? "" : "s");
    put_field(out, "log lines", line);
    size_t problems = m->n_warnings + (size_t)m->warnings_over_cap;
    if (problems)
        snprintf(line, sizeof line, "%zu (listed at the end)", problems);
    else
        snprintf(line, sizeof line, "none");
    put_field(out, "log problems", line);
}

static int put_summary(FILE *out, const gpufl_model_t *m) {
    const gpufl_model_header_t *h = &m->header;
    char line[512];
    fprintf(out, "Session\n");
    put_field(out, "app", or_unknown(h->app_name));
    put_field(out, "session id", or_unknown(h->session_id));
    put_host(out, m);
    if (h->pid >= 0)
        snprintf(line, sizeof line, "%lld", (long long)h->pid);
    else
        snprintf(line, sizeof line, "?");
    put_field(out, "pid", line);
    put_field(out, "gpufl version", or_unknown(h->gpufl_version));
    put_start(out, m);
    put_duration(out, m);
    if (m->capabilities) {
        put_cap_line(out, m->capabilities, "backend");
        put_cap_line(out, m->capabilities, "engine");
        if (put_features(out, m->capabilities)) return GPUFL_ENOMEM;
    } else {
        put_field(out, "engine", "? (no capabilities record)");
    }
    size_t starts = 0;
    for (size_t i = 0; i < m->n_windows; i++) starts += !m->windows[i].is_stop;
    snprintf(line, sizeof line,
             "%zu scope%s (%zu open), %zu host sample%s, %zu system window%s, "
             "%zu event%s",
             m->n_scopes, plural(m->n_scopes), m->n_open_scopes, m->n_samples, plural(m->n_samples),
             starts, plural(starts), m->n_events, plural(m->n_events));
    if (m->n_gpu_samples || m->n_gpus) {
        size_t len = strlen(line);
        snprintf(line + len, sizeof line - len, ", %zu GPU sample%s (%zu device%s)",
                 m->n_gpu_samples, plural(m->n_gpu_samples), m->n_gpus, plural(m->n_gpus));
    }
    put_field(out, "records", line);
    put_drops(out, m);
    if (put_events(out, m)) return GPUFL_ENOMEM;
    put_log_lines(out, m);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Scope timing                                                             */
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
static int tree_order(const gpufl_model_t *m, const double *key, size_t *order) {
    size_t n = m->n_scope_paths;
    if (!n) return 0;
    node_key_t *keys = malloc(n * sizeof *keys);
    size_t *first = malloc((n + 1) * sizeof *first); /* first key of each parent's run */
    size_t *count = calloc(n + 1, sizeof *count);
    size_t *stack = malloc(n * sizeof *stack);
    int rc = 0;
    if (!keys || !first || !count || !stack) {
        rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
        goto free_all;
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
free_all:
    free(keys);
    free(first);
    free(count);
    free(stack);
    return rc;
}

/* The name of a scope path indented by its depth, into label (LABEL_SIZE). */
#define LABEL_SIZE (NAME_COL_MAX * 4 + INDENT_MAX * 2 + 8)
static void indented(char *label, size_t depth, const char *name) {
    size_t d = depth < INDENT_MAX ? depth : INDENT_MAX;
    snprintf(label, LABEL_SIZE, "%*s%.*s", (int)(2 * d), "", NAME_COL_MAX * 4, name);
}

/* The widest indented name of the paths for which show[i] (all when NULL). */
static size_t tree_name_width(const gpufl_model_t *m, const unsigned char *show, size_t min) {
    size_t name_w = min;
    for (size_t i = 0; i < m->n_scope_paths; i++) {
        if (show && !show[i]) continue;
        const gpufl_model_scope_path_t *p = &m->scope_paths[i];
        size_t d = p->depth < INDENT_MAX ? p->depth : INDENT_MAX;
        size_t w = 2 * d + text_width(p->name);
        if (w > name_w) name_w = w;
    }
    return name_w < NAME_COL_MAX ? name_w : NAME_COL_MAX;
}

static void count_or_dash(char *buf, size_t size, size_t v) {
    if (v)
        snprintf(buf, size, "%zu", v);
    else
        snprintf(buf, size, "-");
}

static void put_scope_row(FILE *out, size_t name_w, const char *name, const char *calls,
                          const char *open, const char *const t[5], const char *tags) {
    fputs("  ", out);
    put_cell(out, name, name_w, 0);
    fputc(' ', out);
    put_cell(out, calls, 6, 1);
    fputc(' ', out);
    put_cell(out, open, 5, 1);
    for (int i = 0; i < 5; i++) {
        fputc(' ', out);
        put_cell(out, t[i], 9, 1);
    }
    fputc(' ', out);
    put_cell(out, tags, 5, 1);
    fputc('\n', out);
}

static void put_open_scopes(FILE *out, const gpufl_model_t *m) {
    size_t listed = 0;
    fprintf(out, "\n  Open scopes (begun, never ended: still running or killed): %zu\n",
            m->n_open_scopes);
    for (size_t i = 0; i < m->n_scopes && listed < LIST_MAX; i++) {
        const gpufl_model_scope_t *s = &m->scopes[i];
        if (!s->open) continue;
        char at[32];
        fmt_ns(at, sizeof at, (double)s->begin_ns);
        fprintf(out, "    %s  (tid %lld, begun at %s)\n", s->path, (long long)s->tid, at);
        listed++;
    }
    if (m->n_open_scopes > listed)
        fprintf(out, "    ... and %zu more\n", m->n_open_scopes - listed);
}

static int put_scopes(FILE *out, const gpufl_model_t *m) {
    fprintf(out, "\nScope timing\n");
    if (m->n_scope_paths == 0) {
        fprintf(out, "  no scopes recorded\n");
        return 0;
    }
    int rc = 0;
    size_t n = m->n_scope_paths;
    double *key = malloc(n * sizeof *key);
    size_t *order = malloc(n * sizeof *order);
    char *label = malloc(LABEL_SIZE);
    if (!key || !order || !label) {
        rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
        goto free_all;
    }
    for (size_t i = 0; i < n; i++) key[i] = m->scope_paths[i].total_ns;
    rc = tree_order(m, key, order);
    if (rc) goto free_all;

    size_t closed = 0, implicit = 0, bench = 0;
    for (size_t i = 0; i < n; i++) {
        bench += m->scope_paths[i].bench_iters > 0;
        closed += m->scope_paths[i].calls;
        implicit += m->scope_paths[i].implicit;
    }
    size_t name_w = tree_name_width(m, NULL, 5);
    fprintf(out, "  %zu scope path%s, %zu call%s ended, %zu open; wall time per scope path\n", n,
            plural(n), closed, plural(closed), m->n_open_scopes);
    if (bench)
        fprintf(out,
                "  per iter: total / measured iterations, for GFL_BENCH scopes (repeat > 0)\n");
    fputc('\n', out);
    static const char *const heads[5] = {"total", "avg", "min", "max", "per iter"};
    put_scope_row(out, name_w, "scope", "calls", "open", heads, "tags");
    for (size_t k = 0; k < n; k++) {
        const gpufl_model_scope_path_t *p = &m->scope_paths[order[k]];
        indented(label, p->depth, p->name);
        char calls[24], open[24], tags[24], t[5][32];
        const char *tp[5] = {t[0], t[1], t[2], t[3], t[4]};
        snprintf(calls, sizeof calls, "%zu", p->calls);
        count_or_dash(open, sizeof open, p->open);
        count_or_dash(tags, sizeof tags, p->tags);
        if (p->calls) {
            fmt_ns(t[0], sizeof t[0], p->total_ns);
            fmt_ns(t[1], sizeof t[1], p->total_ns / (double)p->calls);
            fmt_ns(t[2], sizeof t[2], p->min_ns);
            fmt_ns(t[3], sizeof t[3], p->max_ns);
        } else {
            for (int i = 0; i < 4; i++) snprintf(t[i], sizeof t[i], "-");
        }
        if (p->bench_iters > 0)
            fmt_ns(t[4], sizeof t[4], p->bench_total_ns / p->bench_iters);
        else
            snprintf(t[4], sizeof t[4], "-");
        put_scope_row(out, name_w, label, calls, open, tp, tags);
    }
    if (implicit)
        fprintf(out, "\n  %zu scope%s closed implicitly (an enclosing scope ended first)\n",
                implicit, implicit == 1 ? " was" : "s were");
    if (m->n_open_scopes) put_open_scopes(out, m);
free_all:
    free(key);
    free(order);
    free(label);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* System metrics                                                           */
/* ---------------------------------------------------------------------- */

typedef struct stat_acc {
    double sum, max;
    size_t n;
} stat_acc_t;

static void acc_add(stat_acc_t *a, double v) {
    if (v < 0) return;
    if (a->n == 0 || v > a->max) a->max = v;
    a->sum += v;
    a->n++;
}

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* " (k of n samples)" when some samples lacked the value. */
static void coverage(char *buf, size_t size, const stat_acc_t *a, size_t total) {
    if (a->n < total)
        snprintf(buf, size, " (%zu of %zu samples)", a->n, total);
    else
        buf[0] = '\0';
}

static void put_pct_line(FILE *out, const char *label, const stat_acc_t *a, size_t total,
                         const char *note) {
    char avg[32], max[32], cov[64], line[256];
    if (!a->n) return;
    fmt_pct(avg, sizeof avg, a->sum / (double)a->n);
    fmt_pct(max, sizeof max, a->max);
    coverage(cov, sizeof cov, a, total);
    snprintf(line, sizeof line, "avg %s, max %s%s%s", avg, max, note, cov);
    put_field(out, label, line);
}

static int put_windows(FILE *out, const gpufl_model_t *m) {
    size_t starts = 0, stops = 0;
    if (!m->n_windows) return 0;
    const char **names = malloc(m->n_windows * sizeof *names);
    if (!names) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
    for (size_t i = 0; i < m->n_windows; i++) {
        names[i] = m->windows[i].name;
        if (m->windows[i].is_stop)
            stops++;
        else
            starts++;
    }
    qsort(names, m->n_windows, sizeof *names, cmp_str_ptr);
    fprintf(out, "  %-18s %zu started, %zu stopped:", "windows", starts, stops);
    size_t shown = 0;
    for (size_t i = 0; i < m->n_windows; i++) {
        if (i > 0 && strcmp(names[i], names[i - 1]) == 0) continue;
        if (shown == LIST_MAX) {
            fprintf(out, " ...");
            break;
        }
        fprintf(out, "%s %s", shown ? "," : "", or_unknown(names[i]));
        shown++;
    }
    fputc('\n', out);
    free(names);
    return 0;
}

static int put_system(FILE *out, const gpufl_model_t *m) {
    fprintf(out, "\nSystem metrics\n");
    size_t n = m->n_samples;
    if (n == 0) {
        fprintf(out, "  no samples (system_sample_rate_ms is 0 or no sampling window was open)\n");
        return put_windows(out, m);
    }
    stat_acc_t cpu = {0}, proc = {0}, mem = {0}, total = {0}, rss = {0}, cg_mem = {0},
               cg_limit = {0}, cg_cpu = {0}, cg_cores = {0};
    int64_t first = m->samples[0].ts_ns, last = m->samples[0].ts_ns;
    for (size_t i = 0; i < n; i++) {
        const gpufl_model_host_sample_t *s = &m->samples[i];
        acc_add(&cpu, s->cpu_pct);
        acc_add(&proc, s->proc_cpu_pct);
        acc_add(&mem, (double)s->mem_used_bytes);
        acc_add(&total, (double)s->mem_total_bytes);
        acc_add(&rss, (double)s->proc_rss_bytes);
        acc_add(&cg_mem, (double)s->cg_mem_used_bytes);
        acc_add(&cg_limit, (double)s->cg_mem_limit_bytes);
        acc_add(&cg_cpu, s->cg_cpu_pct);
        acc_add(&cg_cores, s->cg_cpu_limit_cores);
        if (s->ts_ns < first) first = s->ts_ns;
        if (s->ts_ns > last) last = s->ts_ns;
    }
    char a[32], b[32], c[32], cov[64], line[256];
    fmt_ns(a, sizeof a, (double)first);
    fmt_ns(b, sizeof b, (double)last);
    fprintf(out, "  %zu host sample%s from %s to %s\n", n, n == 1 ? "" : "s", a, b);
    put_pct_line(out, "host CPU", &cpu, n, "");
    put_pct_line(out, "process CPU", &proc, n, " of one CPU");
    if (mem.n) {
        fmt_bytes(a, sizeof a, mem.sum / (double)mem.n);
        fmt_bytes(b, sizeof b, mem.max);
        coverage(cov, sizeof cov, &mem, n);
        if (total.n) {
            fmt_bytes(c, sizeof c, total.max);
            snprintf(line, sizeof line, "avg %s, max %s of %s%s", a, b, c, cov);
        } else {
            snprintf(line, sizeof line, "avg %s, max %s%s", a, b, cov);
        }
        put_field(out, "host memory used", line);
    }
    if (rss.n) {
        fmt_bytes(a, sizeof a, rss.sum / (double)rss.n);
        fmt_bytes(b, sizeof b, rss.max);
        coverage(cov, sizeof cov, &rss, n);
        snprintf(line, sizeof line, "avg %s, max %s%s", a, b, cov);
        put_field(out, "process RSS", line);
    }
    if (cg_mem.n) {
        fmt_bytes(a, sizeof a, cg_mem.max);
        coverage(cov, sizeof cov, &cg_mem, n);
        if (cg_limit.n) {
            fmt_bytes(b, sizeof b, cg_limit.max);
            snprintf(line, sizeof line, "max %s of limit %s%s", a, b, cov);
        } else {
            snprintf(line, sizeof line, "max %s, no limit%s", a, cov);
        }
        put_field(out, "cgroup memory used", line);
    }
    put_pct_line(out, "cgroup CPU", &cg_cpu, n, " of one CPU");
    if (cg_cores.n) {
        snprintf(line, sizeof line, "%.2f cores", cg_cores.max);
        put_field(out, "cgroup CPU limit", line);
    }
    return put_windows(out, m);
}

/* ---------------------------------------------------------------------- */
/* GPU devices and problems                                                 */
/* ---------------------------------------------------------------------- */

/* Why there is no GPU data, from the capabilities record, in one line. */
static void put_no_gpu(FILE *out, const gpufl_model_t *m) {
    const char *running = cap_fact(m->capabilities, "backend", "running");
    const char *why = cap_reason(m->capabilities, "backend");
    fprintf(out, "\nGPU\n");
    if (m->capabilities && (!running || strcasecmp(running, "none") == 0) && why && *why) {
        if (strstr(why, "not built"))
            fprintf(out, "  GPU sections: no GPU activity recorded (%s backend not built yet)\n",
                    strstr(why, "AMD") ? "AMD" : "NVIDIA");
        else
            fprintf(out, "  GPU sections: no GPU activity recorded (%s)\n", why);
    } else {
        fprintf(out, "  GPU sections: no GPU records found\n");
    }
}

/* Statistics of one value over a device's samples (unknown values skipped). */
typedef struct gstat {
    double sum, min, max;
    size_t n;
} gstat_t;

static void gs_add(gstat_t *a, double v) {
    if (v < 0) return;
    if (a->n == 0 || v > a->max) a->max = v;
    if (a->n == 0 || v < a->min) a->min = v;
    a->sum += v;
    a->n++;
}

static double gs_avg(const gstat_t *a) { return a->sum / (double)a->n; }

/* A counter's first and last known value, by time. */
typedef struct gcounter {
    int64_t first, first_ts, last, last_ts;
    size_t n;
} gcounter_t;

static void gc_add(gcounter_t *c, int64_t ts, int64_t v) {
    if (v < 0) return;
    if (c->n == 0 || ts < c->first_ts) c->first = v, c->first_ts = ts;
    if (c->n == 0 || ts >= c->last_ts) c->last = v, c->last_ts = ts;
    c->n++;
}

enum {
    G_UTIL,
    G_MEM_UTIL,
    G_MEM_USED,
    G_MEM_TOTAL,
    G_TEMP_GPU,
    G_TEMP_MEM,
    G_POWER,
    G_POWER_LIMIT,
    G_CLOCK_SM,
    G_CLOCK_MEM,
    G_FAN,
    G_PCIE_TX,
    G_PCIE_RX,
    G_NVLINK_TX,
    G_NVLINK_RX,
    G_SM_ACTIVE,
    G_SM_OCCUPANCY,
    G_TENSOR,
    G_DRAM_BW,
    G_NSTAT
};

/* What a device's samples say, gathered in one pass over all samples. */
typedef struct gpu_acc {
    size_t n;
    int64_t first_ts, last_ts;
    gstat_t st[G_NSTAT];
    gcounter_t energy, sbe, dbe;
    size_t throttle_n;                       /* samples with known throttle reasons */
    size_t bit_n[GPUFL_MODEL_THROTTLE_BITS]; /* samples with each bit set */
} gpu_acc_t;

static void acc_gpu_sample(gpu_acc_t *a, const gpufl_model_gpu_sample_t *s) {
    if (a->n == 0 || s->ts_ns < a->first_ts) a->first_ts = s->ts_ns;
    if (a->n == 0 || s->ts_ns > a->last_ts) a->last_ts = s->ts_ns;
    a->n++;
    gs_add(&a->st[G_UTIL], s->gpu_util_pct);
    gs_add(&a->st[G_MEM_UTIL], s->mem_util_pct);
    gs_add(&a->st[G_MEM_USED], (double)s->mem_used_bytes);
    gs_add(&a->st[G_MEM_TOTAL], (double)s->mem_total_bytes);
    gs_add(&a->st[G_TEMP_GPU], s->temp_gpu_c);
    gs_add(&a->st[G_TEMP_MEM], s->temp_mem_c);
    gs_add(&a->st[G_POWER], (double)s->power_mw);
    gs_add(&a->st[G_POWER_LIMIT], (double)s->power_limit_mw);
    gs_add(&a->st[G_CLOCK_SM], s->clock_sm_mhz);
    gs_add(&a->st[G_CLOCK_MEM], s->clock_mem_mhz);
    gs_add(&a->st[G_FAN], s->fan_pct);
    gs_add(&a->st[G_PCIE_TX], (double)s->pcie_tx_bytes_per_s);
    gs_add(&a->st[G_PCIE_RX], (double)s->pcie_rx_bytes_per_s);
    gs_add(&a->st[G_NVLINK_TX], (double)s->nvlink_tx_bytes_per_s);
    gs_add(&a->st[G_NVLINK_RX], (double)s->nvlink_rx_bytes_per_s);
    gs_add(&a->st[G_SM_ACTIVE], s->sm_active_pct);
    gs_add(&a->st[G_SM_OCCUPANCY], s->sm_occupancy_pct);
    gs_add(&a->st[G_TENSOR], s->tensor_active_pct);
    gs_add(&a->st[G_DRAM_BW], s->dram_bw_util_pct);
    gc_add(&a->energy, s->ts_ns, s->energy_mj);
    gc_add(&a->sbe, s->ts_ns, s->ecc_sbe_volatile);
    gc_add(&a->dbe, s->ts_ns, s->ecc_dbe_volatile);
    if (s->throttle_reasons >= 0) {
        uint64_t bits = (uint64_t)s->throttle_reasons;
        a->throttle_n++;
        for (int b = 0; bits; b++, bits >>= 1) a->bit_n[b] += bits & 1;
    }
}

/* A value with an SI prefix (k, M, G, T) and three significant digits. */
static void fmt_si(char *buf, size_t size, double v, const char *unit) {
    static const char *const prefix[] = {"", "k", "M", "G", "T", "P"};
    int i = 0;
    char num[24];
    while (i < 5 && v >= 999.5) v /= 1000, i++;
    sig3(num, sizeof num, v);
    snprintf(buf, size, "%s %s%s", num, prefix[i], unit);
}

static void fmt_rate(char *buf, size_t size, double bytes_per_s) {
    char num[32];
    fmt_bytes(num, sizeof num, bytes_per_s);
    snprintf(buf, size, "%.24s/s", num); /* "999 GiB": never near 24 */
}

static void fmt_watts(char *buf, size_t size, double mw) { fmt_si(buf, size, mw / 1000, "W"); }

/* Appends printf text to line (of size) at *n, never past the end. */
static void cat(char *line, size_t size, size_t *n, const char *fmt, ...) GPUFL__PRINTF(4, 5);

static void cat(char *line, size_t size, size_t *n, const char *fmt, ...) {
    if (*n >= size) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line + *n, size - *n, fmt, ap);
    va_end(ap);
    if (k > 0) *n += (size_t)k;
    if (*n >= size) *n = size - 1;
}

/* A "label      value" line of a device block. */
static void put_gfield(FILE *out, const char *label, const char *value) {
    fprintf(out, "    %-18s %s\n", label, value);
}

/* " (k of n samples)" appended when some samples lacked the value. */
static void cat_coverage(char *line, size_t size, size_t *n, size_t known, size_t total) {
    if (known < total) cat(line, size, n, " (%zu of %zu samples)", known, total);
}

/* "avg X, max Y" (or "avg X, min Y") of a statistic, formatted by fmt. */
static void cat_avg_ext(char *line, size_t size, size_t *n, const gstat_t *a, int use_min,
                        void (*fmt)(char *, size_t, double)) {
    char avg[32], ext[32];
    fmt(avg, sizeof avg, gs_avg(a));
    fmt(ext, sizeof ext, use_min ? a->min : a->max);
    cat(line, size, n, "avg %s, %s %s", avg, use_min ? "min" : "max", ext);
}

static void fmt_mhz(char *buf, size_t size, double v) { snprintf(buf, size, "%.0f MHz", v); }

static void fmt_celsius(char *buf, size_t size, double v) {
    /* whole degrees stay whole: "66 °C", an average "58.5 °C" */
    if (v == (double)(int64_t)v)
        snprintf(buf, size,
                 "%.0f \xc2\xb0"
                 "C",
                 v);
    else
        snprintf(buf, size,
                 "%.1f \xc2\xb0"
                 "C",
                 v);
}

/* A line of one statistic: "avg X, max Y" with coverage; nothing when unknown. */
static void put_stat(FILE *out, const char *label, const gstat_t *a, size_t total, int use_min,
                     void (*fmt)(char *, size_t, double)) {
    char line[256];
    size_t n = 0;
    if (!a->n) return;
    line[0] = '\0';
    cat_avg_ext(line, sizeof line, &n, a, use_min, fmt);
    cat_coverage(line, sizeof line, &n, a->n, total);
    put_gfield(out, label, line);
}

/* Two statistics on one line: "<na> avg X, max Y; <nb> avg ..." (either may be unknown). */
static void put_stat_pair(FILE *out, const char *label, const char *na, const gstat_t *a,
                          const char *nb, const gstat_t *b, size_t total,
                          void (*fmt)(char *, size_t, double)) {
    char line[320];
    size_t n = 0;
    const gstat_t *st[2] = {a, b};
    const char *names[2] = {na, nb};
    line[0] = '\0';
    for (int i = 0; i < 2; i++) {
        if (!st[i]->n) continue;
        cat(line, sizeof line, &n, "%s%s ", n ? "; " : "", names[i]);
        cat_avg_ext(line, sizeof line, &n, st[i], 0, fmt);
        cat_coverage(line, sizeof line, &n, st[i]->n, total);
    }
    if (n) put_gfield(out, label, line);
}

/* "GPU-5f2c9a1e" of "GPU-5f2c9a1e-7b3d-...": the prefixes and 8 characters. */
static void short_uuid(char *buf, size_t size, const char *uuid) {
    const char *p = uuid;
    while (strncmp(p, "GPU-", 4) == 0 || strncmp(p, "MIG-", 4) == 0) p += 4;
    size_t keep = (size_t)(p - uuid) + 8;
    snprintf(buf, size, "%.*s", (int)keep, uuid);
}

static void put_gpu_identity(FILE *out, const gpufl_model_gpu_t *g) {
    char line[320], num[32];
    size_t n = 0;
    line[0] = '\0';
    if (*g->uuid) {
        short_uuid(line, sizeof line, g->uuid);
        put_gfield(out, "uuid", line);
    }
    if (*g->pci_bus_id) put_gfield(out, "PCI bus id", g->pci_bus_id);
    n = 0;
    line[0] = '\0';
    if (*g->compute_capability) cat(line, sizeof line, &n, "%s", g->compute_capability);
    if (g->sm_count >= 0)
        cat(line, sizeof line, &n, "%s%lld SMs", n ? ", " : "", (long long)g->sm_count);
    if (g->mem_total_bytes >= 0) {
        fmt_bytes(num, sizeof num, (double)g->mem_total_bytes);
        cat(line, sizeof line, &n, "%s%s memory", n ? ", " : "", num);
    }
    if (n) put_gfield(out, "compute capability", line);
    n = 0;
    line[0] = '\0';
    if (*g->driver_version) cat(line, sizeof line, &n, "%s", g->driver_version);
    if (g->cuda_driver_version >= 0)
        cat(line, sizeof line, &n, "%sCUDA %lld.%lld", n ? ", " : "",
            (long long)(g->cuda_driver_version / 1000),
            (long long)(g->cuda_driver_version % 1000 / 10));
    if (*g->nvml_version) cat(line, sizeof line, &n, "%sNVML %s", n ? ", " : "", g->nvml_version);
    if (n) put_gfield(out, "driver", line);
    if (g->mig_index >= 0) {
        snprintf(line, sizeof line, "instance %lld of NVML GPU %lld", (long long)g->mig_index,
                 (long long)g->nvml_index);
        put_gfield(out, "MIG", line);
    } else if (g->mig_mode == 1) {
        put_gfield(out, "MIG", "on (its instances are devices of their own)");
    } else if (g->mig_mode == 0) {
        put_gfield(out, "MIG", "off");
    } else {
        put_gfield(out, "MIG", "not supported");
    }
}

static void put_gpu_memory(FILE *out, const gpufl_model_gpu_t *g, const gpu_acc_t *a) {
    const gstat_t *used = &a->st[G_MEM_USED];
    char line[256], b1[32], b2[32];
    size_t n = 0;
    if (!used->n) return;
    double total = a->st[G_MEM_TOTAL].n      ? a->st[G_MEM_TOTAL].max
                   : g->mem_total_bytes >= 0 ? (double)g->mem_total_bytes
                                             : -1;
    fmt_bytes(b1, sizeof b1, used->max);
    cat(line, sizeof line, &n, "max %s", b1);
    if (total > 0) {
        fmt_bytes(b2, sizeof b2, total);
        cat(line, sizeof line, &n, " of %s (%.1f%%)", b2, 100.0 * used->max / total);
    }
    cat_coverage(line, sizeof line, &n, used->n, a->n);
    put_gfield(out, "memory used", line);
}

static void put_gpu_power(FILE *out, const gpufl_model_gpu_t *g, const gpu_acc_t *a) {
    const gstat_t *p = &a->st[G_POWER];
    char line[256], b1[32], b2[32], b3[32];
    size_t n = 0;
    if (p->n) {
        fmt_watts(b1, sizeof b1, gs_avg(p));
        fmt_watts(b2, sizeof b2, p->max);
        cat(line, sizeof line, &n, "avg %s, max %s", b1, b2);
        double limit =
            a->st[G_POWER_LIMIT].n ? a->st[G_POWER_LIMIT].max : (double)g->power_limit_mw;
        if (limit > 0) {
            fmt_watts(b3, sizeof b3, limit);
            cat(line, sizeof line, &n, " of %s limit", b3);
        }
        cat_coverage(line, sizeof line, &n, p->n, a->n);
        put_gfield(out, "power", line);
    }
    /* Energy from the driver's counter: last - first, over the time between. */
    const gcounter_t *e = &a->energy;
    if (e->n >= 2 && e->last_ts > e->first_ts) {
        n = 0;
        line[0] = '\0';
        if (e->last < e->first) {
            cat(line, sizeof line, &n, "? (the energy counter went back)");
        } else {
            double joules = (double)(e->last - e->first) / 1000.0;
            double secs = (double)(e->last_ts - e->first_ts) / 1e9;
            fmt_si(b1, sizeof b1, joules, "J");
            fmt_ns(b2, sizeof b2, (double)(e->last_ts - e->first_ts));
            fmt_si(b3, sizeof b3, joules / secs, "W");
            cat(line, sizeof line, &n, "%s over %s of samples (mean %s)", b1, b2, b3);
        }
        put_gfield(out, "energy", line);
    }
}

static void put_gpu_rates(FILE *out, const gpu_acc_t *a) {
    put_stat_pair(out, "PCIe", "TX", &a->st[G_PCIE_TX], "RX", &a->st[G_PCIE_RX], a->n, fmt_rate);
    put_stat_pair(out, "NVLink", "TX", &a->st[G_NVLINK_TX], "RX", &a->st[G_NVLINK_RX], a->n,
                  fmt_rate);
}

static void put_gpu_ecc(FILE *out, const gpu_acc_t *a) {
    const gcounter_t *sbe = &a->sbe, *dbe = &a->dbe;
    char line[256];
    size_t n = 0;
    if (!sbe->n && !dbe->n) return;
    if ((!sbe->n || sbe->last == 0) && (!dbe->n || dbe->last == 0)) {
        put_gfield(out, "ECC errors", "none");
        return;
    }
    const gcounter_t *c[2] = {sbe, dbe};
    const char *what[2] = {"corrected", "uncorrected"};
    for (int i = 0; i < 2; i++) {
        if (!c[i]->n) continue;
        cat(line, sizeof line, &n, "%s%lld %s", n ? ", " : "", (long long)c[i]->last, what[i]);
    }
    cat(line, sizeof line, &n, " since boot");
    size_t k = 0;
    for (int i = 0; i < 2; i++) {
        if (!c[i]->n || c[i]->last <= c[i]->first) continue;
        cat(line, sizeof line, &n, "%s+%lld %s", k++ ? ", " : " (",
            (long long)(c[i]->last - c[i]->first), what[i]);
    }
    if (k) cat(line, sizeof line, &n, " during the session)");
    put_gfield(out, "ECC errors", line);
}

typedef struct bit_share {
    int bit;
    size_t n;
} bit_share_t;

static int cmp_bit_share(const void *x, const void *y) {
    const bit_share_t *a = x, *b = y;
    if (a->n != b->n) return a->n > b->n ? -1 : 1;
    return a->bit - b->bit;
}

/* The bit named gpu_idle (bit 0 when there is no legend), or -1. */
static int idle_bit(const gpufl_model_t *m) {
    if (!m->has_legend) return 0;
    for (int b = 0; b < GPUFL_MODEL_THROTTLE_BITS; b++)
        if (m->throttle_names[b] && strcmp(m->throttle_names[b], "gpu_idle") == 0) return b;
    return -1;
}

static void put_gpu_throttle(FILE *out, const gpufl_model_t *m, const gpu_acc_t *a) {
    char line[512], cov[64];
    size_t n = 0, k = 0, cn = 0;
    if (!a->throttle_n) return;
    int idle = idle_bit(m);
    bit_share_t shares[GPUFL_MODEL_THROTTLE_BITS];
    for (int b = 0; b < GPUFL_MODEL_THROTTLE_BITS; b++)
        if (b != idle && a->bit_n[b]) shares[k++] = (bit_share_t){b, a->bit_n[b]};
    qsort(shares, k, sizeof *shares, cmp_bit_share);
    cov[0] = '\0';
    cat_coverage(cov, sizeof cov, &cn, a->throttle_n, a->n);
    line[0] = '\0';
    for (size_t i = 0; i < k; i++) {
        const char *name = m->throttle_names[shares[i].bit];
        double pct = 100.0 * (double)shares[i].n / (double)a->throttle_n;
        if (name)
            cat(line, sizeof line, &n, "%s%s %.1f%%", i ? ", " : "", name, pct);
        else
            cat(line, sizeof line, &n, "%sbit %d %.1f%%", i ? ", " : "", shares[i].bit, pct);
        if (i == 0) cat(line, sizeof line, &n, " of samples");
    }
    if (!k) cat(line, sizeof line, &n, "none");
    cat(line, sizeof line, &n, "%s", cov);
    put_gfield(out, "throttle reasons", line);
    if (idle >= 0) {
        snprintf(line, sizeof line, "%.1f%% of samples%s",
                 100.0 * (double)a->bit_n[idle] / (double)a->throttle_n, cov);
        put_gfield(out, "idle", line);
    }
}

static void fmt_pct_val(char *buf, size_t size, double v) { fmt_pct(buf, size, v); }

/* GPM: how busy the SMs, warps, tensor pipes and DRAM really were. */
static void put_gpu_gpm(FILE *out, const gpu_acc_t *a) {
    put_stat(out, "GPM SM active", &a->st[G_SM_ACTIVE], a->n, 0, fmt_pct_val);
    put_stat(out, "GPM SM occupancy", &a->st[G_SM_OCCUPANCY], a->n, 0, fmt_pct_val);
    put_stat(out, "GPM tensor active", &a->st[G_TENSOR], a->n, 0, fmt_pct_val);
    put_stat(out, "GPM DRAM bandwidth", &a->st[G_DRAM_BW], a->n, 0, fmt_pct_val);
    const gstat_t *util = &a->st[G_UTIL], *sm = &a->st[G_SM_ACTIVE];
    if (util->n && sm->n && gs_avg(util) >= 80 && gs_avg(sm) < 50) {
        char line[256];
        snprintf(line, sizeof line,
                 "busy but not efficient: a kernel runs most of the time (GPU util avg %.1f%%), "
                 "yet most SMs are idle (SM active avg %.1f%%)",
                 gs_avg(util), gs_avg(sm));
        put_gfield(out, "efficiency", line);
    }
}

/* The core values a device did not report at all (MIG instances report few). */
static void put_gpu_missing(FILE *out, const gpu_acc_t *a) {
    static const struct {
        int stat;
        const char *name;
    } core[] = {{G_UTIL, "GPU util"}, {G_MEM_USED, "memory used"}, {G_TEMP_GPU, "temperature"},
                {G_POWER, "power"},   {G_CLOCK_SM, "clocks"},      {G_PCIE_TX, "PCIe"}};
    char line[256];
    size_t n = 0;
    line[0] = '\0';
    for (size_t i = 0; i < sizeof core / sizeof core[0]; i++)
        if (!a->st[core[i].stat].n) cat(line, sizeof line, &n, "%s%s", n ? ", " : "", core[i].name);
    if (!a->throttle_n) cat(line, sizeof line, &n, "%sthrottle reasons", n ? ", " : "");
    if (n) put_gfield(out, "not reported", line);
}

static void put_gpu_procs(FILE *out, const gpufl_model_gpu_t *g) {
    char line[1024], at[32], num[32];
    size_t n = 0;
    if (!g->procs_records) return;
    fmt_ns(at, sizeof at, (double)g->procs_ts_ns);
    cat(line, sizeof line, &n, "peak %lld; last (at %s): ", (long long)g->procs_peak, at);
    if (g->procs_count == 0) cat(line, sizeof line, &n, "none");
    size_t shown = g->n_procs < LIST_MAX ? g->n_procs : LIST_MAX;
    for (size_t i = 0; i < shown; i++) {
        cat(line, sizeof line, &n, "%spid %lld", i ? ", " : "", (long long)g->procs[i].pid);
        if (g->procs[i].used_bytes >= 0) {
            fmt_bytes(num, sizeof num, (double)g->procs[i].used_bytes);
            cat(line, sizeof line, &n, " (%s)", num);
        }
    }
    if (g->procs_count > (int64_t)shown)
        cat(line, sizeof line, &n, "%s... and %lld more", shown ? ", " : "",
            (long long)(g->procs_count - (int64_t)shown));
    put_gfield(out, "processes", line);
}

static void put_gpu_device(FILE *out, const gpufl_model_t *m, const gpufl_model_gpu_t *g,
                           const gpu_acc_t *a) {
    char line[256], b1[32], b2[32];
    fprintf(out, "\n  GPU %lld  %s\n", (long long)g->device,
            g->has_info ? or_unknown(g->name) : "(no gpu_info record)");
    if (g->has_info) put_gpu_identity(out, g);
    if (!a->n) {
        put_gfield(out, "samples", "none");
    } else {
        fmt_ns(b1, sizeof b1, (double)a->first_ts);
        fmt_ns(b2, sizeof b2, (double)a->last_ts);
        snprintf(line, sizeof line, "%zu from %s to %s", a->n, b1, b2);
        put_gfield(out, "samples", line);
        put_stat(out, "GPU util", &a->st[G_UTIL], a->n, 0, fmt_pct_val);
        put_stat(out, "memory util", &a->st[G_MEM_UTIL], a->n, 0, fmt_pct_val);
        put_gpu_memory(out, g, a);
        put_stat_pair(out, "temperature", "GPU", &a->st[G_TEMP_GPU], "memory", &a->st[G_TEMP_MEM],
                      a->n, fmt_celsius);
        put_gpu_power(out, g, a);
        put_stat(out, "SM clock", &a->st[G_CLOCK_SM], a->n, 1, fmt_mhz);
        put_stat(out, "memory clock", &a->st[G_CLOCK_MEM], a->n, 1, fmt_mhz);
        put_stat(out, "fan", &a->st[G_FAN], a->n, 0, fmt_pct_val);
        put_gpu_rates(out, a);
        put_gpu_ecc(out, a);
        put_gpu_throttle(out, m, a);
        put_gpu_gpm(out, a);
        put_gpu_missing(out, a);
    }
    put_gpu_procs(out, g);
}

/* "sampling cost: host X µs, NVML Y µs per device and sample". */
static void put_source_costs(FILE *out, const gpufl_model_t *m) {
    char line[512], num[32];
    size_t n = 0;
    line[0] = '\0';
    for (int pass = 0; pass < 3; pass++) { /* host, nvml, then any other */
        for (size_t i = 0; i < m->n_source_costs; i++) {
            const gpufl_model_source_cost_t *c = &m->source_costs[i];
            int is_host = strcmp(c->source, "host") == 0, is_nvml = strcmp(c->source, "nvml") == 0;
            if ((pass == 0 && !is_host) || (pass == 1 && !is_nvml) ||
                (pass == 2 && (is_host || is_nvml)))
                continue;
            double mean = c->mean_ns >= 0 ? (double)c->mean_ns
                          : c->samples > 0 && c->total_ns >= 0
                              ? (double)c->total_ns / (double)c->samples
                              : -1;
            if (mean < 0 || c->samples == 0) continue;
            fmt_ns(num, sizeof num, mean);
            cat(line, sizeof line, &n, "%s%s %s%s", n ? ", " : "", is_nvml ? "NVML" : c->source,
                num, is_nvml ? " per device and sample" : "");
        }
    }
    if (n) fprintf(out, "\n  sampling cost: %s\n", line);
}

static int put_gpu(FILE *out, const gpufl_model_t *m) {
    if (!m->n_gpus) {
        put_no_gpu(out, m);
        put_source_costs(out, m);
        return 0;
    }
    gpu_acc_t *acc = calloc(m->n_gpus, sizeof *acc);
    if (!acc) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
    const gpufl_model_gpu_t *last = NULL;
    for (size_t i = 0; i < m->n_gpu_samples; i++) {
        const gpufl_model_gpu_sample_t *s = &m->gpu_samples[i];
        if (!last || last->device != s->device) last = gpufl__model_gpu_find(m, s->device);
        if (last) acc_gpu_sample(&acc[last - m->gpus], s);
    }
    fprintf(out, "\nGPU devices\n");
    fprintf(out, "  %zu device%s, %zu GPU sample%s\n", m->n_gpus, plural(m->n_gpus),
            m->n_gpu_samples, plural(m->n_gpu_samples));
    for (size_t i = 0; i < m->n_gpus; i++) put_gpu_device(out, m, &m->gpus[i], &acc[i]);
    put_source_costs(out, m);
    free(acc);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Kernel hotspots and memory transfers (Trace engine)                      */
/* ---------------------------------------------------------------------- */

#define HOTSPOTS_MAX 10 /* kernel names listed */

typedef struct kgroup {
    const char *name;
    size_t calls;
    double total;
    int64_t min, max, p50, p99;
} kgroup_t;

static int cmp_kernel_name_dur(const void *a, const void *b) {
    const gpufl_model_kernel_t *x = *(const gpufl_model_kernel_t *const *)a;
    const gpufl_model_kernel_t *y = *(const gpufl_model_kernel_t *const *)b;
    int c = strcmp(x->demangled, y->demangled);
    if (c) return c;
    int64_t dx = x->end_ns - x->start_ns, dy = y->end_ns - y->start_ns;
    return dx < dy ? -1 : dx > dy;
}

static int cmp_kgroup(const void *a, const void *b) {
    const kgroup_t *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The value at rank ceil(pct/100 * n) (1-based) of n sorted durations. */
static int64_t rank_dur(const gpufl_model_kernel_t *const *k, size_t n, unsigned pct) {
    size_t rank = (n * pct + 99) / 100;
    if (rank < 1) rank = 1;
    return k[rank - 1]->end_ns - k[rank - 1]->start_ns;
}

static void put_hotspot_row(FILE *out, size_t name_w, const char *name, const char *const c[8]) {
    fputs("  ", out);
    put_cell(out, name, name_w, 0);
    for (int i = 0; i < 8; i++) {
        fputc(' ', out);
        put_cell(out, c[i], i == 0 ? 6 : 9, 1);
    }
    fputc('\n', out);
}

static int put_kernels(FILE *out, const gpufl_model_t *m) {
    if (!m->n_kernels) return 0;
    size_t n = m->n_kernels;
    const gpufl_model_kernel_t **by_name = malloc(n * sizeof *by_name);
    kgroup_t *groups = malloc(n * sizeof *groups);
    if (!by_name || !groups) {
        free(by_name);
        free(groups);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
    }
    for (size_t i = 0; i < n; i++) by_name[i] = &m->kernels[i];
    qsort(by_name, n, sizeof *by_name, cmp_kernel_name_dur);
    size_t ng = 0;
    double all = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        kgroup_t *g = &groups[ng++];
        g->name = by_name[i]->demangled;
        g->total = 0;
        while (j < n && strcmp(by_name[j]->demangled, g->name) == 0) {
            g->total += (double)(by_name[j]->end_ns - by_name[j]->start_ns);
            j++;
        }
        g->calls = j - i;
        g->min = by_name[i]->end_ns - by_name[i]->start_ns;
        g->max = by_name[j - 1]->end_ns - by_name[j - 1]->start_ns;
        g->p50 = rank_dur(by_name + i, g->calls, 50);
        g->p99 = rank_dur(by_name + i, g->calls, 99);
        all += g->total;
        i = j;
    }
    qsort(groups, ng, sizeof *groups, cmp_kgroup);
    size_t shown = ng < HOTSPOTS_MAX ? ng : HOTSPOTS_MAX;
    size_t name_w = 6;
    for (size_t i = 0; i < shown; i++) {
        size_t w = text_width(groups[i].name);
        if (w > name_w) name_w = w;
    }
    if (name_w > NAME_COL_MAX) name_w = NAME_COL_MAX;

    fprintf(out, "\nKernel hotspots\n");
    fprintf(out, "  top %zu kernel name%s by total GPU time; p50, p99: exact order statistics\n\n",
            shown, plural(shown));
    static const char *const heads[8] = {"calls", "total", "avg", "min",
                                         "max",   "p50",   "p99", "share"};
    put_hotspot_row(out, name_w, "kernel", heads);
    for (size_t i = 0; i < shown; i++) {
        const kgroup_t *g = &groups[i];
        char c[8][32];
        const char *cp[8] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]};
        snprintf(c[0], sizeof c[0], "%zu", g->calls);
        fmt_ns(c[1], sizeof c[1], g->total);
        fmt_ns(c[2], sizeof c[2], g->total / (double)g->calls);
        fmt_ns(c[3], sizeof c[3], (double)g->min);
        fmt_ns(c[4], sizeof c[4], (double)g->max);
        fmt_ns(c[5], sizeof c[5], (double)g->p50);
        fmt_ns(c[6], sizeof c[6], (double)g->p99);
        fmt_pct(c[7], sizeof c[7], all > 0 ? 100.0 * g->total / all : 0);
        put_hotspot_row(out, name_w, g->name, cp);
    }
    if (ng > shown) fprintf(out, "  ... and %zu more name%s\n", ng - shown, plural(ng - shown));
    char total[32];
    fmt_ns(total, sizeof total, all);
    fprintf(out, "\n  %zu kernel%s, %zu distinct name%s, %s GPU time\n", n, plural(n), ng,
            plural(ng), total);
    free(by_name);
    free(groups);
    return 0;
}

enum { DIR_HTOD, DIR_DTOH, DIR_DTOD, DIR_PEER, DIR_OTHER, NDIR };

typedef struct dir_acc {
    size_t count, pageable, pinned;
    double bytes, time;
} dir_acc_t;

static void put_copy_row(FILE *out, const char *dir, const char *const c[6]) {
    fputs("  ", out);
    put_cell(out, dir, 14, 0);
    for (int i = 0; i < 6; i++) {
        fputc(' ', out);
        put_cell(out, c[i], i == 0 ? 6 : i == 3 ? 12 : 9, 1);
    }
    fputc('\n', out);
}

static void put_copies(FILE *out, const gpufl_model_t *m) {
    if (!m->n_copies) return;
    static const char *const dir_names[NDIR] = {"host\xe2\x86\x92"
                                                "device",
                                                "device\xe2\x86\x92"
                                                "host",
                                                "device\xe2\x86\x92"
                                                "device",
                                                "peer", "other"};
    dir_acc_t acc[NDIR];
    memset(acc, 0, sizeof acc);
    double bytes = 0;
    for (size_t i = 0; i < m->n_copies; i++) {
        const gpufl_model_copy_t *c = &m->copies[i];
        int d, host = 0;
        switch (c->copy_kind) {
        case GPUFL_MODEL_COPY_HTOD: d = DIR_HTOD, host = c->src_kind; break;
        case GPUFL_MODEL_COPY_DTOH: d = DIR_DTOH, host = c->dst_kind; break;
        case GPUFL_MODEL_COPY_DTOD: d = DIR_DTOD; break;
        case GPUFL_MODEL_COPY_PTOP: d = DIR_PEER; break;
        default: d = DIR_OTHER; break;
        }
        dir_acc_t *a = &acc[d];
        a->count++;
        a->bytes += (double)c->bytes;
        a->time += (double)(c->end_ns - c->start_ns);
        a->pageable += host == GPUFL_MODEL_MEM_PAGEABLE;
        a->pinned += host == GPUFL_MODEL_MEM_PINNED;
        bytes += (double)c->bytes;
    }
    char total[32];
    fmt_bytes(total, sizeof total, bytes);
    fprintf(out, "\nMemory transfers\n");
    fprintf(out, "  %zu cop%s, %s; bandwidth: bytes / total time\n\n", m->n_copies,
            m->n_copies == 1 ? "y" : "ies", total);
    static const char *const heads[6] = {"count",     "bytes",    "time",
                                         "bandwidth", "pageable", "pinned"};
    put_copy_row(out, "direction", heads);
    for (int d = 0; d < NDIR; d++) {
        const dir_acc_t *a = &acc[d];
        if (!a->count) continue;
        char c[6][32];
        const char *cp[6] = {c[0], c[1], c[2], c[3], c[4], c[5]};
        snprintf(c[0], sizeof c[0], "%zu", a->count);
        fmt_bytes(c[1], sizeof c[1], a->bytes);
        fmt_ns(c[2], sizeof c[2], a->time);
        if (a->time > 0) {
            char num[20];
            sig3(num, sizeof num, a->bytes / (a->time / 1e9) / (1024.0 * 1024.0 * 1024.0));
            snprintf(c[3], sizeof c[3], "%s GiB/s", num);
        } else {
            snprintf(c[3], sizeof c[3], "-");
        }
        if (d == DIR_HTOD || d == DIR_DTOH) {
            snprintf(c[4], sizeof c[4], "%zu", a->pageable);
            snprintf(c[5], sizeof c[5], "%zu", a->pinned);
        } else {
            snprintf(c[4], sizeof c[4], "-");
            snprintf(c[5], sizeof c[5], "-");
        }
        put_copy_row(out, dir_names[d], cp);
    }
}

/* ---------------------------------------------------------------------- */
/* Kernel details: launch configurations and occupancy (Trace engine)       */
/* ---------------------------------------------------------------------- */

#define DETAILS_MAX     10  /* kernel names detailed */
#define CONFIGS_MAX     8   /* launch configurations listed per name */
#define KERNEL_NAME_MAX 100 /* widest kernel name line, in characters */
#define DETAIL_COLS     12

/* The launches of one kernel name with one kernel_config id. */
typedef struct kconf {
    const gpufl_model_kernel_t *first;      /* one of its launches */
    const gpufl_model_kernel_config_t *rec; /* NULL when none or missing */
    const char *name;
    int64_t config; /* UNKNOWN: the launches name none */
    size_t calls, name_calls;
    double total, name_total; /* GPU time of the group, of all groups of the name */
    int same_grid, same_block, same_dsmem;
} kconf_t;

/* Launches by name, then config, then log order. */
static int cmp_kernel_name_config(const void *a, const void *b) {
    const gpufl_model_kernel_t *x = *(const gpufl_model_kernel_t *const *)a;
    const gpufl_model_kernel_t *y = *(const gpufl_model_kernel_t *const *)b;
    int c = strcmp(x->demangled, y->demangled);
    if (c) return c;
    if (x->config != y->config) return x->config < y->config ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Names by total GPU time, then name; in a name, configs by time, then id
 * (launches without one last). */
static int cmp_kconf(const void *a, const void *b) {
    const kconf_t *x = a, *y = b;
    if (x->name_total != y->name_total) return x->name_total > y->name_total ? -1 : 1;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    uint64_t cx = (uint64_t)x->config, cy = (uint64_t)y->config; /* UNKNOWN (-1) sorts last */
    return cx < cy ? -1 : cx > cy;
}

/* Groups the launches by name and config into g (n entries at most).
 * Returns the number of groups. */
static size_t group_kernel_configs(const gpufl_model_t *m, const gpufl_model_kernel_t **ks,
                                   kconf_t *g) {
    size_t n = m->n_kernels, ng = 0;
    for (size_t i = 0; i < n; i++) ks[i] = &m->kernels[i];
    qsort(ks, n, sizeof *ks, cmp_kernel_name_config);
    for (size_t i = 0, j; i < n; i = j) {
        kconf_t *c = &g[ng++];
        const gpufl_model_kernel_t *f = ks[i];
        memset(c, 0, sizeof *c);
        c->first = f;
        c->name = f->demangled;
        c->config = f->config;
        c->rec = gpufl__model_config_find(m, f->config);
        c->same_grid = c->same_block = c->same_dsmem = 1;
        for (j = i; j < n && ks[j]->config == c->config && strcmp(ks[j]->demangled, c->name) == 0;
             j++) {
            const gpufl_model_kernel_t *k = ks[j];
            c->total += (double)(k->end_ns - k->start_ns);
            c->same_grid &=
                k->grid_x == f->grid_x && k->grid_y == f->grid_y && k->grid_z == f->grid_z;
            c->same_block &=
                k->block_x == f->block_x && k->block_y == f->block_y && k->block_z == f->block_z;
            c->same_dsmem &= k->dynamic_smem_bytes == f->dynamic_smem_bytes;
        }
        c->calls = j - i;
    }
    for (size_t i = 0, j; i < ng; i = j) {
        double total = 0;
        size_t calls = 0;
        for (j = i; j < ng && strcmp(g[j].name, g[i].name) == 0; j++)
            total += g[j].total, calls += g[j].calls;
        for (size_t k = i; k < j; k++) g[k].name_total = total, g[k].name_calls = calls;
    }
    qsort(g, ng, sizeof *g, cmp_kconf);
    return ng;
}

static void put_detail_row(FILE *out, const char *const c[DETAIL_COLS]) {
    static const size_t width[DETAIL_COLS] = {6, 6, 9, 14, 12, 5, 19, 8, 9, 7, 14, 0};
    fputs("    ", out);
    for (int i = 0; i < DETAIL_COLS; i++) {
        if (i) fputc(' ', out);
        if (width[i])
            put_cell(out, c[i], width[i], 1);
        else
            fputs(c[i], out);
    }
    fputc('\n', out);
}

static void fmt_int(char *buf, size_t size, int64_t v) {
    if (v < 0)
        snprintf(buf, size, "?");
    else
        snprintf(buf, size, "%lld", (long long)v);
}

/* The record has gpufl's breakdown into per-resource limits. */
static int has_limits(const gpufl_model_kernel_config_t *r) {
    return r->limit_warps >= 0 || r->limit_registers >= 0 || r->limit_smem >= 0 ||
           r->limit_blocks >= 0 || *r->limiter;
}

static void put_kconf(FILE *out, const kconf_t *c) {
    const gpufl_model_kernel_t *k = c->first;
    const gpufl_model_kernel_config_t *r = c->rec;
    char v[DETAIL_COLS][112], b1[24], b2[24], l[4][24];
    const char *cp[DETAIL_COLS];
    for (int i = 0; i < DETAIL_COLS; i++) cp[i] = v[i];
    if (c->config < 0)
        snprintf(v[0], sizeof v[0], "-");
    else
        snprintf(v[0], sizeof v[0], "%lld%s", (long long)c->config, r ? "" : "?");
    snprintf(v[1], sizeof v[1], "%zu", c->calls);
    fmt_ns(v[2], sizeof v[2], c->total);
    if (c->same_grid)
        snprintf(v[3], sizeof v[3], "%dx%dx%d", k->grid_x, k->grid_y, k->grid_z);
    else
        snprintf(v[3], sizeof v[3], "various");
    if (c->same_block)
        snprintf(v[4], sizeof v[4], "%dx%dx%d", k->block_x, k->block_y, k->block_z);
    else
        snprintf(v[4], sizeof v[4], "various");
    snprintf(v[5], sizeof v[5], "%d", k->registers);
    fmt_bytes(b1, sizeof b1, (double)k->static_smem_bytes);
    fmt_bytes(b2, sizeof b2, (double)k->dynamic_smem_bytes);
    snprintf(v[6], sizeof v[6], "%s + %s", b1, c->same_dsmem ? b2 : "various");
    fmt_bytes(v[7], sizeof v[7], (double)k->local_bytes_per_thread);
    if (r && r->occupancy >= 0)
        fmt_pct(v[8], sizeof v[8], 100.0 * r->occupancy);
    else
        snprintf(v[8], sizeof v[8], "-");
    for (int i = 9; i < DETAIL_COLS; i++) snprintf(v[i], sizeof v[i], "-");
    if (r && !*r->occupancy_why) {
        fmt_int(b1, sizeof b1, r->active_warps);
        fmt_int(b2, sizeof b2, r->max_warps);
        snprintf(v[9], sizeof v[9], "%s/%s", b1, b2);
    }
    if (r && has_limits(r)) {
        fmt_int(l[0], sizeof l[0], r->limit_warps);
        fmt_int(l[1], sizeof l[1], r->limit_registers);
        fmt_int(l[2], sizeof l[2], r->limit_smem);
        fmt_int(l[3], sizeof l[3], r->limit_blocks);
        snprintf(v[10], sizeof v[10], "%s/%s/%s/%s", l[0], l[1], l[2], l[3]);
        snprintf(v[11], sizeof v[11], "%s%s", *r->limiter ? r->limiter : "?",
                 r->breakdown_agrees == 0 ? " *" : "");
    }
    put_detail_row(out, cp);
}

/* Footnotes for the groups shown: config ids without a record, why the
 * occupancy is unknown, configs without a breakdown, and configs whose
 * limits do not give the driver's blocks per SM. */
static void put_kconf_notes(FILE *out, const kconf_t *g, size_t ng) {
    size_t no_breakdown = 0;
    for (size_t i = 0; i < ng; i++) {
        const gpufl_model_kernel_config_t *r = g[i].rec;
        if (g[i].config > 0 && !r)
            fprintf(out, "  ? config %lld: no kernel_config record in the log\n",
                    (long long)g[i].config);
        if (!r) continue;
        if (*r->occupancy_why) {
            size_t same = 0, seen = 0;
            for (size_t k = 0; k < ng; k++) {
                const char *why = g[k].rec ? g[k].rec->occupancy_why : "";
                if (strcmp(why, r->occupancy_why) != 0) continue;
                seen += k < i;
                same++;
            }
            if (!seen)
                fprintf(out, "  occupancy unknown for %zu configuration%s: %s\n", same,
                        plural(same), r->occupancy_why);
            continue;
        }
        if (!has_limits(r)) {
            no_breakdown++;
            continue;
        }
        if (r->breakdown_agrees != 0) continue;
        int64_t lim[4] = {r->limit_warps, r->limit_registers, r->limit_smem, r->limit_blocks};
        int64_t low = -1;
        for (int k = 0; k < 4; k++)
            if (lim[k] >= 0 && (low < 0 || lim[k] < low)) low = lim[k];
        char a[24], b[24];
        fmt_int(a, sizeof a, low);
        fmt_int(b, sizeof b, r->blocks_per_sm);
        fprintf(out,
                "  * config %lld: the limits allow %s blocks per SM, the occupancy calculator "
                "says %s (breakdown_agrees false)\n",
                (long long)r->id, a, b);
    }
    if (no_breakdown)
        fprintf(out, "  limits unknown for %zu configuration%s: no breakdown rules for the GPU\n",
                no_breakdown, plural(no_breakdown));
}

static int put_kernel_details(FILE *out, const gpufl_model_t *m) {
    size_t n = m->n_kernels;
    if (!n) return 0;
    const gpufl_model_kernel_t **ks = malloc(n * sizeof *ks);
    kconf_t *g = malloc(n * sizeof *g);
    if (!ks || !g) {
        free(ks);
        free(g);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
    }
    size_t ng = group_kernel_configs(m, ks, g);
    size_t names = 0, configs = 0, unconfigured = 0;
    for (size_t i = 0; i < ng; i++) {
        names += i == 0 || strcmp(g[i].name, g[i - 1].name) != 0;
        if (g[i].config < 0)
            unconfigured += g[i].calls;
        else
            configs++;
    }
    fprintf(out, "\nKernel details\n");
    if (configs) {
        fprintf(out, "  %zu kernel name%s, %zu launch configuration%s", names, plural(names),
                configs, plural(configs));
        if (unconfigured)
            fprintf(out, ", %zu launch%s without one", unconfigured, unconfigured == 1 ? "" : "es");
    } else {
        fprintf(out, "  %zu kernel name%s; no launch configuration (kernel_config) in the log",
                names, plural(names));
    }
    fprintf(out, "; by total GPU time\n");
    fprintf(out, "  config: kernel_config id; regs: per thread; smem: per block; local: per thread "
                 "(spills);\n  occupancy: theoretical, active/max warps per SM; limits: blocks "
                 "per SM that warps,\n  registers, shared memory and the block limit allow; "
                 "limiter: the smallest\n\n");
    static const char *const heads[DETAIL_COLS] = {
        "config",          "calls", "total",     "grid",  "block",          "regs",
        "smem static+dyn", "local", "occupancy", "warps", "limits w/r/s/b", "limiter"};
    put_detail_row(out, heads);
    size_t shown = 0, end = 0;
    for (size_t i = 0, j; i < ng && shown < DETAILS_MAX; i = j) {
        for (j = i; j < ng && strcmp(g[j].name, g[i].name) == 0; j++) {
        }
        char total[32];
        size_t w = text_width(g[i].name);
        fmt_ns(total, sizeof total, g[i].name_total);
        fputs("  ", out);
        put_cell(out, g[i].name, w < KERNEL_NAME_MAX ? w : KERNEL_NAME_MAX, 0);
        fprintf(out, "  %s in %zu call%s\n", total, g[i].name_calls, plural(g[i].name_calls));
        for (size_t k = i; k < j && k < i + CONFIGS_MAX; k++) put_kconf(out, &g[k]);
        if (j - i > CONFIGS_MAX)
            fprintf(out, "    ... and %zu more configuration%s\n", j - i - CONFIGS_MAX,
                    plural(j - i - CONFIGS_MAX));
        shown++;
        end = j;
    }
    if (names > shown)
        fprintf(out, "  ... and %zu more kernel name%s\n", names - shown, plural(names - shown));
    put_kconf_notes(out, g, end);
    free(ks);
    free(g);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* GPU time per scope (Trace engine rows attributed to scopes)              */
/* ---------------------------------------------------------------------- */

/* "12 kernels, 2 copies, 1 memset", or "-". */
static void fmt_work(char *buf, size_t size, const gpufl_model_gpu_work_t *w) {
    size_t n = 0;
    buf[0] = '\0';
    if (w->kernels)
        cat(buf, size, &n, "%llu kernel%s", (unsigned long long)w->kernels,
            plural((size_t)w->kernels));
    if (w->copies)
        cat(buf, size, &n, "%s%llu cop%s", n ? ", " : "", (unsigned long long)w->copies,
            w->copies == 1 ? "y" : "ies");
    if (w->memsets)
        cat(buf, size, &n, "%s%llu memset%s", n ? ", " : "", (unsigned long long)w->memsets,
            plural((size_t)w->memsets));
    if (!n) snprintf(buf, size, "-");
}

static int has_work(const gpufl_model_gpu_work_t *w) {
    return w->kernels + w->copies + w->memsets > 0;
}

static void put_scope_gpu_row(FILE *out, size_t name_w, const char *label, const char *host,
                              const char *gpu, const char *self, const char *work) {
    fputs("  ", out);
    put_cell(out, label, name_w, 0);
    fputc(' ', out);
    put_cell(out, host, 9, 1);
    fputc(' ', out);
    put_cell(out, gpu, 9, 1);
    fputc(' ', out);
    put_cell(out, self, 9, 1);
    fprintf(out, "  %s\n", work);
}

/* Kernel lines under a scope begin with a mark, unlike its child scopes. */
#define KERNEL_MARK       "\xc2\xb7 "
#define KERNEL_MARK_WIDTH 2

/* The widest label of a scope row at depth and of its kernel lines. */
static size_t gpu_label_width(size_t w, size_t depth, const char *name,
                              const gpufl_model_scope_gpu_t *g) {
    size_t d = depth < INDENT_MAX ? depth : INDENT_MAX;
    if (2 * d + text_width(name) > w) w = 2 * d + text_width(name);
    d = depth + 1 < INDENT_MAX ? depth + 1 : INDENT_MAX;
    for (size_t i = 0; i < g->n_top; i++) {
        size_t kw = 2 * d + KERNEL_MARK_WIDTH + text_width(g->top[i].name);
        if (kw > w) w = kw;
    }
    return w;
}

/* A scope row (host < 0: none) and its kernel lines below it. */
static void put_scope_gpu(FILE *out, size_t name_w, char *label, size_t depth, const char *name,
                          double host, const gpufl_model_scope_gpu_t *g) {
    char h[32], t[32], self[32], work[128];
    if (host >= 0)
        fmt_ns(h, sizeof h, host);
    else
        snprintf(h, sizeof h, "-");
    fmt_ns(t, sizeof t, gpufl__model_gpu_ns(&g->total));
    fmt_ns(self, sizeof self, gpufl__model_gpu_ns(&g->self));
    fmt_work(work, sizeof work, &g->total);
    indented(label, depth, name);
    put_scope_gpu_row(out, name_w, label, h, t, self, work);
    for (size_t i = 0; i < g->n_top; i++) {
        const gpufl_model_top_kernel_t *k = &g->top[i];
        fmt_ns(t, sizeof t, k->total_ns);
        snprintf(work, sizeof work, "%llu call%s", (unsigned long long)k->calls,
                 plural((size_t)k->calls));
        snprintf(h, sizeof h, KERNEL_MARK);
        indented(label, depth + 1, h);
        size_t len = strlen(label);
        snprintf(label + len, LABEL_SIZE - len, "%.*s", NAME_COL_MAX * 4, k->name);
        put_scope_gpu_row(out, name_w, label, "", "", t, work);
    }
    if (g->kernel_names > g->n_top) {
        snprintf(work, sizeof work, KERNEL_MARK "... and %zu more kernel name%s",
                 g->kernel_names - g->n_top, plural(g->kernel_names - g->n_top));
        indented(label, depth + 1, work);
        put_scope_gpu_row(out, name_w, label, "", "", "", "");
    }
}

static int put_scopes_gpu(FILE *out, const gpufl_model_t *m) {
    if (!m->n_kernels && !m->n_copies && !m->n_memsets) return 0;
    if (!m->gpu_scoped_rows && !m->n_scope_paths) return 0; /* nothing to attribute to */
    fprintf(out, "\nGPU time per scope\n");
    if (!m->gpu_scoped_rows) {
        fprintf(out, "  no kernel, copy or memset names a scope (none was open at a launch, or "
                     "the log's\n  Trace engine does not attribute work to scopes)\n");
        return 0;
    }
    int rc = 0;
    size_t n = m->n_scope_paths, hidden = 0;
    double *key = malloc((n ? n : 1) * sizeof *key); /* n is 0 when scope.log is missing */
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    char *label = malloc(LABEL_SIZE);
    if (!key || !order || !label) {
        rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
        goto free_all;
    }
    double in_scopes = 0;
    size_t name_w = 5;
    for (size_t i = 0; i < n; i++) {
        const gpufl_model_scope_path_t *p = &m->scope_paths[i];
        key[i] = gpufl__model_gpu_ns(&p->gpu.total);
        in_scopes += gpufl__model_gpu_ns(&p->gpu.self);
        if (has_work(&p->gpu.total))
            name_w = gpu_label_width(name_w, p->depth, p->name, &p->gpu);
        else
            hidden++;
    }
    name_w = gpu_label_width(name_w, 0, "(unknown scope)", &m->gpu_unknown_scope);
    name_w = gpu_label_width(name_w, 0, "(no scope)", &m->gpu_no_scope);
    if (name_w > NAME_COL_MAX) name_w = NAME_COL_MAX;
    rc = tree_order(m, key, order);
    if (rc) goto free_all;

    char a[32], b[32];
    fmt_ns(a, sizeof a, in_scopes);
    fmt_ns(b, sizeof b,
           in_scopes + gpufl__model_gpu_ns(&m->gpu_no_scope.self) +
               gpufl__model_gpu_ns(&m->gpu_unknown_scope.self));
    fprintf(out, "  %s of %s GPU time (kernels, copies, memsets) ran in scopes\n", a, b);
    int64_t lost;
    if (gpufl__reader_int(json_object_get(m->trace_stats, "unattributed"), &lost) == 0 && lost > 0)
        fprintf(out,
                "  %lld record%s without a launch note (launched before the session, or the note "
                "was\n  overwritten) count%s under (no scope)\n",
                (long long)lost, lost == 1 ? "" : "s", lost == 1 ? "s" : "");
    fprintf(out, "  host: wall time of all calls; gpu: GPU time of the work launched in the scope "
                 "and in\n  the scopes inside it (work counts it); self: in the scope alone; "
                 "\xc2\xb7 kernels launched\n  in the scope itself, by GPU time\n");
    if (hidden)
        fprintf(out, "  %zu scope path%s without GPU work not shown\n", hidden, plural(hidden));
    fputc('\n', out);
    put_scope_gpu_row(out, name_w, "scope", "host", "gpu", "self", "work");
    for (size_t k = 0; k < n; k++) {
        const gpufl_model_scope_path_t *p = &m->scope_paths[order[k]];
        if (!has_work(&p->gpu.total)) continue;
        put_scope_gpu(out, name_w, label, p->depth, p->name, p->calls ? p->total_ns : -1, &p->gpu);
    }
    if (has_work(&m->gpu_unknown_scope.self))
        put_scope_gpu(out, name_w, label, 0, "(unknown scope)", -1, &m->gpu_unknown_scope);
    if (has_work(&m->gpu_no_scope.self))
        put_scope_gpu(out, name_w, label, 0, "(no scope)", -1, &m->gpu_no_scope);
free_all:
    free(key);
    free(order);
    free(label);
    return rc;
}

static void put_problems(FILE *out, const gpufl_model_t *m) {
    size_t total = m->n_warnings + (size_t)m->warnings_over_cap;
    if (!total) return;
    fprintf(out, "\nLog problems\n");
    for (size_t i = 0; i < m->n_warnings && i < PROBLEMS_MAX; i++) {
        const gpufl_model_warning_t *w = &m->warnings[i];
        if (!*w->file)
            fprintf(out, "  session: %s\n", w->message);
        else if (!w->line)
            fprintf(out, "  %s: %s\n", w->file, w->message);
        else
            fprintf(out, "  %s:%llu: %s\n", w->file, (unsigned long long)w->line, w->message);
    }
    if (total > PROBLEMS_MAX) fprintf(out, "  ... and %zu more\n", total - PROBLEMS_MAX);
}

/* ---------------------------------------------------------------------- */
/* Public                                                                   */
/* ---------------------------------------------------------------------- */

int gpufl__report_write(const gpufl_model_t *m, FILE *out) {
    if (!m || !out) return gpufl__set_error(GPUFL_EINVAL, "report: no model or no output");
    const char *app = or_unknown(m->header.app_name);
    fprintf(out, "gpufl report: %s\n", app);
    size_t w = text_width(app) + 14;
    for (size_t i = 0; i < w; i++) fputc('=', out);
    fputs("\n\n", out);
    int rc = put_summary(out, m);
    if (!rc) rc = put_scopes(out, m);
    if (!rc) rc = put_system(out, m);
    if (!rc) rc = put_gpu(out, m);
    if (!rc) rc = put_kernels(out, m);
    if (!rc) rc = put_kernel_details(out, m);
    if (rc) return rc;
    put_copies(out, m);
    rc = put_scopes_gpu(out, m);
    if (rc) return rc;
    put_problems(out, m);
    if (fflush(out) != 0 || ferror(out))
        return gpufl__set_error(GPUFL_EIO, "report: writing the report failed");
    return 0;
}

int gpufl__report_session_dir(const char *session_dir, FILE *out) {
    gpufl_model_t *m = NULL;
    int rc = gpufl__model_load(session_dir, &m);
    if (rc) return rc;
    rc = gpufl__report_write(m, out);
    gpufl__model_destroy(m);
    return rc;
}
