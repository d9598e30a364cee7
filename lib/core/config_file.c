// SPDX-License-Identifier: Apache-2.0
/*
 * config_file.c - loads the JSON config file with jansson and reports
 * errors precisely enough to fix them without guessing.
 */
#include "core/config_file.h"

#include "util/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Config files are small; a cap keeps a wrong path (a log, a binary) from
 * being read whole. */
#define CONFIG_MAX_BYTES (1024 * 1024)

int gpufl__config_file_load(const char *path, json_t **root) {
    json_error_t err;
    FILE *f;
    long size;

    *root = NULL;
    f = fopen(path, "rb");
    if (!f)
        return gpufl__set_error(GPUFL_ECONFIG, "config file '%s' cannot be opened: %s", path,
                                strerror(errno));
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > CONFIG_MAX_BYTES) {
        fclose(f);
        return gpufl__set_error(GPUFL_ECONFIG, "config file '%s' is %ld bytes; the limit is %d",
                                path, size, CONFIG_MAX_BYTES);
    }
    rewind(f);
    *root = json_loadf(f, JSON_REJECT_DUPLICATES, &err);
    fclose(f);
    if (!*root)
        return gpufl__set_error(GPUFL_ECONFIG, "config file '%s' line %d column %d: %s", path,
                                err.line, err.column, err.text);
    if (!json_is_object(*root)) {
        json_decref(*root);
        *root = NULL;
        return gpufl__set_error(GPUFL_ECONFIG,
                                "config file '%s' must hold one JSON object of option names", path);
    }
    return 0;
}
