// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_upload.c - fuzz target for what the upload module reads from disk: a log root's cursor
 * file (.gpufl-upload.json) and a session file it lists as windows. The input is the cursor's
 * bytes, a NUL byte, then device.log's bytes. A cursor of any shape opens (a damaged one is set
 * aside and started afresh), takes an acknowledgement, saves and reads back with it; the
 * session's windows never claim bytes past the file's end, end on a line, and are named after
 * the session.
 */
#include "fuzz_target.h"

#include "net/cursor.h"
#include "net/window.h"

#include <gpufl/gpufl.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void quiet(gpufl_log_level_t level, const char *message, void *user) {
    (void)level, (void)message, (void)user;
}

static void write_file(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(size == 0 || fwrite(data, 1, size, f) == size);
    fclose(f);
}

static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    while (d && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(path);
        else
            unlink(path);
    }
    if (d) closedir(d);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gpufl_set_log_hook(quiet, NULL);
    const uint8_t *nul = memchr(data, '\0', size);
    size_t cursor_len = nul ? (size_t)(nul - data) : size;
    const uint8_t *log = nul ? nul + 1 : data + size;
    size_t log_len = nul ? size - cursor_len - 1 : 0;

    const char *tmp = getenv("TMPDIR");
    char root[2048], path[4200], session[2200];
    snprintf(root, sizeof root, "%s/fuzz_upload.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    FUZZ_CHECK(mkdtemp(root) != NULL);
    snprintf(path, sizeof path, "%s" GPUFL__NET_CURSOR_FILE, root);
    write_file(path, data, cursor_len);

    gpufl__net_cursor_t *c = NULL;
    FUZZ_CHECK(gpufl__net_cursor_open(&c, root) == 0);
    int had4 = gpufl__net_cursor_acked(c, "s-1", "device", 4);
    FUZZ_CHECK(gpufl__net_cursor_ack(c, "s-1", "device", 3) == 0);
    FUZZ_CHECK(gpufl__net_cursor_set_partial(c, "s-1", "scope", 9, 100, 7) == 0);
    FUZZ_CHECK(gpufl__net_cursor_save(c) == 0);
    gpufl__net_cursor_close(c);
    FUZZ_CHECK(gpufl__net_cursor_open(&c, root) == 0);
    FUZZ_CHECK(!gpufl__net_cursor_was_rebuilt(c));
    FUZZ_CHECK(gpufl__net_cursor_acked(c, "s-1", "device", 3));
    FUZZ_CHECK(gpufl__net_cursor_acked(c, "s-1", "device", 4) == had4);
    int64_t bytes;
    uint32_t crc;
    gpufl__net_cursor_partial(c, "s-1", "scope", 9, &bytes, &crc);
    FUZZ_CHECK(bytes == 100 && crc == 7);
    FUZZ_CHECK(gpufl__net_cursor_ack(c, "s-1", "scope", 9) == 0);
    gpufl__net_cursor_partial(c, "s-1", "scope", 9, &bytes, &crc);
    FUZZ_CHECK(bytes == 0 && gpufl__net_cursor_acked(c, "s-1", "scope", 9));
    gpufl__net_cursor_close(c);

    snprintf(session, sizeof session, "%s/20261127T000000.000Z-1-abcd", root);
    FUZZ_CHECK(mkdir(session, 0755) == 0);
    snprintf(path, sizeof path, "%s/device.log", session);
    write_file(path, log, log_len);
    gpufl__net_session_t s;
    if (gpufl__net_session_scan(&s, session, NULL) == 0) {
        FUZZ_CHECK(s.n == 1);
        const gpufl__net_window_t *w = &s.windows[0];
        FUZZ_CHECK(w->bytes >= 0 && (size_t)w->bytes <= log_len);
        FUZZ_CHECK(!w->sealed || w->bytes > 0);
        FUZZ_CHECK(strncmp(w->id, s.id, strlen(s.id)) == 0);
        char *body = NULL;
        size_t len = 0;
        FUZZ_CHECK(gpufl__net_window_read(&body, &len, w, 0) == 0);
        FUZZ_CHECK(len == (size_t)w->bytes && (len == 0 || body[len - 1] == '\n'));
        FUZZ_CHECK(len == 0 || memcmp(body, log, len) == 0);
        free(body);
        /* A slice from the middle: the same bytes as the whole window's tail. */
        int64_t from = w->bytes / 2;
        FUZZ_CHECK(gpufl__net_window_read(&body, &len, w, from) == 0);
        FUZZ_CHECK(len == (size_t)(w->bytes - from));
        FUZZ_CHECK(len == 0 || memcmp(body, log + from, len) == 0);
        free(body);
        uint32_t prefix = 0;
        FUZZ_CHECK(gpufl__net_window_crc(&prefix, w, from) == 0);
        FUZZ_CHECK(prefix == (uint32_t)crc32(0L, (const Bytef *)log, (uInt)from));
        gpufl__net_session_fini(&s);
    }
    remove_tree(root);
    gpufl_set_log_hook(NULL, NULL);
    return 0;
}
