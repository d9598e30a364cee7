// SPDX-License-Identifier: Apache-2.0
/*
 * config_file.h - reads the JSON config file (config_file / GPUFL_CONFIG_FILE).
 *
 * The file is one JSON object whose keys are InitOptions field names. jansson
 * does the parsing; this module reports errors with file, line and column.
 */
#ifndef GPUFL_CORE_CONFIG_FILE_H
#define GPUFL_CORE_CONFIG_FILE_H

#include <jansson.h>

/* Loads path into *root (a JSON object; caller json_decref()s it). Returns 0
 * or GPUFL_ECONFIG with a message naming the file, line and column. */
int gpufl__config_file_load(const char *path, json_t **root);

#endif
