// SPDX-License-Identifier: Apache-2.0
/*
 * sass_log.h - the SASS of sampled functions in the session log: cubins
 * kept from module load, disassembled by nvdisasm (sass.h) on a worker
 * pool of this module (the functions of one module per nvdisasm run, three
 * runs at once), and written by the collector as one `sass` record
 * per (module, function) the first time PC samples name it
 * (docs/log-format.md, "`sass`").
 *
 * Contract
 * - add_cubin copies the image (application thread, inside the module-load
 *   callback): modules are kept by CRC, once each, up to a byte cap; what
 *   passes the cap is counted, and its functions get `sass` records with an
 *   error saying so.
 * - want, write and finish run on the collector thread; nvdisasm runs only
 *   on the workers, so a slow disassembly never holds up draining.
 * - finish waits for outstanding work up to a deadline, then cancels the
 *   runs in progress (sass.h) and writes an error record for each function
 *   not done: every function asked for gets a record.
 */
#ifndef GPUFL_NVIDIA_SASS_LOG_H
#define GPUFL_NVIDIA_SASS_LOG_H

#include "core/collector.h"

#include <stddef.h>
#include <stdint.h>

#define GPUFL_SASS_LOG_FINISH_NS (10 * 1000000000LL) /* longest wait at session end */

typedef struct gpufl__sass_log gpufl__sass_log_t;

typedef struct gpufl__sass_log_stats {
    uint64_t cubins, cubin_bytes, cubins_over_cap, records, errors;
} gpufl__sass_log_stats_t;

/* Finds nvdisasm (sass.h). Returns 0, or GPUFL_ENOTSUP with a one-line
 * reason in why (no nvdisasm); GPUFL_ENOMEM. */
int gpufl__sass_log_create(gpufl__sass_log_t **out, gpufl__collector_t *collector,
                           size_t cubin_cap_bytes, char *why, size_t why_size);
/* Stops the worker and frees. Accepts NULL. */
void gpufl__sass_log_destroy(gpufl__sass_log_t *s);

/* Application thread: keeps a copy of a module's cubin under its CRC. */
void gpufl__sass_log_add_cubin(gpufl__sass_log_t *s, uint64_t crc, const void *cubin, size_t size);
/* Any thread: the name of symbol `index` of module crc's kept cubin (the
 * functionIndex of a PC record) copied into out. Returns 0, or
 * GPUFL_ENOTFOUND (no such module kept, no named symbol there, or out too
 * small). */
int gpufl__sass_log_symbol_name(gpufl__sass_log_t *s, uint64_t crc, uint32_t index, char *out,
                                size_t size);
/* Collector: the function (mangled name, its dict id) of module crc has
 * samples; its record is made once. */
void gpufl__sass_log_want(gpufl__sass_log_t *s, uint64_t crc, const char *function,
                          uint32_t function_id);
/* Collector: writes the records that are ready. */
void gpufl__sass_log_write(gpufl__sass_log_t *s);
/* Collector, at session end: waits up to wait_ns for the worker, then
 * writes everything, with an error record for what is still waiting. */
void gpufl__sass_log_finish(gpufl__sass_log_t *s, int64_t wait_ns);
void gpufl__sass_log_stats(gpufl__sass_log_stats_t *out, gpufl__sass_log_t *s);

#endif
