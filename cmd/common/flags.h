// SPDX-License-Identifier: Apache-2.0
/*
 * flags.h - what the executables' flag handling shares (gpufl, gpufl-monitor, gpufl-server,
 * gpufl-agent): the one-line error a bad flag gets, integers in a range, ADDR:PORT, and an API
 * key read from a file. Each message starts with the tool's name.
 */
#ifndef GPUFL_CMD_FLAGS_H
#define GPUFL_CMD_FLAGS_H

#include <stddef.h>

/* Prints "<tool>: bad <what> '<value>': <why> (see --help)"; returns -1. */
int cmd_bad(const char *tool, const char *what, const char *value, const char *why);

/* text as an integer lo..hi into *out; 0, or -1 after cmd_bad. */
int cmd_parse_int(const char *tool, const char *what, const char *text, long lo, long hi, int *out);

/* ADDR:PORT ([v6]:PORT too) into host (host_size bytes) and *port; "none" (when allowed) leaves
 * host empty. 0, or -1 after cmd_bad. */
int cmd_parse_listen(const char *tool, const char *text, int allow_none, char *host,
                     size_t host_size, int *port);

/* The first line of the file at path, trimmed, into key: an API key, never echoed. 0, or -1
 * after a one-line message (unreadable, empty). */
int cmd_read_key(const char *tool, const char *path, char *key, size_t size);

#endif
