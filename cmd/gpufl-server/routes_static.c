// SPDX-License-Identifier: Apache-2.0
/*
 * routes_static.c - the dashboard's built files (web/, docs/dashboard.md) served at / from
 * --web-root: paths that never leave the root (no dot segments, symlinks resolved and checked),
 * content types by extension, hashed assets cached for good and index.html revalidated, and app
 * routes answered with index.html (the app reads its view from the URL).
 */
#include "server.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATIC_FILE_MAX_BYTES ((off_t)64 << 20) /* a built bundle is far smaller */
#define ASSETS_PREFIX         "/assets/"        /* Vite's output of content-hashed names */
#define CACHE_IMMUTABLE       "public, max-age=31536000, immutable"
#define CACHE_REVALIDATE      "no-cache"
/* The app loads only its own files: no CDN, no inline script, not framed by another site. */
#define HTML_POLICY                                                                                \
    "default-src 'self'; img-src 'self' data:; style-src 'self'; "                                 \
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

static const struct {
    const char *ext, *type;
} content_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},
    {".map", "application/json"},
    {".webmanifest", "application/manifest+json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".jpg", "image/jpeg"},
    {".ico", "image/x-icon"},
    {".woff2", "font/woff2"},
    {".woff", "font/woff"},
    {".wasm", "application/wasm"},
    {".txt", "text/plain; charset=utf-8"},
};

static const char *content_type_of(const char *path) {
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (dot && (!slash || dot > slash)) {
        for (size_t i = 0; i < sizeof content_types / sizeof content_types[0]; i++)
            if (!strcmp(dot, content_types[i].ext)) return content_types[i].type;
    }
    return "application/octet-stream";
}

/* 1 when every segment of the (already percent-decoded) path is a plain name: no "." or "..",
 * no backslash, no NUL smuggled in as %00 (libmicrohttpd cuts the path there). */
static int path_is_plain(const char *path) {
    if (path[0] != '/' || strchr(path, '\\')) return 0;
    for (const char *p = path; *p;) {
        p++; /* past '/' */
        size_t n = strcspn(p, "/");
        if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return 0;
        p += n;
    }
    return 1;
}

/* An app route: outside the assets, and not ending in a file type the table knows (a session
 * id holds dots: "/sessions/20261123T120000.000Z-7070-c3d4" is the app's). */
static int is_app_route(const char *path) {
    return strncmp(path, ASSETS_PREFIX, strlen(ASSETS_PREFIX)) != 0 &&
           !strcmp(content_type_of(path), "application/octet-stream");
}

/* What / answers without a dashboard: where the server looked, and how to put one there. */
#define NOT_INSTALLED_PAGE                                                                         \
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>gpufl: dashboard not "              \
    "installed</title></head><body><h1>The gpufl dashboard is not installed</h1><p>This "          \
    "gpufl-server finds no dashboard in its web root <code>%s</code>. Build it (web/, "            \
    "<code>npm ci &amp;&amp; npm run build</code>) and install it with <code>cmake "               \
    "--install</code>, or start the server with <code>--web-root DIR</code>. The API under "       \
    "<code>/api/v1/</code> works without it.</p></body></html>\n"

static void not_installed(gpufl__reply_t *rep, const char *root) {
    char safe[PATH_MAX];
    size_t k = 0;
    for (const char *p = root; *p && k + 6 < sizeof safe; p++) { /* the root's text, escaped */
        const char *esc = *p == '<' ? "&lt;" : *p == '&' ? "&amp;" : NULL;
        if (!esc) {
            safe[k++] = *p;
            continue;
        }
        memcpy(safe + k, esc, strlen(esc));
        k += strlen(esc);
    }
    safe[k] = '\0';
    size_t size = sizeof NOT_INSTALLED_PAGE + k;
    rep->raw = malloc(size);
    if (!rep->raw) {
        gpufl__reply_error(rep, 500, "out of memory");
        return;
    }
    rep->raw_len = (size_t)snprintf(rep->raw, size, NOT_INSTALLED_PAGE, safe);
    rep->status = 404;
    rep->content_type = "text/html; charset=utf-8";
    rep->cache_control = CACHE_REVALIDATE;
}

/* Reads a regular file under its cap into rep: 0, or -1 with errno (EFBIG past the cap). */
static int read_file(const char *path, gpufl__reply_t *rep) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    int rc = -1;
    if (fstat(fd, &st) != 0) goto close_fd;
    if (!S_ISREG(st.st_mode)) {
        errno = ENOENT;
        goto close_fd;
    }
    if (st.st_size > STATIC_FILE_MAX_BYTES) {
        errno = EFBIG;
        goto close_fd;
    }
    char *data = malloc((size_t)st.st_size + 1);
    if (!data) goto close_fd;
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            free(data);
            if (n == 0) errno = EIO; /* the file shrank while read */
            goto close_fd;
        }
        got += (size_t)n;
    }
    rep->raw = data;
    rep->raw_len = got;
    rc = 0;
close_fd:
    close(fd);
    return rc;
}

/* The file a path names inside root_real, resolved: 0 and out, or -1 when it does not exist
 * or resolves (through a symlink) outside the root. */
static int resolve(const char *root_real, const char *path, char out[PATH_MAX]) {
    char joined[PATH_MAX];
    int n = snprintf(joined, sizeof joined, "%s%s", root_real, path);
    if (n < 0 || (size_t)n >= sizeof joined || !realpath(joined, out)) return -1;
    size_t k = strlen(root_real);
    if (strncmp(out, root_real, k) != 0 || (out[k] != '/' && out[k] != '\0')) return -1;
    struct stat st;
    return stat(out, &st) == 0 && S_ISREG(st.st_mode) ? 0 : -1;
}

static void serve_file(gpufl__reply_t *rep, const char *file, const char *path) {
    if (read_file(file, rep) != 0) {
        gpufl__reply_error(rep, errno == EFBIG ? 500 : 404,
                           errno == EFBIG ? "the file is past the server's cap" : "no such file");
        return;
    }
    rep->status = 200;
    rep->content_type = content_type_of(file);
    rep->cache_control =
        !strncmp(path, ASSETS_PREFIX, strlen(ASSETS_PREFIX)) ? CACHE_IMMUTABLE : CACHE_REVALIDATE;
    if (!strcmp(rep->content_type, content_types[0].type)) {
        rep->header_name = "Content-Security-Policy";
        rep->header_value = HTML_POLICY;
    }
}

void gpufl__static_route(gpufl__request_t *req, gpufl__reply_t *rep) {
    const char *root = req->server->settings->web_root;
    const char *path = req->path;
    if (!path_is_plain(path)) {
        gpufl__reply_error(rep, 400, "the path may not hold '.' or '..' segments or '\\'");
        return;
    }
    char root_real[PATH_MAX], index[PATH_MAX], file[PATH_MAX];
    if (!realpath(root, root_real) || resolve(root_real, "/index.html", index) != 0) {
        not_installed(rep, root);
        return;
    }
    size_t n = strlen(path);
    if (path[n - 1] == '/' || resolve(root_real, path, file) != 0) {
        /* A directory, or a name the root lacks: the app's own routes get index.html (the app
         * then shows its own page for a view it does not know); a missing file stays 404, so a
         * stale hashed asset never comes back as HTML. */
        if (path[n - 1] == '/' || is_app_route(path)) {
            serve_file(rep, index, "/index.html");
            return;
        }
        gpufl__reply_error(rep, 404, "no such file");
        return;
    }
    serve_file(rep, file, path);
}
