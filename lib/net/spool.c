// SPDX-License-Identifier: Apache-2.0
/*
 * spool.c - the bound on what a log root holds undelivered (upload.h, spool_max_bytes; gpufl-agent
 * --spool-max-mib): when the server has been away so long that the windows not yet on it pass
 * the bound, the oldest sealed ones are dropped, each replaced by a three-line window that says
 * so (its header, a spool_dropped record with what was lost, its last line), counted and logged.
 * The replacement keeps the segment numbering and the session's end for every reader, and its
 * record reaches the server once it is back: a loss is never silent.
 */
#include "net/spool.h"

#include "net/cursor.h"
#include "net/window.h"
#include "util/error.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CANDIDATES_MAX 16384 /* sealed windows weighed in one trim; the rest wait */
#define EDGE_LINE_MAX  65536 /* a header or sealing line longer than this is not replaced */

typedef struct candidate {
    int64_t mtime_ns;
    int64_t bytes; /* undelivered: the whole window (partly shipped ones are not dropped) */
    size_t dir;    /* index into the trim's dirs */
    int channel;
    int64_t sequence;
    char id[GPUFL__NET_WINDOW_ID_MAX];
} candidate_t;

static int older(const void *a, const void *b) {
    const candidate_t *x = a, *y = b;
    if (x->mtime_ns != y->mtime_ns) return x->mtime_ns < y->mtime_ns ? -1 : 1;
    return strcmp(x->id, y->id);
}

/* The first and last lines of a sealed window (each with its '\n'), malloc'ed. */
static int edge_lines(const char *path, int64_t bytes, char **first, char **last) {
    *first = *last = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return GPUFL_EIO;
    size_t cap = bytes < EDGE_LINE_MAX ? (size_t)bytes : EDGE_LINE_MAX;
    char *head = malloc(cap + 1), *tail = malloc(cap + 1);
    ssize_t h = head ? pread(fd, head, cap, 0) : -1;
    ssize_t t = tail ? pread(fd, tail, cap, (off_t)(bytes - (int64_t)cap)) : -1;
    close(fd);
    int rc = GPUFL_EIO;
    if (h == (ssize_t)cap && t == (ssize_t)cap && cap > 0 && tail[cap - 1] == '\n') {
        char *nl = memchr(head, '\n', cap);
        size_t i = cap - 1;
        while (i > 0 && tail[i - 1] != '\n') i--;
        if (nl && (i > 0 || (int64_t)cap == bytes)) {
            nl[1] = '\0';
            memmove(tail, tail + i, cap - i);
            tail[cap - i] = '\0';
            *first = head;
            *last = tail;
            return 0;
        }
    }
    free(head);
    free(tail);
    return rc;
}

/* Replaces a sealed window by its header, a spool_dropped record and its last line: a new file
 * written, synced and renamed over the old one. */
static int replace_window(const candidate_t *c, const char *dir, int64_t max_bytes) {
    char path[4200], tmp[4300];
    const char *channel = gpufl__net_channel_names[c->channel];
    if (c->sequence == 0)
        snprintf(path, sizeof path, "%s/%s.log", dir, channel);
    else
        snprintf(path, sizeof path, "%s/%s.log.%lld", dir, channel, (long long)c->sequence);
    char *first, *last;
    if (edge_lines(path, c->bytes, &first, &last) != 0)
        return gpufl__set_error(GPUFL_EIO, "spool: cannot read the edges of %s", path);
    snprintf(tmp, sizeof tmp, "%s.dropping.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    int ok = f && fputs(first, f) >= 0 &&
             fprintf(f,
                     "{\"type\":\"spool_dropped\",\"v\":1,\"bytes\":%lld,\"spool_max_bytes\":%lld,"
                     "\"reason\":\"the server was away while the undelivered windows passed the "
                     "spool's bound: this window was dropped unsent\"}\n",
                     (long long)c->bytes, (long long)max_bytes) > 0 &&
             fputs(last, f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (f && fclose(f) != 0) ok = 0;
    free(first);
    free(last);
    if (ok && rename(tmp, path) == 0) return 0;
    int e = errno;
    unlink(tmp);
    return gpufl__set_error(GPUFL_EIO, "spool: cannot replace %s: %s", path, strerror(e));
}

/* Adds the session's sealed, untouched, undelivered windows to the candidates and all its
 * undelivered bytes to *total. */
static void weigh(gpufl__net_cursor_t *cur, const char *dir, size_t d, candidate_t *cands,
                  size_t *n, int64_t *total) {
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    if (gpufl__net_cursor_completed(cur, base)) return;
    int64_t from[GPUFL__NET_CHANNELS];
    gpufl__net_cursor_scan_from(cur, base, from);
    gpufl__net_session_t s;
    if (gpufl__net_session_scan(&s, dir, from) != 0) return;
    for (size_t i = 0; i < s.n; i++) {
        const gpufl__net_window_t *w = &s.windows[i];
        const char *channel = gpufl__net_channel_names[w->channel];
        if (gpufl__net_cursor_acked(cur, s.id, channel, w->sequence) ||
            gpufl__net_cursor_quarantined(cur, s.id, channel, w->sequence))
            continue;
        int64_t partial;
        uint32_t crc;
        gpufl__net_cursor_partial(cur, s.id, channel, w->sequence, &partial, &crc);
        *total += w->bytes - partial;
        struct stat st;
        if (!w->sealed || partial > 0 || *n == CANDIDATES_MAX || stat(w->path, &st) != 0) continue;
        candidate_t *c = &cands[(*n)++];
        c->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        c->bytes = w->bytes;
        c->dir = d;
        c->channel = w->channel;
        c->sequence = w->sequence;
        snprintf(c->id, sizeof c->id, "%s", w->id);
    }
    gpufl__net_session_fini(&s);
}

int gpufl__net_spool_trim(gpufl__net_upload_result_t *r, const char *root, const char *const *dirs,
                          size_t n, int64_t max_bytes) {
    if (max_bytes <= 0) return 0;
    candidate_t *cands = malloc(CANDIDATES_MAX * sizeof *cands);
    if (!cands) return gpufl__set_error(GPUFL_ENOMEM, "spool: out of memory");
    gpufl__net_cursor_t *cur = NULL;
    int rc = gpufl__net_cursor_open(&cur, root);
    if (rc != 0) {
        free(cands);
        return rc;
    }
    size_t nc = 0;
    int64_t total = 0;
    for (size_t d = 0; d < n; d++) weigh(cur, dirs[d], d, cands, &nc, &total);
    r->spool_bytes = total;
    if (total > max_bytes) qsort(cands, nc, sizeof *cands, older);
    for (size_t i = 0; i < nc && total > max_bytes; i++) {
        const candidate_t *c = &cands[i];
        if (replace_window(c, dirs[c->dir], max_bytes) != 0) {
            gpufl__warn("%s", gpufl_last_error());
            continue;
        }
        total -= c->bytes;
        r->windows_dropped++;
        r->bytes_dropped += c->bytes;
        gpufl__warn("spool: %lld MiB undelivered passed the bound of %lld MiB: dropped %s "
                    "(%lld bytes, never sent; a spool_dropped record takes its place)",
                    (long long)((total + c->bytes) >> 20), (long long)(max_bytes >> 20), c->id,
                    (long long)c->bytes);
    }
    r->spool_bytes = total;
    gpufl__net_cursor_close(cur);
    free(cands);
    return rc;
}
