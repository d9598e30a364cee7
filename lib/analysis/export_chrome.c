// SPDX-License-Identifier: Apache-2.0
/*
 * export_chrome.c - the timeline as Chrome trace event JSON, the format of
 * chrome://tracing (Catapult) that Perfetto UI also opens: complete events
 * (ph X) for slices, flow events (ph s / f) for launch -> kernel arrows,
 * counter events (ph C) and metadata (ph M) naming the process and tracks.
 *
 * chrome://tracing slows to a crawl past about a million events, so a large
 * session is split by time into numbered files of at most max_events_per_file
 * events each, not counting the metadata (process and track names) that
 * every file repeats so that it opens on its own. An
 * arrow whose two ends fall into different files is left out (counted).
 * Times are microseconds with three decimals: the nanoseconds, exactly.
 */
#include "analysis/export_timeline.h"

#include "util/error.h"
#include "util/jsonw.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FLUSH_BYTES (1u << 20)
/* One event past FLUSH_BYTES: a name of the largest dict string (64 MiB) escaped. */
#define BUF_MAX_BYTES ((size_t)512 << 20)

typedef struct chrome {
    const gpufl__export_timeline_t *tl;
    const gpufl_export_options_t *opt;
    gpufl_export_result_t *res;
    gpufl__buf_t buf;
    FILE *f;
    const char *path; /* for messages */
    int failed;       /* an error was set */
    int first_event;
} chrome_t;

static int flush(chrome_t *c) {
    if (c->failed) return -1;
    if (c->buf.overflow) {
        c->failed = 1;
        return gpufl__set_error(GPUFL_ENOMEM, "export: an event of '%s' passes %zu bytes", c->path,
                                BUF_MAX_BYTES);
    }
    if (c->buf.len && fwrite(c->buf.data, 1, c->buf.len, c->f) != c->buf.len) {
        c->failed = 1;
        return gpufl__set_error(GPUFL_EIO, "cannot write '%s': %s", c->path, strerror(errno));
    }
    c->res->bytes += c->buf.len;
    c->buf.len = 0;
    return 0;
}

/* Nanoseconds as microseconds with three decimals. */
static void put_us(gpufl__buf_t *b, int64_t ns) {
    uint64_t u = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (ns < 0) gpufl__buf_putc(b, '-');
    gpufl__buf_put_i64(b, (int64_t)(u / 1000));
    char frac[4] = {'.', (char)('0' + u % 1000 / 100), (char)('0' + u % 100 / 10),
                    (char)('0' + u % 10)};
    gpufl__buf_put(b, frac, 4);
}

static void event_open(chrome_t *c, const char *ph) {
    gpufl__buf_put(&c->buf, c->first_event ? "\n{\"ph\":\"" : ",\n{\"ph\":\"",
                   c->first_event ? 8 : 9);
    gpufl__buf_puts(&c->buf, ph);
    gpufl__buf_putc(&c->buf, '"');
    c->first_event = 0;
    c->res->events++;
}

static void put_pid_tid(chrome_t *c, int64_t tid) {
    gpufl__buf_kv_i64(&c->buf, "pid", c->tl->pid);
    gpufl__buf_kv_i64(&c->buf, "tid", tid);
}

/* Argument sink: members of the open "args" object. */
static void arg_str(void *user, const char *key, const char *v) {
    chrome_t *c = user;
    gpufl__buf_key(&c->buf, key);
    gpufl__buf_put_str(&c->buf, v, strlen(v));
}
static void arg_i64(void *user, const char *key, int64_t v) {
    chrome_t *c = user;
    gpufl__buf_kv_i64(&c->buf, key, v);
}
static void arg_dbl(void *user, const char *key, double v) {
    chrome_t *c = user;
    gpufl__buf_key(&c->buf, key);
    gpufl__buf_put_fixed(&c->buf, v, 3);
}

static void write_metadata(chrome_t *c, size_t file, size_t n_files) {
    const gpufl__export_timeline_t *tl = c->tl;
    const gpufl__model_t *m = tl->m;
    gpufl__buf_puts(&c->buf, "{\"traceEvents\":[");
    c->first_event = 1;
    event_open(c, "M");
    gpufl__buf_kv_str(&c->buf, "name", "process_name");
    put_pid_tid(c, 0);
    gpufl__buf_puts(&c->buf, ",\"args\":{");
    gpufl__buf_kv_str(&c->buf, "name", tl->process_name);
    gpufl__buf_puts(&c->buf, "}}");
    if (n_files > 1 || *m->header.session_id) {
        char label[320];
        snprintf(label, sizeof label, "%s%s%s", m->header.session_id,
                 *m->header.session_id && n_files > 1 ? ", " : "", n_files > 1 ? "part " : "");
        if (n_files > 1) {
            size_t l = strlen(label);
            snprintf(label + l, sizeof label - l, "%zu of %zu", file + 1, n_files);
        }
        event_open(c, "M");
        gpufl__buf_kv_str(&c->buf, "name", "process_labels");
        put_pid_tid(c, 0);
        gpufl__buf_puts(&c->buf, ",\"args\":{");
        gpufl__buf_kv_str(&c->buf, "labels", label);
        gpufl__buf_puts(&c->buf, "}}");
    }
    for (size_t i = 0; i < tl->n_tracks; i++) {
        const gpufl__export_track_t *t = &tl->tracks[i];
        if (t->kind == GPUFL_EXPORT_TRACK_COUNTER) continue;
        event_open(c, "M");
        gpufl__buf_kv_str(&c->buf, "name", "thread_name");
        put_pid_tid(c, t->chrome_tid);
        gpufl__buf_puts(&c->buf, ",\"args\":{");
        gpufl__buf_kv_str(&c->buf, "name", t->name);
        gpufl__buf_puts(&c->buf, "}}");
        event_open(c, "M");
        gpufl__buf_kv_str(&c->buf, "name", "thread_sort_index");
        put_pid_tid(c, t->chrome_tid);
        gpufl__buf_puts(&c->buf, ",\"args\":{");
        gpufl__buf_kv_i64(&c->buf, "sort_index", t->sort_index);
        gpufl__buf_puts(&c->buf, "}}");
    }
}

static void write_end(chrome_t *c, size_t file, size_t n_files) {
    const gpufl__model_t *m = c->tl->m;
    gpufl__buf_puts(&c->buf, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{");
    gpufl__buf_kv_str(&c->buf, "producer", "gpufl export");
    gpufl__buf_kv_str(&c->buf, "session_id", m->header.session_id);
    gpufl__buf_kv_str(&c->buf, "app_name", m->header.app_name);
    gpufl__buf_kv_str(&c->buf, "hostname", m->header.hostname);
    gpufl__buf_kv_str(&c->buf, "gpufl_version", m->header.gpufl_version);
    gpufl__buf_kv_i64(&c->buf, "epoch_unix_us", m->header.epoch_unix_us);
    gpufl__buf_kv_str(&c->buf, "time_origin", "session epoch");
    gpufl__buf_kv_i64(&c->buf, "part", (int64_t)file + 1);
    gpufl__buf_kv_i64(&c->buf, "parts", (int64_t)n_files);
    gpufl__buf_puts(&c->buf, "}}\n");
}

/* One flow end (s at the launch, f at the kernel) of kernel `index`. */
static void write_flow(chrome_t *c, const gpufl__export_row_t *r) {
    const gpufl__export_track_t *t = &c->tl->tracks[r->track];
    event_open(c, r->kind == GPUFL_EXPORT_LAUNCH ? "s" : "f");
    if (r->kind != GPUFL_EXPORT_LAUNCH) gpufl__buf_puts(&c->buf, ",\"bp\":\"e\"");
    gpufl__buf_kv_i64(&c->buf, "id", (int64_t)r->index + GPUFL_EXPORT_FLOW_BASE);
    gpufl__buf_kv_str(&c->buf, "cat", "launch");
    gpufl__buf_kv_str(&c->buf, "name", "launch");
    put_pid_tid(c, t->chrome_tid);
    gpufl__buf_key(&c->buf, "ts");
    put_us(&c->buf, r->start_ns);
    gpufl__buf_putc(&c->buf, '}');
}

static void write_row(chrome_t *c, const gpufl__export_row_t *r) {
    const gpufl__export_timeline_t *tl = c->tl;
    const gpufl__export_track_t *t = &tl->tracks[r->track];
    const char *name = gpufl__export_row_name(tl, r);
    if (r->kind == GPUFL_EXPORT_COUNTER) {
        event_open(c, "C");
        gpufl__buf_key(&c->buf, "name");
        gpufl__buf_put_str(&c->buf, name, strlen(name));
        put_pid_tid(c, 0);
        gpufl__buf_key(&c->buf, "ts");
        put_us(&c->buf, r->start_ns);
        gpufl__buf_puts(&c->buf, ",\"args\":{");
        int64_t iv;
        double dv;
        if (gpufl__export_counter_value(tl, r, &iv, &dv))
            arg_dbl(c, "value", dv);
        else
            gpufl__buf_kv_i64(&c->buf, "value", iv);
        gpufl__buf_puts(&c->buf, "}}");
        c->res->counters++;
        return;
    }
    int instant = r->kind == GPUFL_EXPORT_LAUNCH_CALL;
    event_open(c, instant ? "i" : "X");
    if (instant) gpufl__buf_puts(&c->buf, ",\"s\":\"t\"");
    gpufl__buf_kv_str(&c->buf, "cat", gpufl__export_kind_name((gpufl__export_kind_t)r->kind));
    gpufl__buf_key(&c->buf, "name");
    gpufl__buf_put_str(&c->buf, name, strlen(name));
    put_pid_tid(c, t->chrome_tid);
    gpufl__buf_key(&c->buf, "ts");
    put_us(&c->buf, r->start_ns);
    if (!instant) {
        gpufl__buf_key(&c->buf, "dur");
        int64_t dur; /* a damaged log's extreme times must not overflow */
        if (__builtin_sub_overflow(r->end_ns, r->start_ns, &dur)) dur = INT64_MAX;
        put_us(&c->buf, dur);
    }
    gpufl__buf_puts(&c->buf, ",\"args\":{");
    gpufl__export_args_t sink = {arg_str, arg_i64, arg_dbl, c};
    gpufl__export_row_args(tl, r, &sink);
    gpufl__buf_puts(&c->buf, "}}");
    if (instant)
        c->res->instants++;
    else
        c->res->slices++;
}

/* path with ".<n>" before its ending (.trace.json, else .json), n padded to
 * the width of the count so that the files sort in time order. */
static char *part_path(const char *path, size_t n, size_t count) {
    size_t len = strlen(path), stem = len;
    static const char *const endings[] = {".trace.json", ".json"};
    for (size_t i = 0; i < 2; i++) {
        size_t e = strlen(endings[i]);
        if (len > e && strcmp(path + len - e, endings[i]) == 0) {
            stem = len - e;
            break;
        }
    }
    char num[24], digits[24];
    int width = snprintf(digits, sizeof digits, "%zu", count);
    int len_n = snprintf(num, sizeof num, "%zu", n + 1);
    size_t size = len + 64;
    char *p = malloc(size);
    if (!p) return NULL;
    memcpy(p, path, stem);
    size_t o = stem;
    p[o++] = '.';
    for (int i = len_n; i < width; i++) p[o++] = '0';
    memcpy(p + o, num, (size_t)len_n);
    o += (size_t)len_n;
    memcpy(p + o, path + stem, len - stem + 1);
    return p;
}

static int add_file(gpufl_export_result_t *res, const char *path) {
    char **f = realloc(res->files, (res->n_files + 1) * sizeof *f);
    if (!f) return -1;
    res->files = f;
    f[res->n_files] = strdup(path);
    if (!f[res->n_files]) return -1;
    res->n_files++;
    return 0;
}

/* Where each file starts (rows), so that none holds more than max events. */
static int plan_files(const gpufl__export_timeline_t *tl, uint64_t max, size_t **starts,
                      size_t *n) {
    size_t cap = 16, count = 1;
    size_t *s = malloc(cap * sizeof *s);
    if (!s) return gpufl__set_error(GPUFL_ENOMEM, "export: out of memory");
    s[0] = 0;
    uint64_t events = 0;
    for (size_t i = 0; i < tl->n_rows; i++) {
        uint64_t cost = 1 + (tl->rows[i].flow ? 1 : 0);
        if (events > 0 && events + cost > max) {
            if (count == GPUFL_EXPORT_FILES_MAX) {
                free(s);
                return gpufl__set_error(GPUFL_EINVAL,
                                        "export: the session needs more than %u files of %llu "
                                        "events; allow more events per file",
                                        GPUFL_EXPORT_FILES_MAX, (unsigned long long)max);
            }
            if (count == cap) {
                size_t *x = realloc(s, cap * 2 * sizeof *s);
                if (!x) {
                    free(s);
                    return gpufl__set_error(GPUFL_ENOMEM, "export: out of memory");
                }
                s = x;
                cap *= 2;
            }
            s[count++] = i;
            events = 0;
        }
        events += cost;
    }
    *starts = s;
    *n = count;
    return 0;
}

/* For each kernel with an arrow: the file of its launch and of itself. */
static int plan_flows(const gpufl__export_timeline_t *tl, const size_t *starts, size_t n_files,
                      uint32_t **file_of) {
    *file_of = NULL;
    if (n_files < 2 || tl->flows == 0) return 0;
    size_t nk = tl->m->n_kernels;
    uint32_t *f = malloc(2 * nk * sizeof *f);
    if (!f) return gpufl__set_error(GPUFL_ENOMEM, "export: out of memory");
    size_t file = 0;
    for (size_t i = 0; i < tl->n_rows; i++) {
        while (file + 1 < n_files && starts[file + 1] <= i) file++;
        const gpufl__export_row_t *r = &tl->rows[i];
        if (!r->flow) continue;
        f[2 * r->index + (r->kind == GPUFL_EXPORT_LAUNCH ? 0 : 1)] = (uint32_t)file;
    }
    *file_of = f;
    return 0;
}

static int write_file(chrome_t *c, size_t file, size_t n_files, size_t from, size_t to,
                      const uint32_t *file_of) {
    write_metadata(c, file, n_files);
    const gpufl__export_timeline_t *tl = c->tl;
    for (size_t i = from; i < to; i++) {
        const gpufl__export_row_t *r = &tl->rows[i];
        write_row(c, r);
        if (r->flow) {
            int same = !file_of || file_of[2 * r->index] == file_of[2 * r->index + 1];
            if (same) {
                write_flow(c, r);
                if (r->kind == GPUFL_EXPORT_KERNEL) c->res->flows++;
            } else if (r->kind == GPUFL_EXPORT_KERNEL) {
                c->res->flows_cut++;
            }
        }
        if (c->buf.len >= FLUSH_BYTES && flush(c)) return -1;
        if (c->opt->progress && (i & 0xffff) == 0 && tl->n_rows)
            c->opt->progress(c->opt->progress_user, (double)i / (double)tl->n_rows);
    }
    write_end(c, file, n_files);
    return flush(c);
}

int gpufl__export_chrome(gpufl_export_result_t *res, const gpufl__export_timeline_t *tl,
                         const gpufl_export_options_t *opt) {
    int to_stream = !opt->path || strcmp(opt->path, "-") == 0;
    uint64_t max =
        opt->max_events_per_file ? opt->max_events_per_file : GPUFL_EXPORT_CHROME_MAX_EVENTS;
    if (to_stream) {
        uint64_t events = tl->n_rows + tl->flows * 2;
        res->split_suppressed = events > max;
        max = UINT64_MAX;
    }
    size_t *starts = NULL, n_files = 0;
    uint32_t *file_of = NULL;
    int rc = plan_files(tl, max, &starts, &n_files);
    if (rc) return rc;
    rc = plan_flows(tl, starts, n_files, &file_of);
    if (rc) {
        free(starts);
        return rc;
    }
    chrome_t c = {tl, opt, res, {0}, NULL, NULL, 0, 1};
    gpufl__buf_init(&c.buf, BUF_MAX_BYTES);
    for (size_t file = 0; file < n_files && rc == 0; file++) {
        char *path = NULL;
        if (to_stream) {
            c.f = opt->out ? opt->out : stdout;
            c.path = "<stdout>";
        } else {
            path = n_files > 1 ? part_path(opt->path, file, n_files) : strdup(opt->path);
            if (!path) {
                rc = gpufl__set_error(GPUFL_ENOMEM, "export: out of memory");
                break;
            }
            c.path = path;
            c.f = fopen(path, "w");
            if (!c.f) {
                rc = gpufl__set_error(GPUFL_EIO, "cannot create '%s': %s", path, strerror(errno));
                free(path);
                break;
            }
        }
        size_t to = file + 1 < n_files ? starts[file + 1] : tl->n_rows;
        rc = write_file(&c, file, n_files, starts[file], to, file_of) ? -1 : 0;
        if (rc) rc = GPUFL_EIO;
        if (to_stream) {
            if (rc == 0 && fflush(c.f) != 0)
                rc = gpufl__set_error(GPUFL_EIO, "cannot write to stdout: %s", strerror(errno));
        } else {
            if (fclose(c.f) != 0 && rc == 0)
                rc = gpufl__set_error(GPUFL_EIO, "cannot write '%s': %s", path, strerror(errno));
            if (rc == 0 && add_file(res, path))
                rc = gpufl__set_error(GPUFL_ENOMEM, "export: out of memory");
        }
        if (rc == GPUFL_EIO && c.buf.overflow) rc = GPUFL_ENOMEM;
        free(path);
    }
    gpufl__buf_fini(&c.buf);
    free(starts);
    free(file_of);
    return rc;
}
