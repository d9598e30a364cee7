// SPDX-License-Identifier: Apache-2.0
/*
 * flags.c - the executables' shared flag helpers (flags.h).
 */
#include "flags.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_bad(const char *tool, const char *what, const char *value, const char *why) {
    fprintf(stderr, "%s: bad %s '%s': %s (see --help)\n", tool, what, value, why);
    return -1;
}

int cmd_parse_int(const char *tool, const char *what, const char *text, long lo, long hi,
                  int *out) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) {
        char range[64];
        snprintf(range, sizeof range, "expected an integer %ld..%ld", lo, hi);
        return cmd_bad(tool, what, text, range);
    }
    *out = (int)v;
    return 0;
}

int cmd_parse_listen(const char *tool, const char *text, int allow_none, char *host,
                     size_t host_size, int *port) {
    if (allow_none && strcmp(text, "none") == 0) {
        host[0] = '\0';
        return 0;
    }
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text)
        return cmd_bad(tool, "--listen", text,
                       allow_none ? "expected ADDR:PORT or none" : "expected ADDR:PORT");
    size_t n = (size_t)(colon - text);
    const char *start = text;
    if (text[0] == '[' && colon[-1] == ']') start++, n -= 2; /* [::1]:8080 */
    if (n == 0 || n >= host_size) return cmd_bad(tool, "--listen", text, "bad address");
    memcpy(host, start, n);
    host[n] = '\0';
    return cmd_parse_int(tool, "--listen port", colon + 1, 0, 65535, port);
}

int cmd_read_key(const char *tool, const char *path, char *key, size_t size) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot read the API key file %s: %s\n", tool, path, strerror(errno));
        return -1;
    }
    if (!fgets(key, (int)size, f)) key[0] = '\0';
    fclose(f);
    key[strcspn(key, "\r\n")] = '\0';
    if (!key[0]) {
        fprintf(stderr, "%s: the API key file %s is empty\n", tool, path);
        return -1;
    }
    return 0;
}
