// SPDX-License-Identifier: Apache-2.0
/*
 * store_tables.c - the typed tables gpufl-server keeps beside the lines (docs/log-format.md):
 * which record type fills each, which log column each table column is read from (by name), and
 * the indexes the query API needs. Adding a table or a column is an entry here; the engines
 * create and grow the tables from this list.
 */
#include "store.h"

#include <string.h>

#define COL(n, t)                                                                                  \
    { n, GPUFL__COL_##t, NULL, 0 }
#define COL_FROM(n, t, f, d)                                                                       \
    { n, GPUFL__COL_##t, f, d }
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
/* A table one record type of the same name fills. */
#define ALONE(table, time)                                                                         \
    { #table, #table, NULL, time, table##_columns, N_OF(table##_columns), table##_indexes }

/* kernel, copy, memset and sync rows in one table: the timeline and the kernels-per-name views
 * read them together. A type leaves the columns it lacks NULL. name is the demangled kernel
 * name, mangled the linker's: both dict ids in the log, strings here. */
static const gpufl__column_t activity_columns[] = {
    COL("start_ns", INT),
    COL("end_ns", INT),
    COL("device", INT),
    COL("context", INT),
    COL("stream", INT),
    COL("correlation", INT),
    COL_FROM("name", TEXT, "demangled", 1),
    COL_FROM("mangled", TEXT, "name", 1),
    COL("grid_x", INT),
    COL("grid_y", INT),
    COL("grid_z", INT),
    COL("block_x", INT),
    COL("block_y", INT),
    COL("block_z", INT),
    COL("registers", INT),
    COL("static_smem_bytes", INT),
    COL("dynamic_smem_bytes", INT),
    COL("local_bytes_per_thread", INT),
    COL("graph_id", INT),
    COL("graph_node", INT),
    COL("config", INT),
    COL("external_kind", INT),
    COL("external_id", TEXT), /* may pass 2^63: written as a string then */
    COL("launch_ns", INT),
    COL("tid", INT),
    COL("stack", INT),
    COL("scope", INT),
    COL("bytes", INT),
    COL("copy_kind", INT),
    COL("src_kind", INT),
    COL("dst_kind", INT),
    COL("async", INT),
    COL("memory_kind", INT),
    COL("sync_type", INT),
    COL("event", INT),
};
static const char *const activity_indexes[] = {
    "workspace_id, session_id, start_ns",
    "workspace_id, session_id, name",
    NULL,
};
/* An entry of a table several record types share: its kind is the record type. */
#define SHARED(table, type, time, prefix)                                                          \
    { table, type, type, time, prefix##_columns, N_OF(prefix##_columns), prefix##_indexes }
static const gpufl__table_t activity_kernel = SHARED("activity", "kernel", "start_ns", activity);
static const gpufl__table_t activity_copy = SHARED("activity", "copy", "start_ns", activity);
static const gpufl__table_t activity_memset = SHARED("activity", "memset", "start_ns", activity);
static const gpufl__table_t activity_sync = SHARED("activity", "sync", "start_ns", activity);

/* Every gpu_sample column: the device series and the fleet's latest readings. */
static const gpufl__column_t gpu_sample_columns[] = {
    COL("ts_ns", INT),
    COL("device", INT),
    COL("gpu_util_pct", INT),
    COL("mem_util_pct", INT),
    COL("mem_used_bytes", INT),
    COL("mem_free_bytes", INT),
    COL("mem_total_bytes", INT),
    COL("temp_gpu_c", INT),
    COL("temp_mem_c", INT),
    COL("power_mw", INT),
    COL("power_limit_mw", INT),
    COL("energy_mj", INT),
    COL("clock_sm_mhz", INT),
    COL("clock_gfx_mhz", INT),
    COL("clock_mem_mhz", INT),
    COL("fan_pct", INT),
    COL("pcie_tx_bytes_per_s", INT),
    COL("pcie_rx_bytes_per_s", INT),
    COL("throttle_reasons", INT),
    COL("ecc_sbe_volatile", INT),
    COL("ecc_dbe_volatile", INT),
    COL("nvlink_tx_bytes_per_s", INT),
    COL("nvlink_rx_bytes_per_s", INT),
    COL("sm_active_pct", REAL),
    COL("sm_occupancy_pct", REAL),
    COL("tensor_active_pct", REAL),
    COL("dram_bw_util_pct", REAL),
};
static const char *const gpu_sample_indexes[] = {
    "workspace_id, session_id, ts_ns",
    "workspace_id, session_id, device, ts_ns",
    NULL,
};
static const gpufl__table_t gpu_sample = ALONE(gpu_sample, "ts_ns");

static const gpufl__column_t host_sample_columns[] = {
    COL("ts_ns", INT),
    COL("cpu_pct", REAL),
    COL("proc_cpu_pct", REAL),
    COL("mem_used_bytes", INT),
    COL("mem_total_bytes", INT),
    COL("proc_rss_bytes", INT),
    COL("cg_mem_used_bytes", INT),
    COL("cg_mem_limit_bytes", INT),
    COL("cg_cpu_pct", REAL),
    COL("cg_cpu_limit_cores", REAL),
};
static const char *const host_sample_indexes[] = {
    "workspace_id, session_id, ts_ns",
    NULL,
};
static const gpufl__table_t host_sample = ALONE(host_sample, "ts_ns");

/* scope_begin and scope_end rows: the scope tree and the timeline's CPU lanes. An end row
 * has only ts_ns, tid, id and implicit; its name is its begin's (same id). */
static const gpufl__column_t scope_event_columns[] = {
    COL("ts_ns", INT),
    COL("tid", INT),
    COL("id", INT),
    COL("parent", INT),
    COL("depth", INT),
    COL_FROM("name", TEXT, "name", 1),
    COL_FROM("path", TEXT, "path", 1),
    COL_FROM("tag", TEXT, "tag", 1),
    COL("repeat", INT),
    COL("warmup", INT),
    COL("implicit", INT),
};
static const char *const scope_event_indexes[] = {
    "workspace_id, session_id, ts_ns",
    "workspace_id, session_id, name",
    "workspace_id, session_id, id",
    NULL,
};
static const gpufl__table_t scope_begin =
    SHARED("scope_event", "scope_begin", "ts_ns", scope_event);
static const gpufl__table_t scope_end = SHARED("scope_event", "scope_end", "ts_ns", scope_event);

const gpufl__table_t *const gpufl__store_tables[] = {
    &activity_kernel, &activity_copy, &activity_memset, &activity_sync,
    &gpu_sample,      &host_sample,   &scope_begin,     &scope_end,
};
const size_t gpufl__store_n_tables = N_OF(gpufl__store_tables);

int gpufl__store_table_known(const gpufl__table_t *t) {
    for (size_t i = 0; i < gpufl__store_n_tables; i++)
        if (gpufl__store_tables[i] == t) return 1;
    return 0;
}

size_t gpufl__store_table_first(size_t i) {
    for (size_t j = 0; j < i; j++)
        if (strcmp(gpufl__store_tables[j]->name, gpufl__store_tables[i]->name) == 0) return j;
    return i;
}

int gpufl__store_table_time_index(const gpufl__table_t *t) {
    for (size_t c = 0; c < t->n_columns; c++)
        if (strcmp(t->columns[c].name, t->time_column) == 0) return (int)c;
    return -1;
}
