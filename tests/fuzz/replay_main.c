// SPDX-License-Identifier: Apache-2.0
/*
 * replay_main.c - runs a fuzz target on saved inputs without libFuzzer, so the
 * committed corpus replays in CI with any compiler (plain and ASan builds).
 * Arguments are corpus directories (every regular, non-hidden file in them,
 * in name order) or single files; it fails when it ran no input at all.
 */
#include "fuzz_target.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REPLAY_MAX_INPUT ((size_t)64 << 20) /* a sanity cap, far above any corpus file */

static const char *prog = "replay";

/* Reads path whole into *data (malloc'd, never NULL on success). */
static int read_input(const char *path, uint8_t **data, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t alloc = 4096, len = 0;
    uint8_t *buf = malloc(alloc);
    while (buf) {
        if (len == alloc) {
            uint8_t *grown = alloc < REPLAY_MAX_INPUT ? realloc(buf, alloc * 2) : NULL;
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            alloc *= 2;
        }
        size_t n = fread(buf + len, 1, alloc - len, f);
        len += n;
        if (n == 0) break;
    }
    int failed = !buf || ferror(f);
    int saved_errno = buf ? errno : ENOMEM;
    fclose(f);
    if (failed) {
        free(buf);
        errno = saved_errno;
        return -1;
    }
    *data = buf;
    *size = len;
    return 0;
}

static int run_file(const char *path, size_t *ran) {
    uint8_t *data;
    size_t size;
    if (read_input(path, &data, &size)) {
        fprintf(stderr, "%s: cannot read '%s': %s\n", prog, path, strerror(errno));
        return -1;
    }
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    (*ran)++;
    return 0;
}

static int visible(const struct dirent *e) { return e->d_name[0] != '.'; }

static int run_dir(const char *dir, size_t *ran) {
    struct dirent **list;
    int n = scandir(dir, &list, visible, alphasort);
    if (n < 0) {
        fprintf(stderr, "%s: cannot list '%s': %s\n", prog, dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(dir) + strlen(list[i]->d_name) + 2;
        char *path = malloc(len);
        struct stat st;
        if (!path) {
            rc = -1;
        } else {
            snprintf(path, len, "%s/%s", dir, list[i]->d_name);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && run_file(path, ran)) rc = -1;
        }
        free(path);
        free(list[i]);
    }
    free(list);
    return rc;
}

int main(int argc, char **argv) {
    size_t ran = 0;
    int rc = 0;
    if (argc > 0 && argv[0]) {
        const char *slash = strrchr(argv[0], '/');
        prog = slash ? slash + 1 : argv[0];
    }
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        printf("usage: %s DIR|FILE...\n"
               "Runs the fuzz target once on each file (each file of each DIR).\n",
               prog);
        return argc < 2 ? 2 : 0;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "%s: '%s': %s\n", prog, argv[i], strerror(errno));
            rc = 1;
        } else if (S_ISDIR(st.st_mode) ? run_dir(argv[i], &ran) : run_file(argv[i], &ran)) {
            rc = 1;
        }
    }
    printf("%s: ran %zu input%s\n", prog, ran, ran == 1 ? "" : "s");
    if (ran == 0) {
        fprintf(stderr, "%s: no input found\n", prog);
        return 1;
    }
    return rc;
}
