// SPDX-License-Identifier: Apache-2.0
/*
 * window.c - a session directory's segments as upload windows. Only the tail of each file is
 * read when listing (to find its last complete line and whether it seals the segment), so
 * listing a log root of large sessions costs a few reads per file.
 */
#include "net/window.h"

#include "util/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define TAIL_BYTES 65536

const char *const gpufl__net_channel_names[GPUFL__NET_CHANNELS] = {"device", "scope", "system"};

static int id_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_' || c == ':';
}

/* The session id the protocol allows: 1 to 128 of letters, digits and . - _ : */
static int valid_session_id(const char *id) {
    size_t n = strlen(id);
    if (n == 0 || n > GPUFL__NET_SESSION_ID_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (!id_char(id[i])) return 0;
    return 1;
}

/* The line that starts at p (up to end) names type? Lines begin {"type":"...". */
static int line_is(const char *p, const char *end, const char *type) {
    char want[64];
    int n = snprintf(want, sizeof want, "{\"type\":\"%s\"", type);
    return n > 0 && end - p >= n && memcmp(p, want, (size_t)n) == 0;
}

/*
 * Finds the end of the last complete line of fd (size bytes) and whether that line is a
 * segment_end or session_end, reading backwards a chunk at a time.
 */
static int inspect(gpufl__net_window_t *w, int fd, int64_t size) {
    char *buf = malloc(TAIL_BYTES);
    if (!buf) return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
    int64_t end = size, last_nl = -1;
    /* The last '\n': the end of the last complete line. */
    while (end > 0 && last_nl < 0) {
        int64_t start = end > TAIL_BYTES ? end - TAIL_BYTES : 0;
        ssize_t got = pread(fd, buf, (size_t)(end - start), start);
        if (got != end - start) {
            free(buf);
            return gpufl__set_error(GPUFL_EIO, "upload: cannot read %s: %s", w->path,
                                    got < 0 ? strerror(errno) : "short read");
        }
        for (int64_t i = got - 1; i >= 0 && last_nl < 0; i--)
            if (buf[i] == '\n') last_nl = start + i;
        end = start;
    }
    w->bytes = last_nl + 1;
    if (last_nl > 0) {
        /* The last complete line is short when it seals: read up to TAIL_BYTES before it. */
        int64_t start = last_nl > TAIL_BYTES ? last_nl - TAIL_BYTES : 0;
        ssize_t got = pread(fd, buf, (size_t)(last_nl - start), start);
        if (got == last_nl - start) {
            int64_t i = got;
            while (i > 0 && buf[i - 1] != '\n') i--;
            if (i > 0 || start == 0) {
                const char *p = buf + i, *e = buf + got;
                w->session_end = line_is(p, e, "session_end");
                w->sealed = w->session_end || line_is(p, e, "segment_end");
            }
        }
    }
    free(buf);
    return 0;
}

static int add_window(gpufl__net_session_t *s, int channel, int64_t seq, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return 1; /* no such segment: the channel ends here */
    gpufl__net_window_t *grown = realloc(s->windows, (s->n + 1) * sizeof *grown);
    if (!grown) return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
    s->windows = grown;
    gpufl__net_window_t *w = &s->windows[s->n];
    memset(w, 0, sizeof *w);
    w->channel = channel;
    w->sequence = seq;
    memcpy(w->path, path, strlen(path) + 1); /* the caller made it fit */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return gpufl__set_error(GPUFL_EIO, "upload: cannot open %s: %s", path, strerror(errno));
    int rc = inspect(w, fd, (int64_t)st.st_size);
    close(fd);
    if (rc == 0) s->n++;
    return rc;
}

/* The session id of the header line that starts the file at path (the protocol checks the
 * window's header against it), into s->id when it is one the protocol allows. Returns 1 then. */
static int header_session_id(gpufl__net_session_t *s, const char *path) {
    char head[2048];
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t got = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[got] = '\0';
    const char *key = "\"session_id\":\"";
    char *p = strstr(head, key), *nl = strchr(head, '\n');
    if (!p || (nl && p > nl)) return 0;
    p += strlen(key);
    char *q = strchr(p, '"');
    if (!q || (size_t)(q - p) > GPUFL__NET_SESSION_ID_MAX) return 0;
    char id[GPUFL__NET_SESSION_ID_MAX + 1];
    memcpy(id, p, (size_t)(q - p));
    id[q - p] = '\0';
    if (!valid_session_id(id)) return 0;
    memcpy(s->id, id, sizeof id);
    return 1;
}

int gpufl__net_session_scan(gpufl__net_session_t *out, const char *dir, const int64_t *from_seq) {
    memset(out, 0, sizeof *out);
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    if (len >= sizeof out->dir) return gpufl__set_error(GPUFL_EINVAL, "upload: path too long");
    memcpy(out->dir, dir, len);
    const char *base = strrchr(out->dir, '/');
    base = base ? base + 1 : out->dir;
    if (valid_session_id(base)) memcpy(out->id, base, strlen(base) + 1); /* <= 128 bytes */
    int channels = 0, ended = 0;
    int named = 0; /* the id taken from a header line */
    for (int c = 0; c < GPUFL__NET_CHANNELS; c++) {
        char path[sizeof out->windows->path];
        size_t first = out->n;
        int64_t from = from_seq && from_seq[c] > 0 ? from_seq[c] : 0;
        int more = 0;
        out->skipped += from;
        for (int64_t seq = from;; seq++) {
            if (seq - from == GPUFL__NET_WINDOWS_MAX) {
                more = out->more = 1;
                break;
            }
            int n = seq == 0 ? snprintf(path, sizeof path, "%s/%s.log", out->dir,
                                        gpufl__net_channel_names[c])
                             : snprintf(path, sizeof path, "%s/%s.log.%lld", out->dir,
                                        gpufl__net_channel_names[c], (long long)seq);
            int rc = n < 0 || (size_t)n >= sizeof path
                         ? gpufl__set_error(GPUFL_EINVAL, "upload: path too long in %s", out->dir)
                         : add_window(out, c, seq, path);
            if (rc == 1) break;
            if (rc < 0) {
                gpufl__net_session_fini(out);
                return rc;
            }
        }
        if (out->n > first && !named) named = header_session_id(out, out->windows[first].path);
        if (out->n > first) {
            channels++;
            ended += !more && out->windows[out->n - 1].session_end;
        }
    }
    if (channels > 0 && !valid_session_id(out->id)) {
        gpufl__net_session_fini(out);
        return gpufl__set_error(
            GPUFL_EINVAL,
            "upload: %s: no session id (its header line names none, and the "
            "directory's name is not one: 1 to 128 letters, digits and . - _ :)",
            dir);
    }
    if (channels == 0) {
        gpufl__net_session_fini(out);
        return gpufl__set_error(GPUFL_ENOTFOUND, "upload: no session files in %s", dir);
    }
    out->ended = ended == channels;
    /* Named once the session id is known: "<session>-<channel>-<sequence>". */
    for (size_t i = 0; i < out->n; i++)
        snprintf(out->windows[i].id, sizeof out->windows[i].id, "%s-%s-%lld", out->id,
                 gpufl__net_channel_names[out->windows[i].channel],
                 (long long)out->windows[i].sequence);
    return 0;
}

void gpufl__net_session_fini(gpufl__net_session_t *s) {
    if (!s) return;
    free(s->windows);
    s->windows = NULL;
    s->n = 0;
}

int gpufl__net_window_read(char **out, size_t *len, const gpufl__net_window_t *w, int64_t from) {
    *out = NULL;
    *len = 0;
    if (from < 0 || from > w->bytes)
        return gpufl__set_error(GPUFL_EINVAL, "upload: offset %lld past the %lld bytes of %s",
                                (long long)from, (long long)w->bytes, w->path);
    int fd = open(w->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return gpufl__set_error(GPUFL_EIO, "upload: cannot open %s: %s", w->path, strerror(errno));
    size_t want = (size_t)(w->bytes - from);
    char *buf = malloc(want > 0 ? want : 1);
    if (!buf) {
        close(fd);
        return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory for %s", w->path);
    }
    size_t done = 0;
    while (done < want) {
        ssize_t got = pread(fd, buf + done, want - done, (off_t)(from + (int64_t)done));
        if (got <= 0) {
            free(buf);
            close(fd);
            return gpufl__set_error(GPUFL_EIO, "upload: %s shrank while read: %s", w->path,
                                    got < 0 ? strerror(errno) : "end of file");
        }
        done += (size_t)got;
    }
    close(fd);
    *out = buf;
    *len = done;
    return 0;
}

int gpufl__net_window_crc(uint32_t *crc, const gpufl__net_window_t *w, int64_t bytes) {
    uLong c = crc32(0L, Z_NULL, 0);
    int fd = open(w->path, O_RDONLY | O_CLOEXEC);
    char *buf = fd >= 0 ? malloc(TAIL_BYTES) : NULL;
    int64_t done = 0;
    while (buf && done < bytes) {
        size_t want = bytes - done < TAIL_BYTES ? (size_t)(bytes - done) : TAIL_BYTES;
        ssize_t got = pread(fd, buf, want, (off_t)done);
        if (got <= 0) break;
        c = crc32(c, (const Bytef *)buf, (uInt)got);
        done += got;
    }
    free(buf);
    if (fd >= 0) close(fd);
    if (done != bytes)
        return gpufl__set_error(GPUFL_EIO, "upload: cannot read the first %lld bytes of %s",
                                (long long)bytes, w->path);
    *crc = (uint32_t)c;
    return 0;
}
