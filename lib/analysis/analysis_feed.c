// SPDX-License-Identifier: Apache-2.0
/*
 * analysis_feed.c - a read API handle built from a session's lines as they
 * arrive (gpufl_analysis_create / _feed / _feed_end), through the reader's
 * one feed path (gpufl__reader_feed_cut), as opening a directory does.
 *
 * The model depends on the order of the files (device, scope, system: the
 * order a directory is read in) but lines of different files may come in
 * any order, and the model can only be finished once. So by default the
 * cut lines are kept per file and every report builds a fresh model from
 * them in file order: any interleaving gives the directory's bytes, and a
 * report can be taken at any point. GPUFL_ANALYSIS_IN_ORDER trades both for
 * memory: lines go straight into one model, which is finished at the end.
 */
#include "analysis/analysis.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

#define KEPT_DEFAULT_MAX ((size_t)4 << 30)
#define KIND_SHIFT       62 /* a kept entry's header: kind << 62 | length */

/* One file of the session as fed. */
typedef struct fed_file {
    gpufl__reader_cutter_t cutter;
    char *kept; /* cut lines: a uint64_t header, then the line's bytes */
    size_t kept_len, kept_alloc;
    uint64_t bytes; /* fed, over-long lines included */
    int fed;        /* a feed call named it: the file exists, lines or not */
    int ended;      /* gpufl_analysis_feed_end for this file */
    int unfinished; /* ended with an unfinished line, dropped */
} fed_file_t;

typedef struct gpufl__analysis_feed {
    unsigned flags;
    gpufl__model_limits_t limits;
    size_t max_kept, kept_total;
    fed_file_t files[GPUFL_LOG_FILE_COUNT];
    /* The NULL channel: one cutter, and the file its last header named. */
    gpufl__reader_cutter_t auto_cutter;
    int auto_file; /* -1: no header yet */
    int ended;     /* the session's end */
    int changed;   /* fed since a->m was built */
    /* GPUFL_ANALYSIS_IN_ORDER: the model being loaded and its reader. */
    gpufl__model_t *live;
    gpufl__reader_t reader;
    int last_file; /* the latest file fed, -1 none */
} gpufl__analysis_feed_t;

/* ---------------------------------------------------------------------- */
/* Creating                                                                 */
/* ---------------------------------------------------------------------- */

void gpufl_analysis_options_init_sized(gpufl_analysis_options_t *opts, size_t size) {
    gpufl_analysis_options_t d = {sizeof d, 0, 0, 0};
    if (!opts) return;
    d.size = size < sizeof d ? size : sizeof d;
    memcpy(opts, &d, d.size);
}

int gpufl_analysis_create(gpufl_analysis_t **out, const gpufl_analysis_options_t *opts) {
    gpufl_analysis_options_t o;
    gpufl_analysis_options_init(&o);
    if (out) *out = NULL;
    if (!out) return gpufl__set_error(GPUFL_EINVAL, "create: out is required");
    if (opts && opts->size == 0)
        return gpufl__set_error(GPUFL_EINVAL, "create: opts->size is not set");
    if (opts) memcpy(&o, opts, opts->size < sizeof o ? opts->size : sizeof o);
    if (o.flags & ~GPUFL_ANALYSIS_IN_ORDER)
        return gpufl__set_error(GPUFL_EINVAL, "create: unknown flags 0x%x", o.flags);
    gpufl_analysis_t *a = calloc(1, sizeof *a);
    gpufl__analysis_feed_t *f = calloc(1, sizeof *f);
    if (!a || !f) {
        free(a);
        free(f);
        return gpufl__set_error(GPUFL_ENOMEM, "out of memory for an analysis handle");
    }
    gpufl__idmap_init(&a->by_ptr);
    pthread_mutex_init(&a->lock, NULL);
    a->feed = f;
    f->flags = o.flags;
    f->limits.max_line_bytes = o.max_line_bytes;
    f->max_kept = o.max_kept_bytes ? o.max_kept_bytes : KEPT_DEFAULT_MAX;
    f->auto_file = f->last_file = -1;
    f->auto_cutter.max_line = o.max_line_bytes;
    for (int i = 0; i < GPUFL_LOG_FILE_COUNT; i++) f->files[i].cutter.max_line = o.max_line_bytes;
    f->changed = 1;
    if (f->flags & GPUFL_ANALYSIS_IN_ORDER) {
        int rc = gpufl__model_create(&f->live, &f->limits);
        if (rc) {
            gpufl_analysis_close(a);
            return rc;
        }
        gpufl__model_reader_init(f->live, &f->reader, 1);
    }
    *out = a;
    return 0;
}

void gpufl__analysis_feed_free(gpufl_analysis_t *a) {
    gpufl__analysis_feed_t *f = a->feed;
    if (!f) return;
    for (int i = 0; i < GPUFL_LOG_FILE_COUNT; i++) {
        gpufl__reader_cutter_fini(&f->files[i].cutter);
        free(f->files[i].kept);
    }
    gpufl__reader_cutter_fini(&f->auto_cutter);
    if (f->live) {
        gpufl__reader_fini(&f->reader);
        gpufl__model_destroy(f->live);
    }
    free(f);
    a->feed = NULL;
}

/* ---------------------------------------------------------------------- */
/* Taking lines                                                             */
/* ---------------------------------------------------------------------- */

/* The file a channel names ("scope", "scope.log", "scope.log.3"), or -1. */
static int file_of(const char *channel) {
    static const char *const names[GPUFL_LOG_FILE_COUNT] = {"device", "scope", "system"};
    for (int i = 0; i < GPUFL_LOG_FILE_COUNT; i++) {
        size_t n = strlen(names[i]);
        const char *rest = channel + n;
        if (strncmp(channel, names[i], n) != 0) continue;
        if (*rest == '\0' || strcmp(rest, ".log") == 0) return i;
        if (strncmp(rest, ".log.", 5) != 0 || rest[5] == '\0') continue;
        rest += 5;
        while (*rest >= '0' && *rest <= '9') rest++;
        if (*rest == '\0') return i;
    }
    return -1;
}

/* Keeps one cut line of file i for the next model. */
static int keep(gpufl__analysis_feed_t *f, int i, gpufl__reader_cut_t kind, const char *line,
                size_t len) {
    fed_file_t *ff = &f->files[i];
    uint64_t header = (uint64_t)kind << KIND_SHIFT | (uint64_t)len;
    size_t need = sizeof header + len;
    if (need > f->max_kept - f->kept_total)
        return gpufl__set_error(GPUFL_ENOMEM, "the cap of %zu bytes of kept lines is reached",
                                f->max_kept);
    if (ff->kept_alloc - ff->kept_len < need) {
        size_t grown = ff->kept_alloc ? ff->kept_alloc : (size_t)64 << 10;
        while (grown - ff->kept_len < need) grown *= 2;
        char *p = realloc(ff->kept, grown);
        if (!p) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for fed lines");
        ff->kept = p;
        ff->kept_alloc = grown;
    }
    memcpy(ff->kept + ff->kept_len, &header, sizeof header);
    if (len) memcpy(ff->kept + ff->kept_len + sizeof header, line, len);
    ff->kept_len += need;
    f->kept_total += need;
    return 0;
}

/* One cut line of file i: into the live model (in order) or kept. */
static int put_line(gpufl__analysis_feed_t *f, int i, gpufl__reader_cut_t kind, const char *line,
                    size_t len) {
    if (f->files[i].ended)
        return gpufl__set_error(GPUFL_EINVAL, "feed: %s was already ended",
                                gpufl__reader_file_name((gpufl__log_file_t)i));
    if ((f->flags & GPUFL_ANALYSIS_IN_ORDER) && i < f->last_file)
        return gpufl__set_error(GPUFL_EINVAL,
                                "feed: %s after %s, but the handle takes files in order",
                                gpufl__reader_file_name((gpufl__log_file_t)i),
                                gpufl__reader_file_name((gpufl__log_file_t)f->last_file));
    f->last_file = i;
    f->files[i].fed = 1;
    f->changed = 1;
    if (f->live) return gpufl__reader_feed_cut(&f->reader, (gpufl__log_file_t)i, kind, line, len);
    return keep(f, i, kind, line, len);
}

typedef struct cut_ctx {
    gpufl__analysis_feed_t *f;
    int file;
} cut_ctx_t;

static int on_cut(void *user, gpufl__reader_cut_t kind, const char *line, size_t len) {
    cut_ctx_t *c = user;
    return put_line(c->f, c->file, kind, line, len);
}

/* The file a header line names in its "file" member, or -1. Writers put
 * "type" first, so other lines are told apart without parsing them. */
static int header_file(const char *line, size_t len) {
    static const char start[] = "{\"type\":\"header\"";
    if (len < sizeof start - 1 || memcmp(line, start, sizeof start - 1) != 0) return -1;
    json_t *rec = json_loadb(line, len, 0, NULL);
    json_t *file = json_object_get(rec, "file");
    int i = json_is_string(file) ? file_of(json_string_value(file)) : -1;
    json_decref(rec);
    return i;
}

/* A line of the NULL channel: its header lines say whose lines follow. */
static int on_auto_cut(void *user, gpufl__reader_cut_t kind, const char *line, size_t len) {
    gpufl__analysis_feed_t *f = user;
    if (kind == GPUFL_READER_CUT_LINE) {
        int i = header_file(line, len);
        if (i >= 0) f->auto_file = i;
    }
    if (f->auto_file < 0)
        return gpufl__set_error(GPUFL_EFORMAT,
                                "feed: a line before any header says which file it is of "
                                "(name the channel)");
    if (kind == GPUFL_READER_CUT_LINE) {
        f->files[f->auto_file].bytes += len + 1;
        if (f->live) f->reader.stats->bytes += len + 1;
    }
    return put_line(f, f->auto_file, kind, line, len);
}

/* The handle's feed state, or NULL with the error set. */
static gpufl__analysis_feed_t *feed_of(gpufl_analysis_t *a, const char *what) {
    if (!a->feed) {
        gpufl__set_error(GPUFL_EINVAL, "%s: the handle was opened from a directory", what);
        return NULL;
    }
    if (a->feed->ended) {
        gpufl__set_error(GPUFL_EINVAL, "%s: the session was already ended", what);
        return NULL;
    }
    return a->feed;
}

int gpufl_analysis_feed(gpufl_analysis_t *a, const char *channel, const char *bytes, size_t len) {
    if (!a || (!bytes && len)) return gpufl__set_error(GPUFL_EINVAL, "feed: no handle or bytes");
    int file = channel ? file_of(channel) : -1;
    if (channel && file < 0)
        return gpufl__set_error(
            GPUFL_EINVAL, "feed: unknown channel '%s' (device, scope, system or NULL)", channel);
    pthread_mutex_lock(&a->lock);
    int rc = GPUFL_EINVAL;
    gpufl__analysis_feed_t *f = feed_of(a, "feed");
    if (f && channel && f->files[file].ended)
        rc = gpufl__set_error(GPUFL_EINVAL, "feed: %s was already ended", channel);
    else if (f && channel) {
        cut_ctx_t c = {f, file};
        f->files[file].fed = 1;
        f->files[file].bytes += len;
        if (f->live) f->reader.stats->bytes += len;
        rc = gpufl__reader_cut(&f->files[file].cutter, bytes, len, on_cut, &c);
    } else if (f) {
        rc = gpufl__reader_cut(&f->auto_cutter, bytes, len, on_auto_cut, f);
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

/* The end of file i in reader r: a file fed but with no whole line still
 * exists (as an empty file does), and its unfinished line is counted. */
static void reader_end(gpufl__reader_t *r, const fed_file_t *ff, int i) {
    if (!r->ch[i].started && (ff->fed || ff->unfinished))
        gpufl__reader_segment(r, (gpufl__log_file_t)i, 0);
    if (r->ch[i].started) gpufl__reader_end(r, (gpufl__log_file_t)i, ff->unfinished);
}

/* Ends file i: its unfinished line (unfinished: one left on the NULL
 * channel) is dropped and counted. */
static void end_file(gpufl__analysis_feed_t *f, int i, int unfinished) {
    fed_file_t *ff = &f->files[i];
    if (ff->ended) return;
    ff->unfinished = gpufl__reader_cut_end(&ff->cutter) || unfinished;
    ff->ended = 1;
    f->changed = 1;
    if (f->live) reader_end(&f->reader, ff, i);
}

int gpufl_analysis_feed_end(gpufl_analysis_t *a, const char *channel) {
    if (!a) return gpufl__set_error(GPUFL_EINVAL, "feed_end: no handle");
    int file = channel ? file_of(channel) : -1;
    if (channel && file < 0)
        return gpufl__set_error(GPUFL_EINVAL, "feed_end: unknown channel '%s'", channel);
    pthread_mutex_lock(&a->lock);
    int rc = 0;
    gpufl__analysis_feed_t *f = feed_of(a, "feed_end");
    if (!f) {
        rc = GPUFL_EINVAL;
    } else if (channel) {
        if (f->files[file].ended)
            rc = gpufl__set_error(GPUFL_EINVAL, "feed_end: %s was already ended", channel);
        else
            end_file(f, file, 0);
    } else {
        /* What is left on the NULL channel is the unfinished end of its file. */
        int left = gpufl__reader_cut_end(&f->auto_cutter) && f->auto_file >= 0;
        for (int i = 0; i < GPUFL_LOG_FILE_COUNT; i++) end_file(f, i, left && i == f->auto_file);
        f->ended = 1;
        f->changed = 1;
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Building the model                                                       */
/* ---------------------------------------------------------------------- */

/* A fresh model from the kept lines, file by file as a directory is read. */
static int build_from_kept(gpufl__analysis_feed_t *f, gpufl__model_t **out) {
    gpufl__model_t *m;
    gpufl__reader_t r;
    int rc = gpufl__model_create(&m, &f->limits);
    if (rc) return rc;
    gpufl__model_reader_init(m, &r, 1);
    for (int i = 0; i < GPUFL_LOG_FILE_COUNT && !rc; i++) {
        const fed_file_t *ff = &f->files[i];
        for (size_t at = 0; at < ff->kept_len && !rc;) {
            uint64_t header;
            memcpy(&header, ff->kept + at, sizeof header);
            size_t len = (size_t)(header & (((uint64_t)1 << KIND_SHIFT) - 1));
            gpufl__reader_cut_t kind = (gpufl__reader_cut_t)(header >> KIND_SHIFT);
            rc = gpufl__reader_feed_cut(&r, (gpufl__log_file_t)i, kind,
                                        ff->kept + at + sizeof header, len);
            at += sizeof header + len;
        }
        r.stats->bytes += ff->bytes;
        if (!rc && ff->ended) reader_end(&r, ff, i);
        if (!rc && !ff->ended && ff->fed && !r.ch[i].started)
            gpufl__reader_segment(&r, (gpufl__log_file_t)i, 0);
    }
    gpufl__reader_fini(&r);
    if (!rc) rc = gpufl__model_finish(m);
    if (rc) {
        gpufl__model_destroy(m);
        return rc;
    }
    *out = m;
    return 0;
}

int gpufl__analysis_feed_model(gpufl_analysis_t *a) {
    gpufl__analysis_feed_t *f = a->feed;
    if (!f || !f->changed) return 0;
    gpufl__model_t *m = NULL;
    int rc;
    if (f->live) {
        if (!f->ended)
            return gpufl__set_error(GPUFL_EINVAL,
                                    "a handle fed in order has tables and reports after "
                                    "gpufl_analysis_feed_end(a, NULL)");
        gpufl__reader_fini(&f->reader);
        m = f->live;
        f->live = NULL;
        rc = gpufl__model_finish(m);
        if (rc) gpufl__model_destroy(m);
    } else {
        rc = build_from_kept(f, &m);
    }
    if (rc) return rc;
    gpufl__analysis_drop_model(a);
    a->m = m;
    f->changed = 0;
    return 0;
}
