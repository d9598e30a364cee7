/*
 * report.c - formats the session model as a text report for people.
 *
 * Sections: session summary, scope timing (a tree of scope paths), system
 * metrics, then GPU sections (none yet) and the log problems met while
 * reading. Values use human units with three significant digits; nothing
 * here depends on the clock, the locale's time zone or memory addresses, so
 * the same logs always give the same bytes.
 */
#include "analysis/report.h"

#include "core/error.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define LIST_MAX 10         /* events, open scopes, window names listed */
#define PROBLEMS_MAX 20     /* log problems listed */
#define NAME_COL_MAX 50     /* widest scope column, in characters */
#define INDENT_MAX 20       /* deepest indentation level shown */

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
            n += (size_t)snprintf(line + n, sizeof line - n, "%s%s %lld", n ? ", " : "",
                                  c[i].name, (long long)c[i].v);
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
    snprintf(line, sizeof line, "%zu scope%s (%zu open), %zu host sample%s, %zu system window%s, "
             "%zu event%s", m->n_scopes, plural(m->n_scopes), m->n_open_scopes, m->n_samples,
             plural(m->n_samples), starts, plural(starts), m->n_events, plural(m->n_events));
    put_field(out, "records", line);
    put_drops(out, m);
    if (put_events(out, m)) return GPUFL_ENOMEM;
    put_log_lines(out, m);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Scope timing                                                             */
/* ---------------------------------------------------------------------- */

typedef struct node {
    const char *path;
    const char *name;
    int64_t parent_scope_id; /* an instance's parent scope, 0 when none */
    size_t calls, open, implicit, tags;
    double total, min, max;
    double bench_total, bench_iters; /* over closed instances with repeat > 0 */
    long parent;                     /* node index, -1 for a root */
    size_t depth;
} node_t;

typedef struct node_key {
    long parent;
    double total;
    const char *path;
    size_t node;
} node_key_t;

static int cmp_scope_path_tag(const void *a, const void *b) {
    const gpufl_model_scope_t *x = *(const gpufl_model_scope_t *const *)a;
    const gpufl_model_scope_t *y = *(const gpufl_model_scope_t *const *)b;
    int c = strcmp(x->path, y->path);
    if (c) return c;
    c = strcmp(x->tag, y->tag);
    if (c) return c;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Siblings: larger total first, then by path. */
static int cmp_node_key(const void *a, const void *b) {
    const node_key_t *x = a, *y = b;
    if (x->parent != y->parent) return x->parent < y->parent ? -1 : 1;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return strcmp(x->path, y->path);
}

static long find_node(const node_t *nodes, size_t n, const char *path, size_t len) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strncmp(nodes[mid].path, path, len);
        if (c == 0 && nodes[mid].path[len] != '\0') c = 1;
        if (c == 0) return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The enclosing node: the path of a parent instance, else the longest
 * existing '/' prefix of the path. */
static long parent_of(const gpufl_model_t *m, const node_t *nodes, size_t n, size_t i) {
    const gpufl_model_scope_t *p = gpufl__model_scope_find(m, nodes[i].parent_scope_id);
    if (p) {
        long k = find_node(nodes, n, p->path, strlen(p->path));
        if (k >= 0 && (size_t)k != i) return k;
    }
    const char *path = nodes[i].path;
    size_t len = strlen(path);
    while (len > 0) {
        while (len > 0 && path[len - 1] != '/') len--;
        if (len == 0) break;
        len--; /* drop the '/' */
        long k = find_node(nodes, n, path, len);
        if (k >= 0) return k;
    }
    return -1;
}

/* Groups the scope instances into nodes, one per path, sorted by path. */
static size_t build_nodes(const gpufl_model_t *m, const gpufl_model_scope_t **by_path,
                          node_t *nodes) {
    size_t n = 0;
    for (size_t i = 0; i < m->n_scopes; i++) by_path[i] = &m->scopes[i];
    qsort(by_path, m->n_scopes, sizeof *by_path, cmp_scope_path_tag);
    for (size_t i = 0; i < m->n_scopes; i++) {
        const gpufl_model_scope_t *s = by_path[i];
        node_t *nd = n ? &nodes[n - 1] : NULL;
        if (!nd || strcmp(nd->path, s->path) != 0) {
            nd = &nodes[n++];
            memset(nd, 0, sizeof *nd);
            nd->path = s->path;
            nd->name = s->name;
            nd->parent = -1;
            if (*s->tag) nd->tags = 1;
        } else if (*s->tag && strcmp(by_path[i - 1]->tag, s->tag) != 0) {
            nd->tags++;
        }
        if (!nd->parent_scope_id && s->parent > 0) nd->parent_scope_id = s->parent;
        if (s->open) {
            nd->open++;
            continue;
        }
        /* in double: any two int64 times from a damaged log may differ by more than int64 holds */
        double d = s->end_ns > s->begin_ns ? (double)s->end_ns - (double)s->begin_ns : 0.0;
        if (nd->calls == 0 || d < nd->min) nd->min = d;
        if (nd->calls == 0 || d > nd->max) nd->max = d;
        nd->calls++;
        nd->total += d;
        nd->implicit += s->implicit;
        if (s->repeat > 0) {
            nd->bench_total += d;
            nd->bench_iters += s->repeat;
        }
    }
    /* When a name could not be resolved, show the last part of the path. */
    for (size_t i = 0; i < n; i++) {
        if (strcmp(nodes[i].name, "?") == 0 && strcmp(nodes[i].path, "?") != 0) {
            const char *slash = strrchr(nodes[i].path, '/');
            nodes[i].name = slash ? slash + 1 : nodes[i].path;
        }
    }
    return n;
}

/* Links nodes to their parents, dropping links that would form a cycle. */
static void link_nodes(const gpufl_model_t *m, node_t *nodes, size_t n) {
    for (size_t i = 0; i < n; i++) nodes[i].parent = parent_of(m, nodes, n, i);
    for (size_t i = 0; i < n; i++) {
        long k = nodes[i].parent;
        size_t steps = 0;
        while (k >= 0 && steps <= n) k = nodes[k].parent, steps++;
        if (steps > n) nodes[i].parent = -1;
    }
}

/* Orders nodes parents first, siblings by total time: fills order[]. */
static int tree_order(node_t *nodes, size_t n, size_t *order) {
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
        keys[i] = (node_key_t){nodes[i].parent, nodes[i].total, nodes[i].path, i};
    qsort(keys, n, sizeof *keys, cmp_node_key);
    /* Slot 0 holds the roots, slot p+1 the children of node p. */
    for (size_t i = n; i-- > 0;) {
        size_t slot = (size_t)(keys[i].parent + 1);
        first[slot] = i;
        count[slot]++;
    }
    size_t top = 0, out = 0;
    for (size_t i = count[0]; i-- > 0;) {
        size_t nd = keys[first[0] + i].node;
        nodes[nd].depth = 0;
        stack[top++] = nd;
    }
    while (top) {
        size_t nd = stack[--top];
        order[out++] = nd;
        size_t slot = nd + 1;
        for (size_t i = count[slot]; i-- > 0;) {
            size_t child = keys[first[slot] + i].node;
            nodes[child].depth = nodes[nd].depth + 1;
            stack[top++] = child;
        }
    }
free_all:
    free(keys);
    free(first);
    free(count);
    free(stack);
    return rc;
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
    if (m->n_scopes == 0) {
        fprintf(out, "  no scopes recorded\n");
        return 0;
    }
    int rc = 0;
    const gpufl_model_scope_t **by_path = malloc(m->n_scopes * sizeof *by_path);
    node_t *nodes = malloc(m->n_scopes * sizeof *nodes);
    size_t *order = malloc(m->n_scopes * sizeof *order);
    char *label = malloc(NAME_COL_MAX * 4 + INDENT_MAX * 2 + 8);
    if (!by_path || !nodes || !order || !label) {
        rc = gpufl__set_error(GPUFL_ENOMEM, "out of memory for the report");
        goto free_all;
    }
    size_t n = build_nodes(m, by_path, nodes);
    link_nodes(m, nodes, n);
    rc = tree_order(nodes, n, order);
    if (rc) goto free_all;

    size_t name_w = 5, closed = 0, implicit = 0, bench = 0;
    for (size_t i = 0; i < n; i++) {
        bench += nodes[i].bench_iters > 0;
        size_t d = nodes[i].depth < INDENT_MAX ? nodes[i].depth : INDENT_MAX;
        size_t w = 2 * d + text_width(nodes[i].name);
        if (w > name_w) name_w = w;
        closed += nodes[i].calls;
        implicit += nodes[i].implicit;
    }
    if (name_w > NAME_COL_MAX) name_w = NAME_COL_MAX;
    fprintf(out, "  %zu scope path%s, %zu call%s ended, %zu open; wall time per scope path\n", n,
            plural(n), closed, plural(closed), m->n_open_scopes);
    if (bench)
        fprintf(out,
                "  per iter: total / measured iterations, for GFL_BENCH scopes (repeat > 0)\n");
    fputc('\n', out);
    static const char *const heads[5] = {"total", "avg", "min", "max", "per iter"};
    put_scope_row(out, name_w, "scope", "calls", "open", heads, "tags");
    for (size_t k = 0; k < n; k++) {
        const node_t *nd = &nodes[order[k]];
        size_t d = nd->depth < INDENT_MAX ? nd->depth : INDENT_MAX;
        snprintf(label, NAME_COL_MAX * 4 + INDENT_MAX * 2 + 8, "%*s%.*s", (int)(2 * d), "",
                 NAME_COL_MAX * 4, nd->name);
        char calls[24], open[24], tags[24], t[5][32];
        const char *tp[5] = {t[0], t[1], t[2], t[3], t[4]};
        snprintf(calls, sizeof calls, "%zu", nd->calls);
        count_or_dash(open, sizeof open, nd->open);
        count_or_dash(tags, sizeof tags, nd->tags);
        if (nd->calls) {
            fmt_ns(t[0], sizeof t[0], nd->total);
            fmt_ns(t[1], sizeof t[1], nd->total / (double)nd->calls);
            fmt_ns(t[2], sizeof t[2], nd->min);
            fmt_ns(t[3], sizeof t[3], nd->max);
        } else {
            for (int i = 0; i < 4; i++) snprintf(t[i], sizeof t[i], "-");
        }
        if (nd->bench_iters > 0)
            fmt_ns(t[4], sizeof t[4], nd->bench_total / nd->bench_iters);
        else
            snprintf(t[4], sizeof t[4], "-");
        put_scope_row(out, name_w, label, calls, open, tp, tags);
    }
    if (implicit)
        fprintf(out, "\n  %zu scope%s closed implicitly (an enclosing scope ended first)\n",
                implicit, implicit == 1 ? " was" : "s were");
    if (m->n_open_scopes) put_open_scopes(out, m);
free_all:
    free(by_path);
    free(nodes);
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
/* GPU and problems                                                         */
/* ---------------------------------------------------------------------- */

/* Until the GPU sources exist there is never GPU data; say why, from the
 * capabilities record, in one line. */
static void put_gpu(FILE *out, const gpufl_model_t *m) {
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
    if (rc) return rc;
    put_gpu(out, m);
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
