// SPDX-License-Identifier: Apache-2.0
/*
 * sessions.c - the session directories under a log root, newest first. Only
 * each session's first header line and its last segment's tail are read, so
 * listing a root of large sessions stays quick.
 */
#include "analysis/sessions.h"

#include "util/error.h"

#include <jansson.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HEADER_LINE_MAX 65536 /* a header line is far shorter */
#define TAIL_BYTES      8192  /* session_end is the last line of the last segment */
#define SEGMENTS_MAX    100000

static int is_file(const char *dir, const char *name) {
    char path[GPUFL_SESSION_PATH_MAX];
    struct stat st;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) return 0;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int gpufl__session_dir_check(const char *dir) {
    return is_file(dir, "device.log") || is_file(dir, "scope.log");
}

static void copy_string(char *dst, size_t size, const json_t *v) {
    if (json_is_string(v)) snprintf(dst, size, "%s", json_string_value(v));
}

/* Reads the header (first line) of path into s. */
static void read_header(const char *path, gpufl__session_entry_t *s) {
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char *line = malloc(HEADER_LINE_MAX);
    if (line && fgets(line, HEADER_LINE_MAX, f)) {
        json_t *h = json_loads(line, JSON_DECODE_ANY, NULL);
        json_t *epoch = json_object_get(h, "epoch_unix_us");
        copy_string(s->app_name, sizeof s->app_name, json_object_get(h, "app_name"));
        copy_string(s->session_id, sizeof s->session_id, json_object_get(h, "session_id"));
        if (json_is_integer(epoch)) s->epoch_unix_us = json_integer_value(epoch);
        json_decref(h);
    }
    free(line);
    fclose(f);
}

/* The duration from the session_end line at the end of path, if any. */
static void read_end(const char *path, gpufl__session_entry_t *s) {
    char buf[TAIL_BYTES + 1];
    FILE *f = fopen(path, "rb");
    if (!f) return;
    long start = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long end = ftell(f);
        start = end > TAIL_BYTES ? end - TAIL_BYTES : 0;
    }
    size_t n = fseek(f, start, SEEK_SET) == 0 ? fread(buf, 1, TAIL_BYTES, f) : 0;
    fclose(f);
    buf[n] = '\0';
    char *at = NULL;
    for (char *p = buf; (p = strstr(p, "\"type\":\"session_end\"")) != NULL; p++) at = p;
    if (!at) return;
    while (at > buf && at[-1] != '\n') at--;
    char *nl = strchr(at, '\n');
    if (nl) *nl = '\0';
    json_t *e = json_loads(at, JSON_DECODE_ANY, NULL);
    json_t *d = json_object_get(e, "duration_ns");
    if (!json_is_integer(d)) d = json_object_get(e, "ts_ns");
    if (json_is_integer(d)) s->duration_ns = json_integer_value(d);
    json_decref(e);
}

static uint64_t dir_size(const char *dir) {
    uint64_t total = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char path[GPUFL_SESSION_PATH_MAX];
        struct stat st;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path) continue;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) total += (uint64_t)st.st_size;
    }
    closedir(d);
    return total;
}

static void describe(gpufl__session_entry_t *s) {
    char seg[GPUFL_SESSION_PATH_MAX + 32];
    s->epoch_unix_us = -1;
    s->duration_ns = -1;
    const char *first = is_file(s->path, "device.log") ? "device.log" : "scope.log";
    snprintf(seg, sizeof seg, "%s/%s", s->path, first);
    read_header(seg, s);
    /* The last segment: device.log, device.log.1, ... as long as they exist. */
    char name[64];
    int last = 0;
    for (int i = 1; i < SEGMENTS_MAX; i++) {
        snprintf(name, sizeof name, "%s.%d", first, i);
        if (!is_file(s->path, name)) break;
        last = i;
    }
    if (last > 0) snprintf(seg, sizeof seg, "%s/%s.%d", s->path, first, last);
    read_end(seg, s);
    s->size_bytes = dir_size(s->path);
}

int gpufl__session_newer(const gpufl__session_entry_t *x, const gpufl__session_entry_t *y) {
    if (x->epoch_unix_us != y->epoch_unix_us) return x->epoch_unix_us > y->epoch_unix_us;
    return strcmp(x->name, y->name) > 0; /* session ids sort by start time */
}

static int newest_first(const void *a, const void *b) {
    const gpufl__session_entry_t *x = a, *y = b;
    return gpufl__session_newer(x, y) ? -1 : gpufl__session_newer(y, x);
}

void gpufl__session_describe(const char *path, gpufl__session_entry_t *s) {
    const char *slash = strrchr(path, '/');
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    snprintf(s->name, sizeof s->name, "%.*s", (int)sizeof s->name - 1,
             slash && slash[1] ? slash + 1 : path);
    describe(s);
}

int gpufl__sessions_list(gpufl__session_entry_t **out, size_t *count, const char *root) {
    gpufl__session_entry_t *list = NULL;
    size_t n = 0, alloc = 0;
    *out = NULL;
    *count = 0;
    DIR *d = opendir(root);
    if (!d)
        return gpufl__set_error(errno == ENOENT || errno == ENOTDIR ? GPUFL_ENOTFOUND : GPUFL_EIO,
                                "cannot read log root '%s': %s", root, strerror(errno));
    for (struct dirent *e; (e = readdir(d)) != NULL && n < GPUFL_SESSIONS_MAX;) {
        char path[GPUFL_SESSION_PATH_MAX];
        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof list->name) continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", root, e->d_name) >= sizeof path) continue;
        if (!gpufl__session_dir_check(path)) continue;
        if (n == alloc) {
            size_t grow = alloc ? alloc * 2 : 16;
            gpufl__session_entry_t *bigger = realloc(list, grow * sizeof *list);
            if (!bigger) {
                free(list);
                closedir(d);
                return gpufl__set_error(GPUFL_ENOMEM, "out of memory listing '%s'", root);
            }
            list = bigger;
            alloc = grow;
        }
        gpufl__session_describe(path, &list[n++]);
    }
    closedir(d);
    if (n > 1) qsort(list, n, sizeof *list, newest_first);
    *out = list;
    *count = n;
    return 0;
}
