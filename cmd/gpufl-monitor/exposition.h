// SPDX-License-Identifier: Apache-2.0
/*
 * exposition.h - the capped output buffer every renderer of gpufl-monitor
 * writes into, and the series table as documentation (docs/metrics.md is
 * checked against mon_metrics_doc's rows). The renderers are in readings.h.
 */
#ifndef GPUFL_MONITOR_EXPOSITION_H
#define GPUFL_MONITOR_EXPOSITION_H

#include "readings.h"

#include <stddef.h>

/* A buffer's cap when the caller set none (max == 0). */
#define MON_BUF_DEFAULT_MAX ((size_t)16 << 20)

/* Appends n bytes of s. Grows data up to max (MON_BUF_DEFAULT_MAX when 0);
 * past it appends what fits and returns -1, as it does when out of memory. */
int mon_buf_append(mon_buf_t *b, const char *s, size_t n);
/* printf into the buffer, with mon_buf_append's cap. */
int mon_buf_printf(mon_buf_t *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Frees data and empties the buffer (max kept). */
void mon_buf_free(mon_buf_t *b);

/* The column named column among cols[0..n), when present and finite; else NULL. */
const mon_value_t *mon_value_find(const mon_value_t *cols, int n, const char *column);

/* Every series of the table as Markdown table rows (name, type, unit,
 * labels, log column, DCGM twin), then the DCGM default counters gpufl
 * cannot fill, one row each with why. docs/metrics.md holds this text. */
int mon_metrics_doc(mon_buf_t *out);

#endif
