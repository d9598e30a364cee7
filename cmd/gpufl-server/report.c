// SPDX-License-Identifier: Apache-2.0
/*
 * report.c - a session's report and insights built on the server by libgpufl-analysis, the
 * code `gpufl report` runs, from the session's stored lines fed in file order; kept in
 * session_reports with the kernels per name, so queries answer without rebuilding. A builder
 * thread builds completed and quiet sessions; a query for a session not yet built builds it.
 */
#include "report.h"

#include <gpufl/gpufl.h>
#include <gpufl/gpufl_analysis.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PASS_EVERY_S      1          /* the builder looks for sessions to build this often */
#define PASS_SESSIONS_MAX 64         /* sessions one pass builds */
#define CLEAN_EVERY       60         /* passes between removals of reports of dropped sessions */
#define FAILED_MAX        16         /* builds that failed, not retried until new windows come */
#define DEVICES_MAX       1024       /* gpu_info records kept in a session's facts */
#define DURATIONS_MAX     (64 << 20) /* kernels of one name held at once for percentiles */
#define NAMES_HELD_MAX    (1 << 20)  /* distinct kernel names one session may have */
/* A build's built_at is this much before it counts the windows: a window whose transaction
 * began (last_window_at) before the count but committed after it still finds the session a
 * candidate of the builder's pass. */
#define STALE_MARGIN_S 60

typedef struct failed {
    int64_t workspace_id, windows;
    char session_id[GPUFL__ID_MAX + 1];
} failed_t;

struct gpufl__reports {
    gpufl__server_t *srv;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    failed_t failed[FAILED_MAX];
    size_t failed_next;
};

/* One build at a time in a process: a report holds a whole session in memory. */
static pthread_mutex_t build_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *const stored_columns[] = {"report_text",   "report_json",   "report_html",
                                             "insights_text", "insights_json", "kernels_json",
                                             "facts_json"};

/* ---- small query helpers ------------------------------------------------------------------ */

typedef struct {
    int64_t v;
    int seen;
} int_row_t;

static int int_cb(void *arg, int n, const char *const *v, const char *const *names) {
    (void)names;
    int_row_t *r = arg;
    r->v = n > 0 && v[0] ? strtoll(v[0], NULL, 10) : 0;
    r->seen = 1;
    return 0;
}

/* The session's stored slices (a window sent whole is one): a slice appended to an open
 * window grows the count, so a report built before it is stale. At least the number of
 * windows. GPUFL_ENOTFOUND when the workspace has no such session. */
static int windows_of(gpufl__server_t *s, const char *ws, const char *sid, int64_t *out) {
    const char *p[] = {ws, sid};
    int_row_t r = {0};
    int rc = s->ops->query(s->store,
                           "SELECT (SELECT COALESCE(SUM(w.slices), 0) FROM windows w WHERE"
                           " w.workspace_id = s.workspace_id AND w.session_id = s.session_id)"
                           " FROM sessions s"
                           " WHERE s.workspace_id = CAST(? AS BIGINT) AND s.session_id = ?",
                           p, 2, int_cb, &r);
    if (rc) return rc;
    if (!r.seen) return gpufl__store_fail(GPUFL_ENOTFOUND, "no such session");
    *out = r.v;
    return 0;
}

typedef struct {
    int64_t windows;
    char *text;
    size_t len;
    int seen;
} stored_t;

static int stored_cb(void *arg, int n, const char *const *v, const char *const *names) {
    (void)names;
    stored_t *st = arg;
    if (n < 2 || !v[1]) return 0;
    st->windows = v[0] ? strtoll(v[0], NULL, 10) : 0;
    st->len = strlen(v[1]);
    st->text = strdup(v[1]);
    st->seen = 1;
    return st->text ? 0 : GPUFL_ENOMEM;
}

/* ---- building --------------------------------------------------------------------------- */

typedef struct {
    char channel[16];
    int64_t sequence;
} window_ref_t;

typedef struct {
    window_ref_t *refs;
    size_t n, cap;
} refs_t;

static int ref_cb(void *arg, int n, const char *const *v, const char *const *names) {
    (void)names;
    refs_t *r = arg;
    if (n < 2 || !v[0] || !v[1]) return 0;
    if (r->n == r->cap) return GPUFL_ENOMEM; /* more windows than counted: read them next time */
    snprintf(r->refs[r->n].channel, sizeof r->refs[r->n].channel, "%s", v[0]);
    r->refs[r->n++].sequence = strtoll(v[1], NULL, 10);
    return 0;
}

typedef struct {
    gpufl_analysis_t *a;
    const char *channel;
    json_t *capabilities, *devices;
} feed_t;

/* The capability record and the devices, for the session's summary. */
static void keep_fact(feed_t *f, const char *type, const char *body) {
    int caps = !strcmp(type, "capabilities");
    if (!caps && (strcmp(type, "gpu_info") != 0 || json_array_size(f->devices) >= DEVICES_MAX))
        return;
    json_t *doc = json_loads(body, 0, NULL);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return;
    }
    json_object_del(doc, "type");
    json_object_del(doc, "v");
    if (caps) {
        json_decref(f->capabilities);
        f->capabilities = doc;
    } else {
        json_array_append_new(f->devices, doc);
    }
}

static int feed_cb(void *arg, int n, const char *const *v, const char *const *names) {
    (void)names;
    feed_t *f = arg;
    if (n < 2 || !v[1]) return 0;
    int rc = gpufl_analysis_feed(f->a, f->channel, v[1], strlen(v[1]));
    if (!rc) rc = gpufl_analysis_feed(f->a, f->channel, "\n", 1);
    if (!rc && v[0]) keep_fact(f, v[0], v[1]);
    return rc;
}

/* Feeds every stored line of the session, file by file (device, scope, system: the order
 * the channels sort in), each file's windows in sequence: the order `gpufl report` reads a
 * session directory in. One window's lines are read at a time. */
static int feed_session(gpufl__server_t *s, const char *ws, const char *sid, int64_t n_windows,
                        feed_t *f) {
    refs_t refs = {calloc((size_t)(n_windows > 0 ? n_windows : 1), sizeof *refs.refs), 0,
                   (size_t)n_windows};
    if (!refs.refs) return GPUFL_ENOMEM;
    const char *p[] = {ws, sid};
    int rc = s->ops->query(s->store,
                           "SELECT channel, sequence FROM windows WHERE workspace_id ="
                           " CAST(? AS BIGINT) AND session_id = ? ORDER BY channel, sequence",
                           p, 2, ref_cb, &refs);
    for (size_t i = 0; !rc && i < refs.n; i++) {
        char seq[32];
        snprintf(seq, sizeof seq, "%" PRId64, refs.refs[i].sequence);
        const char *lp[] = {ws, sid, refs.refs[i].channel, seq};
        f->channel = refs.refs[i].channel;
        rc = s->ops->query(s->store,
                           "SELECT type, body FROM lines WHERE workspace_id = CAST(? AS BIGINT)"
                           " AND session_id = ? AND channel = ? AND sequence = CAST(? AS BIGINT)"
                           " ORDER BY line_no",
                           lp, 4, feed_cb, f);
    }
    free(refs.refs);
    return rc;
}

static int render_report(gpufl_analysis_t *a, const char *format, char **out) {
    gpufl_report_options_t o;
    gpufl_report_options_init(&o);
    o.format = format;
    const char *text;
    size_t len;
    int rc = gpufl_analysis_report(a, &o, &text, &len);
    if (rc) return rc;
    *out = malloc(len + 1);
    if (!*out) return GPUFL_ENOMEM;
    memcpy(*out, text, len);
    (*out)[len] = '\0';
    return 0;
}

static int render_insights(gpufl_analysis_t *a, const char *format, char **out) {
    size_t len = 0;
    FILE *f = open_memstream(out, &len);
    if (!f) return GPUFL_ENOMEM;
    gpufl_insights_options_t o;
    gpufl_insights_options_init(&o);
    o.format = format;
    int rc = gpufl_analysis_insights_write(a, &o, f);
    if (fclose(f) != 0 && !rc) rc = GPUFL_ENOMEM;
    return rc;
}

/* f->a: a handle fed every line of n_windows windows of the session and ended (closed by the
 * caller, also after a failure). */
static int open_model(gpufl__server_t *s, const char *ws, const char *sid, int64_t n_windows,
                      feed_t *f) {
    gpufl_analysis_options_t ao;
    gpufl_analysis_options_init(&ao);
    ao.flags = GPUFL_ANALYSIS_IN_ORDER; /* the files come whole, one after another */
    int rc = gpufl_analysis_create(&f->a, &ao);
    if (!rc) rc = feed_session(s, ws, sid, n_windows, f);
    if (!rc) rc = gpufl_analysis_feed_end(f->a, NULL);
    return rc;
}

/* The insights document's count and top severity (1 LOW .. 3 HIGH; "" when none) as query
 * text, for the sessions list's columns and filter. */
static int insights_summary(const char *insights_json, char count[32], char top[32]) {
    json_error_t err;
    json_t *doc = json_loads(insights_json, 0, &err);
    json_t *items = json_object_get(doc, "insights");
    if (!json_is_array(items)) {
        json_decref(doc);
        return gpufl__store_fail(GPUFL_EIO, "report: the insights document has no list");
    }
    int best = 0;
    size_t i;
    json_t *x;
    json_array_foreach(items, i, x) {
        gpufl_severity_t sev;
        const char *name = json_string_value(json_object_get(x, "severity"));
        if (name && gpufl_severity_parse(name, &sev) == 0 && (int)sev > best) best = (int)sev;
    }
    snprintf(count, 32, "%zu", json_array_size(items));
    if (best)
        snprintf(top, 32, "%d", best);
    else
        top[0] = '\0';
    json_decref(doc);
    return 0;
}

/* Builds and stores the session's row of session_reports from n_windows windows. */
static int build(gpufl__server_t *s, const char *ws, const char *sid, int64_t n_windows,
                 int64_t since) {
    char *text[7] = {0};
    feed_t f = {.capabilities = NULL, .devices = json_array()};
    json_t *kernels = NULL, *facts = NULL;
    char built_at[32], windows[32];
    snprintf(built_at, sizeof built_at, "%" PRId64, since);
    snprintf(windows, sizeof windows, "%" PRId64, n_windows);
    int rc = f.devices ? open_model(s, ws, sid, n_windows, &f) : GPUFL_ENOMEM;
    if (!rc) rc = render_report(f.a, "text", &text[0]);
    if (!rc) rc = render_report(f.a, "json", &text[1]);
    if (!rc) rc = render_report(f.a, "html", &text[2]);
    if (!rc) rc = render_insights(f.a, "text", &text[3]);
    if (!rc) rc = render_insights(f.a, "json", &text[4]);
    gpufl_analysis_close(f.a);
    char n_insights[32], top[32];
    if (!rc) rc = insights_summary(text[4], n_insights, top);
    if (!rc) rc = gpufl__report_kernels(s, strtoll(ws, NULL, 10), sid, &kernels);
    if (!rc) {
        facts = json_pack("{s:O?,s:O}", "capabilities", f.capabilities, "devices", f.devices);
        text[5] = json_dumps(kernels, JSON_COMPACT);
        text[6] = facts ? json_dumps(facts, JSON_COMPACT) : NULL;
        if (!text[5] || !text[6]) rc = GPUFL_ENOMEM;
    }
    if (!rc) {
        /* A build of fewer windows never replaces a newer one (two servers, or the builder
         * and a query, building at once). */
        const char *p[] = {ws,
                           sid,
                           built_at,
                           windows,
                           text[0],
                           text[1],
                           text[2],
                           text[3],
                           text[4],
                           text[5],
                           text[6],
                           n_insights,
                           top[0] ? top : NULL};
        rc = s->ops->query(
            s->store,
            "INSERT INTO session_reports (workspace_id, session_id, built_at, windows,"
            " report_text, report_json, report_html, insights_text, insights_json, kernels_json,"
            " facts_json, insights_count, insights_top) VALUES (CAST(? AS BIGINT), ?,"
            " CAST(? AS BIGINT), CAST(? AS BIGINT), ?, ?, ?, ?, ?, ?, ?, CAST(? AS INTEGER),"
            " CAST(? AS INTEGER)) ON CONFLICT (workspace_id, session_id) DO UPDATE SET"
            " built_at = excluded.built_at, windows = excluded.windows,"
            " report_text = excluded.report_text, report_json = excluded.report_json,"
            " report_html = excluded.report_html, insights_text = excluded.insights_text,"
            " insights_json = excluded.insights_json, kernels_json = excluded.kernels_json,"
            " facts_json = excluded.facts_json, insights_count = excluded.insights_count,"
            " insights_top = excluded.insights_top WHERE session_reports.windows <="
            " excluded.windows",
            p, 13, NULL, NULL);
    }
    for (size_t i = 0; i < 7; i++) free(text[i]);
    json_decref(kernels);
    json_decref(facts);
    json_decref(f.capabilities);
    json_decref(f.devices);
    return rc;
}

static int column_known(const char *column) {
    for (size_t i = 0; i < sizeof stored_columns / sizeof stored_columns[0]; i++)
        if (!strcmp(stored_columns[i], column)) return 1;
    return 0;
}

static int read_stored(gpufl__server_t *s, const char *ws, const char *sid, const char *column,
                       stored_t *st) {
    char sql[160];
    snprintf(sql, sizeof sql,
             "SELECT windows, %s FROM session_reports WHERE workspace_id = CAST(? AS BIGINT)"
             " AND session_id = ?",
             column);
    const char *p[] = {ws, sid};
    return s->ops->query(s->store, sql, p, 2, stored_cb, st);
}

int gpufl__report_get(gpufl__server_t *s, int64_t workspace_id, const char *session_id,
                      const char *column, int build_it, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    if (!column_known(column))
        return gpufl__store_fail(GPUFL_EINVAL, "report: no column %s", column);
    char ws[32];
    snprintf(ws, sizeof ws, "%" PRId64, workspace_id);
    int64_t n_windows, since = gpufl__store_now() - STALE_MARGIN_S;
    int rc = windows_of(s, ws, session_id, &n_windows);
    if (rc) return rc;
    stored_t st = {0};
    rc = read_stored(s, ws, session_id, column, &st);
    if (!rc && st.seen && st.windows >= n_windows) {
        *out = st.text;
        *len = st.len;
        return 0;
    }
    free(st.text);
    if (rc || !build_it) return rc;
    pthread_mutex_lock(&build_mu);
    /* Another thread may have built it while this one waited. */
    st = (stored_t){0};
    rc = read_stored(s, ws, session_id, column, &st);
    if (!rc && !(st.seen && st.windows >= n_windows)) {
        free(st.text);
        st = (stored_t){0};
        rc = build(s, ws, session_id, n_windows, since);
        if (!rc) rc = read_stored(s, ws, session_id, column, &st);
    }
    pthread_mutex_unlock(&build_mu);
    if (!rc && !st.seen) rc = gpufl__store_fail(GPUFL_EIO, "report: stored, then not found");
    if (rc) {
        free(st.text);
        return rc;
    }
    *out = st.text;
    *len = st.len;
    return 0;
}

static int facts_cb(void *arg, int n, const char *const *v, const char *const *names) {
    (void)names;
    if (n >= 2 && v[0] && v[1]) keep_fact(arg, v[0], v[1]);
    return 0;
}

int gpufl__report_facts(gpufl__server_t *s, int64_t workspace_id, const char *session_id,
                        json_t **out) {
    char *text;
    size_t len;
    int rc = gpufl__report_get(s, workspace_id, session_id, "facts_json", 0, &text, &len);
    if (rc) return rc;
    if (text) {
        *out = json_loadb(text, len, 0, NULL);
        free(text);
        return *out ? 0 : gpufl__store_fail(GPUFL_EIO, "report: stored facts are not JSON");
    }
    /* Not built yet: the device log's own records. */
    char ws[32];
    snprintf(ws, sizeof ws, "%" PRId64, workspace_id);
    const char *p[] = {ws, session_id};
    feed_t f = {.devices = json_array()};
    rc = f.devices ? s->ops->query(s->store,
                                   "SELECT type, body FROM lines WHERE workspace_id ="
                                   " CAST(? AS BIGINT) AND session_id = ? AND channel = 'device'"
                                   " AND type IN ('capabilities', 'gpu_info')"
                                   " ORDER BY sequence, line_no",
                                   p, 2, facts_cb, &f)
                   : GPUFL_ENOMEM;
    if (!rc &&
        !(*out = json_pack("{s:O?,s:O}", "capabilities", f.capabilities, "devices", f.devices)))
        rc = GPUFL_ENOMEM;
    json_decref(f.capabilities);
    json_decref(f.devices);
    return rc;
}

int gpufl__report_with_model(gpufl__server_t *s, int64_t workspace_id, const char *session_id,
                             gpufl__model_fn fn, void *arg) {
    char ws[32];
    snprintf(ws, sizeof ws, "%" PRId64, workspace_id);
    int64_t n_windows;
    int rc = windows_of(s, ws, session_id, &n_windows);
    if (rc) return rc;
    feed_t f = {.devices = json_array()};
    if (!f.devices) return GPUFL_ENOMEM;
    pthread_mutex_lock(&build_mu);
    rc = open_model(s, ws, session_id, n_windows, &f);
    if (!rc) rc = fn(f.a, arg);
    gpufl_analysis_close(f.a);
    pthread_mutex_unlock(&build_mu);
    json_decref(f.capabilities);
    json_decref(f.devices);
    return rc;
}

/* ---- kernels per name ---------------------------------------------------------------------- */

typedef struct {
    char *name;
    int64_t count, total, min, p50, p90, p99, max;
    json_t *histogram;
} kgroup_t;

/* Duration histograms have four buckets per doubling: bucket i starts at ceil(2^(i/4)) ns
 * (bucket 0 at 0), enough to tell a kernel's modes apart on a log axis in at most 252 buckets. */
#define HIST_PER_OCTAVE 4
#define HIST_BUCKETS    (HIST_PER_OCTAVE * 63)

static int64_t hist_edge(int i) {
    static const double step[HIST_PER_OCTAVE] = {1.0, 1.189207115002721, 1.414213562373095,
                                                 1.681792830507429};
    if (i <= 0) return i < 0 ? 0 : 1;
    double x = (double)((int64_t)1 << (i / HIST_PER_OCTAVE)) * step[i % HIST_PER_OCTAVE];
    int64_t e = (int64_t)x;
    return e < x ? e + 1 : e;
}

/* Sorted durations to [{from_ns, to_ns, count}]: the buckets that hold any, low to high. */
static json_t *histogram_of(const int64_t *sorted, size_t n) {
    json_t *list = json_array();
    int i = 0;
    for (size_t at = 0; list && at < n;) {
        int64_t d = sorted[at];
        if (d < 1) {
            i = -1; /* [0, 1): a duration of 0 ns */
        } else {
            while (i < 0 || (i + 1 < HIST_BUCKETS && hist_edge(i + 1) <= d)) i++;
        }
        int64_t from = i < 0 ? 0 : hist_edge(i);
        int64_t to = i < 0 ? 1 : i + 1 < HIST_BUCKETS ? hist_edge(i + 1) : INT64_MAX;
        size_t end = at;
        while (end < n && sorted[end] < to) end++;
        json_t *b = json_pack("{s:I,s:I,s:I}", "from_ns", (json_int_t)from, "to_ns", (json_int_t)to,
                              "count", (json_int_t)(end - at));
        if (!b || json_array_append_new(list, b)) {
            json_decref(list);
            return NULL;
        }
        at = end;
        if (i < 0) i = 0;
    }
    return list;
}

typedef struct {
    kgroup_t *groups;
    size_t n, cap;
    char *name; /* the group being read */
    int64_t *dur;
    size_t n_dur, cap_dur;
    int64_t count, total;
} kread_t;

/* The value of rank ceil(n * pct / 100) (nearest rank) of n sorted durations, as the
 * report computes p50 and p99. */
static int64_t rank_of(const int64_t *sorted, size_t n, unsigned pct) {
    size_t rank = (n * pct + 99) / 100;
    return sorted[rank < 1 ? 0 : rank - 1];
}

static int kgroup_close(kread_t *k) {
    if (!k->name) return 0;
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 64;
        if (cap > NAMES_HELD_MAX) return gpufl__store_fail(GPUFL_ENOMEM, "kernels: too many names");
        kgroup_t *g = realloc(k->groups, cap * sizeof *g);
        if (!g) return GPUFL_ENOMEM;
        k->groups = g;
        k->cap = cap;
    }
    k->groups[k->n++] = (kgroup_t){k->name,
                                   (int64_t)k->n_dur,
                                   k->total,
                                   k->dur[0],
                                   rank_of(k->dur, k->n_dur, 50),
                                   rank_of(k->dur, k->n_dur, 90),
                                   rank_of(k->dur, k->n_dur, 99),
                                   k->dur[k->n_dur - 1],
                                   histogram_of(k->dur, k->n_dur)};
    if (!k->groups[k->n - 1].histogram) return GPUFL_ENOMEM;
    k->name = NULL;
    k->n_dur = 0;
    k->total = 0;
    return 0;
}

/* Rows come sorted by name, then duration: a group's durations arrive sorted. */
static int kernel_cb(void *arg, int n, const char *const *v, const char *const *names) {
    (void)names;
    kread_t *k = arg;
    if (n < 2 || !v[1]) return 0;
    const char *name = v[0] ? v[0] : "";
    if (!k->name || strcmp(k->name, name) != 0) {
        int rc = kgroup_close(k);
        if (rc) return rc;
        if (!(k->name = strdup(name))) return GPUFL_ENOMEM;
    }
    if (k->n_dur == k->cap_dur) {
        size_t cap = k->cap_dur ? k->cap_dur * 2 : 1024;
        if (cap > DURATIONS_MAX)
            return gpufl__store_fail(GPUFL_ENOMEM, "kernels: one name past %d calls",
                                     DURATIONS_MAX);
        int64_t *d = realloc(k->dur, cap * sizeof *d);
        if (!d) return GPUFL_ENOMEM;
        k->dur = d;
        k->cap_dur = cap;
    }
    int64_t d = strtoll(v[1], NULL, 10);
    k->dur[k->n_dur++] = d;
    k->total += d;
    k->count++;
    return 0;
}

static int cmp_kgroup(const void *a, const void *b) {
    const kgroup_t *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return strcmp(x->name, y->name);
}

int gpufl__report_kernels(gpufl__server_t *s, int64_t workspace_id, const char *session_id,
                          json_t **out) {
    char ws[32];
    snprintf(ws, sizeof ws, "%" PRId64, workspace_id);
    const char *p[] = {ws, session_id};
    kread_t k = {0};
    int rc = s->ops->query(s->store,
                           "SELECT COALESCE(name, mangled) AS kname, end_ns - start_ns AS dur"
                           " FROM activity WHERE workspace_id = CAST(? AS BIGINT) AND session_id"
                           " = ? AND kind = 'kernel' AND start_ns IS NOT NULL AND end_ns IS NOT"
                           " NULL ORDER BY kname, dur",
                           p, 2, kernel_cb, &k);
    if (!rc) rc = kgroup_close(&k);
    free(k.name);
    free(k.dur);
    json_t *doc = NULL, *list = NULL;
    if (!rc) {
        if (k.n) qsort(k.groups, k.n, sizeof *k.groups, cmp_kgroup); /* NULL when no kernels */
        int64_t total = 0;
        for (size_t i = 0; i < k.n; i++) total += k.groups[i].total;
        list = json_array();
        doc = json_pack("{s:I,s:I,s:I,s:b,s:o}", "count", (json_int_t)k.count, "distinct_names",
                        (json_int_t)k.n, "total_ns", (json_int_t)total, "truncated",
                        k.n > GPUFL__KERNEL_NAMES_MAX, "kernels", list);
        if (!doc) rc = GPUFL_ENOMEM;
    }
    for (size_t i = 0; !rc && i < k.n && i < GPUFL__KERNEL_NAMES_MAX; i++) {
        const kgroup_t *g = &k.groups[i];
        json_t *row =
            json_pack("{s:s,s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:O}", "name", g->name, "count",
                      (json_int_t)g->count, "total_ns", (json_int_t)g->total, "mean_ns",
                      (double)g->total / (double)g->count, "min_ns", (json_int_t)g->min, "p50_ns",
                      (json_int_t)g->p50, "p90_ns", (json_int_t)g->p90, "p99_ns",
                      (json_int_t)g->p99, "max_ns", (json_int_t)g->max, "histogram", g->histogram);
        if (!row || json_array_append_new(list, row)) rc = GPUFL_ENOMEM;
    }
    for (size_t i = 0; i < k.n; i++) {
        free(k.groups[i].name);
        json_decref(k.groups[i].histogram);
    }
    free(k.groups);
    if (rc) {
        json_decref(doc);
        return rc;
    }
    *out = doc;
    return 0;
}

/* ---- the builder thread ------------------------------------------------------------------- */

typedef struct {
    int64_t ws[PASS_SESSIONS_MAX];
    char sid[PASS_SESSIONS_MAX][GPUFL__ID_MAX + 1];
    size_t n;
} due_t;

static int due_cb(void *arg, int n, const char *const *v, const char *const *names) {
    (void)names;
    due_t *d = arg;
    if (n < 2 || !v[0] || !v[1] || d->n == PASS_SESSIONS_MAX) return 0;
    d->ws[d->n] = strtoll(v[0], NULL, 10);
    snprintf(d->sid[d->n++], GPUFL__ID_MAX + 1, "%s", v[1]);
    return 0;
}

static failed_t *failed_find(gpufl__reports_t *r, int64_t ws, const char *sid) {
    for (size_t i = 0; i < FAILED_MAX; i++)
        if (r->failed[i].workspace_id == ws && !strcmp(r->failed[i].session_id, sid))
            return &r->failed[i];
    return NULL;
}

static void build_due(gpufl__reports_t *r, int64_t ws, const char *sid) {
    gpufl__server_t *s = r->srv;
    char wtext[32];
    snprintf(wtext, sizeof wtext, "%" PRId64, ws);
    int64_t n_windows;
    if (windows_of(s, wtext, sid, &n_windows)) return;
    failed_t *f = failed_find(r, ws, sid);
    if (f && f->windows == n_windows) return; /* failed on these windows: wait for more */
    char *text;
    size_t len;
    int rc = gpufl__report_get(s, ws, sid, "insights_json", 1, &text, &len);
    free(text);
    if (rc == 0 || rc == GPUFL_ENOTFOUND) return;
    fprintf(stderr, "gpufl-server: the report of session %s was not built: %s (%d)\n", sid,
            gpufl_last_error(), rc);
    f = &r->failed[r->failed_next++ % FAILED_MAX];
    f->workspace_id = ws;
    f->windows = n_windows;
    snprintf(f->session_id, sizeof f->session_id, "%s", sid);
}

/* Completed sessions, and live ones quiet for quiet_s, whose report is missing or built from
 * fewer windows than are stored. The count runs only for sessions with a window since the
 * build's second. */
static void pass(gpufl__reports_t *r) {
    gpufl__server_t *s = r->srv;
    char quiet_before[32];
    snprintf(quiet_before, sizeof quiet_before, "%" PRId64,
             gpufl__store_now() - s->settings->quiet_s);
    const char *p[] = {quiet_before};
    due_t *d = calloc(1, sizeof *d);
    if (!d) return;
    int rc = s->ops->query(
        s->store,
        "SELECT s.workspace_id, s.session_id FROM sessions s LEFT JOIN session_reports r"
        " ON r.workspace_id = s.workspace_id AND r.session_id = s.session_id"
        " WHERE (s.state = 'complete' OR s.last_window_at <= CAST(? AS BIGINT))"
        " AND (r.session_id IS NULL OR (s.last_window_at >= r.built_at AND r.windows <"
        " (SELECT COALESCE(SUM(w.slices), 0) FROM windows w WHERE w.workspace_id = s.workspace_id"
        " AND w.session_id = s.session_id)))"
        " ORDER BY s.last_window_at",
        p, 1, due_cb, d);
    if (rc) fprintf(stderr, "gpufl-server: reports: %s\n", gpufl_last_error());
    for (size_t i = 0; i < d->n; i++) {
        pthread_mutex_lock(&r->mu);
        int stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop) break;
        build_due(r, d->ws[i], d->sid[i]);
    }
    free(d);
}

/* Reports of sessions retention removed. */
static void clean(gpufl__reports_t *r) {
    gpufl__server_t *s = r->srv;
    if (s->ops->query(s->store,
                      "DELETE FROM session_reports WHERE NOT EXISTS (SELECT 1 FROM sessions s"
                      " WHERE s.workspace_id = session_reports.workspace_id"
                      " AND s.session_id = session_reports.session_id)",
                      NULL, 0, NULL, NULL))
        fprintf(stderr, "gpufl-server: reports: %s\n", gpufl_last_error());
}

static void *builder(void *arg) {
    gpufl__reports_t *r = arg;
    for (unsigned n = 0;; n++) {
        pthread_mutex_lock(&r->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += PASS_EVERY_S;
        while (!r->stop && pthread_cond_timedwait(&r->cv, &r->mu, &until) != ETIMEDOUT) continue;
        int stop = r->stop;
        pthread_mutex_unlock(&r->mu);
        if (stop) break;
        pass(r);
        if (n % CLEAN_EVERY == 0) clean(r);
    }
    return NULL;
}

int gpufl__reports_start(gpufl__reports_t **out, gpufl__server_t *srv) {
    gpufl__reports_t *r = calloc(1, sizeof *r);
    if (!r) return GPUFL_ENOMEM;
    r->srv = srv;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (pthread_create(&r->thread, NULL, builder, r) != 0) {
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        free(r);
        return GPUFL_EIO;
    }
    *out = r;
    return 0;
}

void gpufl__reports_stop(gpufl__reports_t *r) {
    if (!r) return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}
