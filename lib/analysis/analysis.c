// SPDX-License-Identifier: Apache-2.0
/*
 * analysis.c - the public read API over the session model: finding and
 * opening a session, its tables as columns, the string table, and the
 * report rendered into memory. Nothing here computes a figure of its own:
 * tables copy the model's rows (analysis_tables.c) and the report is
 * report.c's, so a program sees what the CLI prints.
 */
#include "analysis/analysis.h"

#include "analysis/sessions.h"
#include "util/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct gpufl__an_text {
    gpufl_report_format_t fmt;
    char *section; /* NULL: the whole report */
    size_t top_n;
    char *text;
    size_t len;
    gpufl__an_text_t *next;
};

static int oom(void) { return gpufl__set_error(GPUFL_ENOMEM, "out of memory reading a session"); }

/* ---------------------------------------------------------------------- */
/* Finding a session                                                        */
/* ---------------------------------------------------------------------- */

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int matches(const gpufl__session_entry_t *s, const char *app, const char *id) {
    if (app && strcmp(s->app_name, app) != 0) return 0;
    return !id || strcmp(s->name, id) == 0 || strcmp(s->session_id, id) == 0;
}

static int put_path(const char *path, char *buf, size_t size) {
    if (strlen(path) >= size)
        return gpufl__set_error(GPUFL_EINVAL, "the session path '%s' does not fit in %zu bytes",
                                path, size);
    memcpy(buf, path, strlen(path) + 1);
    return 0;
}

/* "a, b" of the distinct app names in list[0..n), into names. */
static void app_names(const gpufl__session_entry_t *list, size_t n, char *names, size_t size) {
    size_t len = 0;
    names[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const char *app = *list[i].app_name ? list[i].app_name : "?";
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++)
            seen = strcmp(*list[k].app_name ? list[k].app_name : "?", app) == 0;
        if (!seen) gpufl__report_cat(names, size, &len, "%s%s", len ? ", " : "", app);
    }
}

/* The session directory log_dir itself: it must match app and id. */
static int find_in_session(const char *log_dir, const char *app, const char *id, char *buf,
                           size_t size) {
    gpufl__session_entry_t s;
    gpufl__session_describe(log_dir, &s);
    if (!matches(&s, app, NULL))
        return gpufl__set_error(GPUFL_ENOTFOUND, "the session in '%s' is of app '%s', not '%s'",
                                log_dir, *s.app_name ? s.app_name : "?", app);
    if (!matches(&s, NULL, id))
        return gpufl__set_error(GPUFL_ENOTFOUND, "the session in '%s' is '%s', not '%s'", log_dir,
                                *s.session_id ? s.session_id : s.name, id);
    return put_path(log_dir, buf, size);
}

int gpufl_analysis_find(const char *log_dir, const char *app_name, const char *session_id,
                        char *buf, size_t buf_size) {
    const char *app = app_name && *app_name ? app_name : NULL;
    const char *id = session_id && *session_id ? session_id : NULL;
    if (!log_dir || !buf || !buf_size)
        return gpufl__set_error(GPUFL_EINVAL, "find: log_dir and buf are required");
    struct stat st;
    if (stat(log_dir, &st) != 0)
        return gpufl__set_error(GPUFL_ENOTFOUND, "log directory '%s' does not exist", log_dir);
    if (!S_ISDIR(st.st_mode))
        return gpufl__set_error(GPUFL_ENOTFOUND, "'%s' is not a directory", log_dir);
    if (gpufl__session_dir_check(log_dir)) return find_in_session(log_dir, app, id, buf, buf_size);

    /* The sessions of log_dir and, for an app, of log_dir/<app>.log. */
    char roots[2][GPUFL_SESSION_PATH_MAX];
    size_t n_roots = 1, n_all = 0;
    gpufl__session_entry_t *all = NULL;
    snprintf(roots[0], sizeof roots[0], "%s", log_dir);
    if (app &&
        (size_t)snprintf(roots[1], sizeof roots[1], "%s/%s.log", log_dir, app) < sizeof roots[1] &&
        is_dir(roots[1]))
        n_roots = 2;
    for (size_t r = 0; r < n_roots; r++) {
        gpufl__session_entry_t *list;
        size_t n;
        int rc = gpufl__sessions_list(&list, &n, roots[r]);
        if (rc) {
            free(all);
            return rc;
        }
        gpufl__session_entry_t *grown = n ? realloc(all, (n_all + n) * sizeof *all) : all;
        if (n && !grown) {
            free(list);
            free(all);
            return oom();
        }
        all = grown;
        if (n) memcpy(all + n_all, list, n * sizeof *list);
        n_all += n;
        free(list);
    }
    const gpufl__session_entry_t *best = NULL;
    size_t of_app = 0;
    for (size_t i = 0; i < n_all; i++) {
        of_app += matches(&all[i], app, NULL);
        if (matches(&all[i], app, id) && (!best || gpufl__session_newer(&all[i], best)))
            best = &all[i];
    }
    int rc;
    char where[GPUFL_SESSION_PATH_MAX * 2 + 16], apps[512];
    snprintf(where, sizeof where, n_roots == 2 ? "'%s' or '%s'" : "'%s'", roots[0], roots[1]);
    app_names(all, n_all, apps, sizeof apps);
    if (best)
        rc = put_path(best->path, buf, buf_size);
    else if (n_all == 0)
        rc = gpufl__set_error(GPUFL_ENOTFOUND, "no session under %s", where);
    else if (of_app)
        rc = gpufl__set_error(GPUFL_ENOTFOUND, "no session '%s'%s%s%s under %s", id,
                              app ? " of app '" : "", app ? app : "", app ? "'" : "", where);
    else
        rc = gpufl__set_error(GPUFL_ENOTFOUND, "no session of app '%s' under %s (apps found: %s)",
                              app, where, apps);
    free(all);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* The handle                                                               */
/* ---------------------------------------------------------------------- */

void gpufl_open_options_init_sized(gpufl_open_options_t *opts, size_t size) {
    gpufl_open_options_t d = {sizeof d, NULL, NULL};
    if (!opts) return;
    d.size = size < sizeof d ? size : sizeof d;
    memcpy(opts, &d, d.size);
}

int gpufl_analysis_is_session(const char *dir) { return dir && gpufl__session_dir_check(dir); }

int gpufl_analysis_open(gpufl_analysis_t **out, const char *session_dir) {
    return gpufl_analysis_open_with(out, session_dir, NULL);
}

int gpufl_analysis_open_with(gpufl_analysis_t **out, const char *session_dir,
                             const gpufl_open_options_t *opts) {
    gpufl_open_options_t o;
    gpufl_open_options_init(&o);
    if (opts) memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
    if (out) *out = NULL;
    if (!out || !session_dir)
        return gpufl__set_error(GPUFL_EINVAL, "open: out and session_dir are required");
    if (!is_dir(session_dir))
        return gpufl__set_error(GPUFL_ENOTFOUND, "session directory '%s' does not exist",
                                session_dir);
    if (!gpufl__session_dir_check(session_dir))
        return gpufl__set_error(GPUFL_ENOTFOUND,
                                "'%s' is not a session directory (no device.log or scope.log)",
                                session_dir);
    gpufl_analysis_t *a = calloc(1, sizeof *a);
    if (!a) return oom();
    gpufl__idmap_init(&a->by_ptr);
    pthread_mutex_init(&a->lock, NULL);
    a->dir = strdup(session_dir);
    gpufl__model_limits_t limits;
    memset(&limits, 0, sizeof limits); /* 0: each default */
    limits.progress = o.progress;
    limits.progress_user = o.progress_user;
    int rc = a->dir ? gpufl__model_load_limits(&a->m, session_dir, &limits) : oom();
    if (rc) {
        gpufl_analysis_close(a);
        return rc;
    }
    *out = a;
    return 0;
}

void gpufl__analysis_drop_model(gpufl_analysis_t *a) {
    for (int t = 0; t < GPUFL_TABLE_COUNT; t++) gpufl__analysis_table_free(&a->tables[t]);
    for (gpufl__an_text_t *x = a->texts, *next; x; x = next) {
        next = x->next;
        free(x->section);
        free(x->text);
        free(x);
    }
    a->texts = NULL;
    if (a->report_built) gpufl__report_free(&a->report);
    a->report_built = 0;
    gpufl__model_destroy(a->m);
    a->m = NULL;
    free(a->strs);
    free(a->hashes);
    free(a->slots);
    a->strs = NULL;
    a->hashes = NULL;
    a->slots = NULL;
    a->n_strs = a->strs_alloc = a->n_slots = 0;
    a->str_failed = 0;
    gpufl__idmap_fini(&a->by_ptr);
    gpufl__idmap_init(&a->by_ptr);
}

void gpufl_analysis_close(gpufl_analysis_t *a) {
    if (!a) return;
    gpufl__analysis_drop_model(a);
    gpufl__analysis_feed_free(a);
    gpufl__idmap_fini(&a->by_ptr);
    pthread_mutex_destroy(&a->lock);
    free(a->dir);
    free(a);
}

int gpufl__analysis_report_built(gpufl_analysis_t *a) {
    if (a->report_built) return 0;
    int rc = gpufl__report_build(a->m, &a->report);
    if (rc) {
        gpufl__report_free(&a->report);
        return rc;
    }
    a->report_built = 1;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Strings                                                                  */
/* ---------------------------------------------------------------------- */

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static int grow_slots(gpufl_analysis_t *a) {
    size_t n = a->n_slots ? a->n_slots * 2 : 256;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots) return -1;
    for (size_t id = 1; id < a->n_strs; id++) {
        size_t i = a->hashes[id] & (n - 1);
        while (slots[i]) i = (i + 1) & (n - 1);
        slots[i] = (uint32_t)id;
    }
    free(a->slots);
    a->slots = slots;
    a->n_slots = n;
    return 0;
}

/* The id of the string equal to s, adding s when none is. 0 on failure. */
static size_t by_content(gpufl_analysis_t *a, const char *s) {
    if (a->n_strs == 0) a->n_strs = 1; /* id 0 is none */
    if ((a->n_strs + 1) * 4 > a->n_slots * 3 && grow_slots(a)) return 0;
    uint32_t h = hash_str(s);
    size_t i = h & (a->n_slots - 1);
    for (; a->slots[i]; i = (i + 1) & (a->n_slots - 1))
        if (a->hashes[a->slots[i]] == h && strcmp(a->strs[a->slots[i]], s) == 0) return a->slots[i];
    if (a->n_strs >= UINT32_MAX) return 0;
    if (a->n_strs >= a->strs_alloc) {
        size_t grown = a->strs_alloc ? a->strs_alloc * 2 : 256;
        const char **strs = realloc(a->strs, grown * sizeof *strs);
        if (strs) a->strs = strs;
        uint32_t *hashes = strs ? realloc(a->hashes, grown * sizeof *hashes) : NULL;
        if (!hashes) return 0;
        a->hashes = hashes;
        a->strs_alloc = grown;
        a->strs[0] = NULL;
    }
    size_t id = a->n_strs++;
    a->strs[id] = s;
    a->hashes[id] = h;
    a->slots[i] = (uint32_t)id;
    return id;
}

int64_t gpufl__analysis_str(gpufl_analysis_t *a, const char *s) {
    size_t id;
    if (!s) return 0;
    if (gpufl__idmap_get(&a->by_ptr, (uint64_t)(uintptr_t)s, &id)) return (int64_t)id;
    id = by_content(a, s);
    if (!id || gpufl__idmap_put(&a->by_ptr, (uint64_t)(uintptr_t)s, id, NULL) < 0) {
        a->str_failed = 1;
        return 0;
    }
    return (int64_t)id;
}

const char *gpufl_analysis_string(gpufl_analysis_t *a, int64_t id) {
    if (!a || id <= 0) return NULL;
    pthread_mutex_lock(&a->lock);
    const char *s = (size_t)id < a->n_strs ? a->strs[id] : NULL;
    pthread_mutex_unlock(&a->lock);
    return s;
}

int64_t gpufl_analysis_string_count(gpufl_analysis_t *a) {
    if (!a) return 0;
    pthread_mutex_lock(&a->lock);
    int64_t n = a->n_strs ? (int64_t)a->n_strs : 1;
    pthread_mutex_unlock(&a->lock);
    return n;
}

/* ---------------------------------------------------------------------- */
/* Tables                                                                   */
/* ---------------------------------------------------------------------- */

static const char *const table_names[GPUFL_TABLE_COUNT] = {
    "session", "kernels",        "copies",       "memsets",    "syncs",        "launches",
    "scopes",  "device_metrics", "host_metrics", "pc_samples", "sass_metrics", "insights",
    "perf"};

const char *gpufl_table_name(gpufl_table_t table) {
    return (unsigned)table < GPUFL_TABLE_COUNT ? table_names[table] : NULL;
}

/* The built table, or NULL with the error set in *rc. Called locked. */
static gpufl__an_table_t *table_get(gpufl_analysis_t *a, gpufl_table_t t, int *rc) {
    *rc = 0;
    if (!a || (unsigned)t >= GPUFL_TABLE_COUNT) {
        *rc = gpufl__set_error(GPUFL_EINVAL, "no such table: %d", (int)t);
        return NULL;
    }
    *rc = gpufl__analysis_feed_model(a);
    if (*rc) return NULL;
    gpufl__an_table_t *tb = &a->tables[t];
    if (!tb->built) *rc = gpufl__analysis_table_build(a, t);
    return *rc ? NULL : tb;
}

int gpufl_analysis_table(gpufl_analysis_t *a, gpufl_table_t table, size_t *rows, size_t *columns) {
    int rc;
    if (!a) return gpufl__set_error(GPUFL_EINVAL, "table: no handle");
    pthread_mutex_lock(&a->lock);
    const gpufl__an_table_t *tb = table_get(a, table, &rc);
    if (tb && rows) *rows = tb->rows;
    if (tb && columns) *columns = tb->ncols;
    pthread_mutex_unlock(&a->lock);
    return rc;
}

/* Fills the caller's first out->size bytes of column c of tb. */
static int column_out(const gpufl__an_table_t *tb, size_t c, gpufl_column_t *out) {
    gpufl_column_t col = {sizeof col, tb->defs[c].name, tb->defs[c].type,
                          tb->rows ? tb->data[c] : NULL, tb->rows};
    size_t n = out->size < sizeof col ? out->size : sizeof col;
    if (n < sizeof(size_t)) return gpufl__set_error(GPUFL_EINVAL, "column: out->size is not set");
    memcpy(out, &col, n);
    out->size = n;
    return 0;
}

int gpufl_analysis_column(gpufl_analysis_t *a, gpufl_table_t table, size_t index,
                          gpufl_column_t *out) {
    int rc;
    if (!a || !out) return gpufl__set_error(GPUFL_EINVAL, "column: no handle or no out");
    pthread_mutex_lock(&a->lock);
    const gpufl__an_table_t *tb = table_get(a, table, &rc);
    if (tb && index >= tb->ncols)
        rc = gpufl__set_error(GPUFL_EINVAL, "table %s has %zu columns, not %zu", table_names[table],
                              tb->ncols, index + 1);
    else if (tb)
        rc = column_out(tb, index, out);
    pthread_mutex_unlock(&a->lock);
    return rc;
}

int gpufl_analysis_column_find(gpufl_analysis_t *a, gpufl_table_t table, const char *name,
                               gpufl_column_t *out) {
    int rc;
    if (!a || !out || !name) return gpufl__set_error(GPUFL_EINVAL, "column: missing argument");
    pthread_mutex_lock(&a->lock);
    const gpufl__an_table_t *tb = table_get(a, table, &rc);
    size_t c = 0;
    while (tb && c < tb->ncols && strcmp(tb->defs[c].name, name) != 0) c++;
    if (tb && c == tb->ncols)
        rc = gpufl__set_error(GPUFL_ENOTFOUND, "table %s has no column '%s'", table_names[table],
                              name);
    else if (tb)
        rc = column_out(tb, c, out);
    pthread_mutex_unlock(&a->lock);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Report                                                                   */
/* ---------------------------------------------------------------------- */

void gpufl_report_options_init_sized(gpufl_report_options_t *opts, size_t size) {
    gpufl_report_options_t d = {sizeof d, "text", NULL, 0};
    if (!opts) return;
    d.size = size < sizeof d ? size : sizeof d;
    memcpy(opts, &d, d.size);
}

/* Renders into a new text; called locked. */
static int render(gpufl_analysis_t *a, gpufl_report_format_t fmt, const char *section, size_t top_n,
                  gpufl__an_text_t **out) {
    gpufl__an_text_t *x = calloc(1, sizeof *x);
    FILE *f = NULL;
    int rc = 0;
    if (!x || (section && !(x->section = strdup(section))) ||
        !(f = open_memstream(&x->text, &x->len))) {
        rc = oom();
        goto free_text;
    }
    x->fmt = fmt;
    x->top_n = top_n;
    a->report.top_n = top_n;
    rc = section ? gpufl__report_render_text_section(&a->report, section, f)
                 : gpufl__report_render(&a->report, fmt, f);
    if (fclose(f) != 0 && !rc) rc = oom();
    f = NULL;
    if (rc) goto free_text;
    x->next = a->texts;
    a->texts = x;
    *out = x;
    return 0;
free_text:
    if (f) fclose(f);
    if (x) {
        free(x->section);
        free(x->text);
        free(x);
    }
    return rc;
}

/* The caller's options over the defaults, checked; fmt gets the format. */
static int report_options(const gpufl_report_options_t *opts, gpufl_report_options_t *o,
                          gpufl_report_format_t *fmt) {
    gpufl_report_options_init(o);
    if (opts) memcpy(o, opts, opts->size < sizeof *o ? opts->size : sizeof *o);
    int rc = gpufl_report_format_parse(o->format ? o->format : "text", fmt);
    if (rc) return rc;
    if (o->section && *fmt != GPUFL_REPORT_TEXT)
        return gpufl__set_error(GPUFL_EINVAL, "report: sections are for the text format only");
    return 0;
}

int gpufl_analysis_report_write(gpufl_analysis_t *a, const gpufl_report_options_t *opts,
                                FILE *out) {
    gpufl_report_options_t o;
    gpufl_report_format_t fmt;
    if (!a || !out) return gpufl__set_error(GPUFL_EINVAL, "report: no handle or no stream");
    int rc = report_options(opts, &o, &fmt);
    if (rc) return rc;
    pthread_mutex_lock(&a->lock);
    rc = gpufl__analysis_report_built(a);
    if (!rc) {
        a->report.top_n = o.top_n;
        rc = o.section ? gpufl__report_render_text_section(&a->report, o.section, out)
                       : gpufl__report_render(&a->report, fmt, out);
    }
    pthread_mutex_unlock(&a->lock);
    if (!rc && (fflush(out) != 0 || ferror(out)))
        rc = gpufl__set_error(GPUFL_EIO, "report: writing the report failed");
    return rc;
}

int gpufl_analysis_report(gpufl_analysis_t *a, const gpufl_report_options_t *opts,
                          const char **text, size_t *len) {
    gpufl_report_options_t o;
    gpufl_report_format_t fmt;
    if (!a || !text) return gpufl__set_error(GPUFL_EINVAL, "report: no handle or no text");
    int rc = report_options(opts, &o, &fmt);
    if (rc) return rc;
    pthread_mutex_lock(&a->lock);
    rc = gpufl__analysis_feed_model(a);
    if (rc) {
        pthread_mutex_unlock(&a->lock);
        return rc;
    }
    gpufl__an_text_t *x = a->texts;
    for (; x; x = x->next)
        if (x->fmt == fmt && x->top_n == o.top_n && !x->section == !o.section &&
            (!o.section || strcmp(x->section, o.section) == 0))
            break;
    if (!x) rc = gpufl__analysis_report_built(a);
    if (!x && !rc) rc = render(a, fmt, o.section, o.top_n, &x);
    if (x) {
        *text = x->text;
        if (len) *len = x->len;
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}
