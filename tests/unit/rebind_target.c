// SPDX-License-Identifier: Apache-2.0
/*
 * rebind_target.c - a shared library for test_rebind: it imports strdup
 * from libc like libcupti does, and copies whatever it is given.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <string.h>

char *rebind_target_copy(const char *s);

char *rebind_target_copy(const char *s) { return strdup(s); }
