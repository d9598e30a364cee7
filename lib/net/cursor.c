// SPDX-License-Identifier: Apache-2.0
/*
 * cursor.c - the cursor file of a log root (cursor.h): a JSON object
 *   {"version": 1, "sessions": {"<id>": {"acked_to": {"device": 5}, "acked": {"device": [7]},
 *                                         "partial": {"device": {"2": [bytes, crc32]}},
 *                                         "quarantined": {...}, "completed": true}}}
 * read and written with jansson under an flock, replaced atomically. A channel's windows
 * acknowledged from 0 on are one number (acked_to: all below it), so the cursor of a monitor
 * that seals a window every 10 s for months stays small; "acked" lists the others.
 */
#include "net/cursor.h"

#include "net/window.h"

#include "util/error.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define CURSOR_VERSION 1

struct gpufl__net_cursor {
    char root[4096];
    int lock_fd;
    int rebuilt;
    json_t *doc; /* {"version", "sessions"} */
};

static json_t *empty_doc(void) {
    return json_pack("{s:i, s:{}}", "version", CURSOR_VERSION, "sessions");
}

/* A cursor this version understands: its sessions an object of objects. */
static int well_formed(json_t *doc) {
    json_t *sessions = json_object_get(doc, "sessions");
    if (!json_is_object(doc) ||
        json_integer_value(json_object_get(doc, "version")) != CURSOR_VERSION ||
        !json_is_object(sessions))
        return 0;
    static const char *const members[] = {"acked", "acked_to", "partial", "quarantined"};
    const char *id;
    json_t *s;
    json_object_foreach(sessions, id, s) {
        if (!json_is_object(s)) return 0;
        for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
            json_t *m = json_object_get(s, members[i]);
            if (m && !json_is_object(m)) return 0;
            const char *channel;
            json_t *v;
            json_object_foreach(m, channel, v) {
                if (i == 0 || i == 3 ? !json_is_array(v)
                    : i == 1         ? !json_is_integer(v)
                                     : !json_is_object(v))
                    return 0;
            }
        }
    }
    return 1;
}

int gpufl__net_cursor_open(gpufl__net_cursor_t **out, const char *root) {
    *out = NULL;
    gpufl__net_cursor_t *c = calloc(1, sizeof *c);
    if (!c) return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
    snprintf(c->root, sizeof c->root, "%s", root);
    char path[4200];
    snprintf(path, sizeof path, "%s" GPUFL__NET_LOCK_FILE, root);
    c->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (c->lock_fd < 0) {
        int rc = gpufl__set_error(GPUFL_EIO, "upload: cannot create the lock %s: %s", path,
                                  strerror(errno));
        free(c);
        return rc;
    }
    while (flock(c->lock_fd, LOCK_EX) != 0 && errno == EINTR) {
    }
    snprintf(path, sizeof path, "%s" GPUFL__NET_CURSOR_FILE, root);
    json_error_t err;
    c->doc = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (c->doc && !well_formed(c->doc)) {
        json_decref(c->doc);
        c->doc = NULL;
        snprintf(err.text, sizeof err.text, "not a version %d cursor", CURSOR_VERSION);
    }
    if (!c->doc && access(path, F_OK) == 0) {
        char aside[4300];
        snprintf(aside, sizeof aside, "%s.damaged", path);
        gpufl__warn("upload: the cursor %s is damaged (%s): kept as %s; starting afresh, the "
                    "server answers what it already has as duplicates",
                    path, err.text, aside);
        if (rename(path, aside) != 0) unlink(path);
        c->rebuilt = 1;
    }
    if (!c->doc) c->doc = empty_doc();
    if (!c->doc) {
        gpufl__net_cursor_close(c);
        return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
    }
    *out = c;
    return 0;
}

int gpufl__net_cursor_was_rebuilt(const gpufl__net_cursor_t *c) { return c->rebuilt; }

/* The session's object, created when create is set; NULL otherwise when absent. */
static json_t *session_of(const gpufl__net_cursor_t *c, const char *session, int create) {
    json_t *sessions = json_object_get(c->doc, "sessions");
    json_t *s = json_object_get(sessions, session);
    if (!s && create) {
        s = json_object();
        if (!s || json_object_set_new(sessions, session, s) != 0) return NULL;
    }
    return s;
}

static int listed(const gpufl__net_cursor_t *c, const char *key, const char *session,
                  const char *channel, int64_t sequence) {
    json_t *list = json_object_get(json_object_get(session_of(c, session, 0), key), channel);
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) if (json_integer_value(v) == sequence) return 1;
    return 0;
}

static int add(gpufl__net_cursor_t *c, const char *key, const char *session, const char *channel,
               int64_t sequence) {
    if (listed(c, key, session, channel, sequence)) return 0;
    json_t *s = session_of(c, session, 1), *by = s ? json_object_get(s, key) : NULL;
    if (s && !by) {
        by = json_object();
        if (!by || json_object_set_new(s, key, by) != 0) by = NULL;
    }
    json_t *list = by ? json_object_get(by, channel) : NULL;
    if (by && !list) {
        list = json_array();
        if (!list || json_object_set_new(by, channel, list) != 0) list = NULL;
    }
    if (!list || json_array_append_new(list, json_integer(sequence)) != 0)
        return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
    return 0;
}

int64_t gpufl__net_cursor_acked_to(const gpufl__net_cursor_t *c, const char *session,
                                   const char *channel) {
    json_t *v = json_object_get(json_object_get(session_of(c, session, 0), "acked_to"), channel);
    return json_is_integer(v) && json_integer_value(v) > 0 ? json_integer_value(v) : 0;
}

int gpufl__net_cursor_acked(const gpufl__net_cursor_t *c, const char *session, const char *channel,
                            int64_t sequence) {
    return sequence < gpufl__net_cursor_acked_to(c, session, channel) ||
           listed(c, "acked", session, channel, sequence);
}

/* Moves the channel's acked_to past sequence and past the listed windows that follow it. */
static int advance(gpufl__net_cursor_t *c, const char *session, const char *channel,
                   int64_t sequence) {
    json_t *s = session_of(c, session, 1), *to = s ? json_object_get(s, "acked_to") : NULL;
    if (s && !json_is_object(to) && json_object_set_new(s, "acked_to", to = json_object()) != 0)
        to = NULL;
    json_t *list = json_object_get(json_object_get(s, "acked"), channel);
    int64_t next = sequence + 1;
    for (int moved = 1; moved;) {
        moved = 0;
        for (size_t i = 0; i < json_array_size(list); i++)
            if (json_integer_value(json_array_get(list, i)) == next) {
                json_array_remove(list, i);
                next++;
                moved = 1;
                break;
            }
    }
    if (!to || json_object_set_new(to, channel, json_integer(next)) != 0)
        return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
    return 0;
}

/* The partial entry of a window: its [bytes, crc32] array, or NULL. */
static json_t *partial_of(const gpufl__net_cursor_t *c, const char *session, const char *channel,
                          int64_t sequence, char key[24]) {
    snprintf(key, 24, "%lld", (long long)sequence);
    json_t *by = json_object_get(json_object_get(session_of(c, session, 0), "partial"), channel);
    return json_object_get(by, key);
}

int gpufl__net_cursor_ack(gpufl__net_cursor_t *c, const char *session, const char *channel,
                          int64_t sequence) {
    char key[24];
    if (partial_of(c, session, channel, sequence, key))
        json_object_del(
            json_object_get(json_object_get(session_of(c, session, 0), "partial"), channel), key);
    if (gpufl__net_cursor_acked(c, session, channel, sequence)) return 0;
    if (sequence == gpufl__net_cursor_acked_to(c, session, channel))
        return advance(c, session, channel, sequence);
    return add(c, "acked", session, channel, sequence);
}

void gpufl__net_cursor_partial(const gpufl__net_cursor_t *c, const char *session,
                               const char *channel, int64_t sequence, int64_t *bytes,
                               uint32_t *crc) {
    char key[24];
    json_t *p = partial_of(c, session, channel, sequence, key);
    json_int_t b = json_integer_value(json_array_get(p, 0));
    json_int_t k = json_integer_value(json_array_get(p, 1));
    /* Anything but two integers in range is no record: the window is sent from its start,
     * which the server answers with where its bytes end (416) or as a duplicate. */
    int ok = json_array_size(p) == 2 && b > 0 && k >= 0 && k <= 0xffffffffLL;
    *bytes = ok ? (int64_t)b : 0;
    *crc = ok ? (uint32_t)k : 0;
}

int gpufl__net_cursor_set_partial(gpufl__net_cursor_t *c, const char *session, const char *channel,
                                  int64_t sequence, int64_t bytes, uint32_t crc) {
    char key[24];
    snprintf(key, sizeof key, "%lld", (long long)sequence);
    json_t *s = session_of(c, session, 1), *all = s ? json_object_get(s, "partial") : NULL;
    if (s && !all && json_object_set_new(s, "partial", all = json_object()) != 0) all = NULL;
    json_t *by = all ? json_object_get(all, channel) : NULL;
    if (all && !by && json_object_set_new(all, channel, by = json_object()) != 0) by = NULL;
    if (!by ||
        json_object_set_new(by, key, json_pack("[I,I]", (json_int_t)bytes, (json_int_t)crc)) != 0)
        return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
    return 0;
}

int gpufl__net_cursor_quarantined(const gpufl__net_cursor_t *c, const char *session,
                                  const char *channel, int64_t sequence) {
    return listed(c, "quarantined", session, channel, sequence);
}

int gpufl__net_cursor_quarantine(gpufl__net_cursor_t *c, const char *session, const char *channel,
                                 int64_t sequence) {
    return add(c, "quarantined", session, channel, sequence);
}

void gpufl__net_cursor_scan_from(const gpufl__net_cursor_t *c, const char *session,
                                 int64_t from[GPUFL__NET_CHANNELS]) {
    for (int i = 0; i < GPUFL__NET_CHANNELS; i++) {
        int64_t to = gpufl__net_cursor_acked_to(c, session, gpufl__net_channel_names[i]);
        from[i] = to > 0 ? to - 1 : 0;
    }
}

int64_t gpufl__net_cursor_acked_count(const gpufl__net_cursor_t *c, const char *session) {
    json_t *s = session_of(c, session, 0), *v;
    const char *channel;
    int64_t n = 0;
    json_object_foreach(json_object_get(s, "acked_to"), channel, v) n +=
        gpufl__net_cursor_acked_to(c, session, channel);
    json_object_foreach(json_object_get(s, "acked"), channel, v) n += (int64_t)json_array_size(v);
    return n;
}

int gpufl__net_cursor_completed(const gpufl__net_cursor_t *c, const char *session) {
    return json_is_true(json_object_get(session_of(c, session, 0), "completed"));
}

int gpufl__net_cursor_knows(const gpufl__net_cursor_t *c, const char *session) {
    return session_of(c, session, 0) != NULL;
}

int gpufl__net_cursor_complete(gpufl__net_cursor_t *c, const char *session) {
    json_t *s = session_of(c, session, 1);
    if (!s || json_object_set_new(s, "completed", json_true()) != 0)
        return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
    return 0;
}

int gpufl__net_cursor_save(gpufl__net_cursor_t *c) {
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s" GPUFL__NET_CURSOR_FILE, c->root);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    char *text = json_dumps(c->doc, JSON_COMPACT | JSON_SORT_KEYS);
    if (!text) return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t len = strlen(text), done = 0;
    while (fd >= 0 && done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += (size_t)n;
    }
    free(text);
    int ok = fd >= 0 && done == len && write(fd, "\n", 1) == 1 && fsync(fd) == 0;
    int saved_errno = errno;
    if (fd >= 0 && close(fd) != 0) ok = 0;
    if (ok && rename(tmp, path) == 0) {
        int dfd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd); /* the rename itself durable */
            close(dfd);
        }
        return 0;
    }
    if (ok) saved_errno = errno;
    unlink(tmp);
    return gpufl__set_error(GPUFL_EIO, "upload: cannot write the cursor %s: %s", path,
                            strerror(saved_errno));
}

void gpufl__net_cursor_close(gpufl__net_cursor_t *c) {
    if (!c) return;
    json_decref(c->doc);
    if (c->lock_fd >= 0) close(c->lock_fd); /* lets go of the flock */
    free(c);
}
