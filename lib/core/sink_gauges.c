// SPDX-License-Identifier: Apache-2.0
/*
 * sink_gauges.c - latest-value gauges: for each gauge table of the wire
 * format (host_sample; gpu_sample per device) the newest value of each
 * column, what a /metrics endpoint serves.
 *
 * One seqlock per instance: the collector thread (the one writer) makes the
 * sequence odd, stores the cells, makes it even again; a reader retries
 * while the sequence is odd or moved. The writer never waits for a reader.
 * Cells are atomics (release stores, acquire loads), so a read that overlaps
 * a write is detected, not torn, and needs no fence.
 */
#include "core/sink.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

#define GAUGE_TABLES_MAX 8
#define READ_TRIES       1000

typedef struct slot {
    atomic_uint_fast64_t seq; /* odd while written; updates = seq / 2 */
    atomic_uint_fast64_t cells[GPUFL_BATCH_MAX_COLS];
} slot_t;

struct gpufl__gauge_sink {
    const gpufl__wire_table_t *tables[GAUGE_TABLES_MAX];
    int ntables;
    slot_t slots[GAUGE_TABLES_MAX][GPUFL_GAUGE_INSTANCES_MAX];
    atomic_uint_fast64_t ignored;
};

int gpufl__gauge_sink_create(gpufl__gauge_sink_t **out) {
    gpufl__gauge_sink_t *g = calloc(1, sizeof *g);
    *out = NULL;
    if (!g) return gpufl__set_error(GPUFL_ENOMEM, "out of memory for the gauges");
    for (int i = 0; gpufl__wire_tables[i] && g->ntables < GAUGE_TABLES_MAX; i++)
        if (gpufl__wire_tables[i]->gauge_key != GPUFL_WIRE_NOT_GAUGE)
            g->tables[g->ntables++] = gpufl__wire_tables[i];
    *out = g;
    return 0;
}

void gpufl__gauge_sink_destroy(gpufl__gauge_sink_t *g) { free(g); }

static int table_index(const gpufl__gauge_sink_t *g, const gpufl__wire_table_t *t) {
    for (int i = 0; i < g->ntables; i++)
        if (g->tables[i] == t) return i;
    return -1;
}

static void store_row(slot_t *s, const gpufl__cell_t *row, int ncols) {
    uint_fast64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
    for (int c = 0; c < ncols; c++) {
        uint64_t bits;
        memcpy(&bits, &row[c], sizeof bits);
        /* release: a reader that sees this cell sees the odd sequence too */
        atomic_store_explicit(&s->cells[c], bits, memory_order_release);
    }
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}

static int gauges_batch(void *self, enum gpufl__file_id channel, const gpufl__batch_t *b,
                        const gpufl__intern_t *dict) {
    gpufl__gauge_sink_t *g = self;
    (void)channel;
    (void)dict;
    int t = b->table ? table_index(g, b->table) : -1;
    if (t < 0) return 0;
    int key = b->table->gauge_key;
    uint32_t done = 0; /* instances already given their newest row */
    for (size_t r = b->rows; r-- > 0;) {
        const gpufl__cell_t *row = gpufl__batch_at(b, r);
        int64_t instance = key >= 0 ? row[key].i : 0;
        if (instance < 0 || instance >= GPUFL_GAUGE_INSTANCES_MAX) {
            atomic_fetch_add_explicit(&g->ignored, 1, memory_order_relaxed);
            continue;
        }
        if (done & (1u << instance)) continue;
        done |= 1u << instance;
        store_row(&g->slots[t][instance], row, b->ncols);
    }
    return 0;
}

const gpufl__sink_ops_t gpufl__gauge_sink_ops = {
    .name = "gauges",
    .batch = gauges_batch,
};

int gpufl__gauge_sink_read(gpufl__gauge_sink_t *g, const gpufl__wire_table_t *table, int instance,
                           gpufl__cell_t *cells, uint64_t *updates) {
    int t = table_index(g, table);
    if (t < 0 || instance < 0 || instance >= GPUFL_GAUGE_INSTANCES_MAX ||
        (table->gauge_key == GPUFL_WIRE_GAUGE_ONE && instance != 0))
        return gpufl__set_error(GPUFL_ENOTFOUND, "no gauge %s[%d]", table ? table->type : "?",
                                instance);
    slot_t *s = &g->slots[t][instance];
    for (int tries = 0; tries < READ_TRIES; tries++) {
        uint_fast64_t before = atomic_load_explicit(&s->seq, memory_order_acquire);
        if (before == 0)
            return gpufl__set_error(GPUFL_ENOTFOUND, "no %s row yet for instance %d", table->type,
                                    instance);
        if (before & 1) continue;
        for (int c = 0; c < table->ncols; c++) {
            /* acquire: the sequence load below cannot move above the cells */
            uint64_t bits = atomic_load_explicit(&s->cells[c], memory_order_acquire);
            memcpy(&cells[c], &bits, sizeof bits);
        }
        if (atomic_load_explicit(&s->seq, memory_order_relaxed) != before) continue;
        if (updates) *updates = before / 2;
        return 0;
    }
    return gpufl__set_error(GPUFL_EIO, "the %s gauge kept changing while read", table->type);
}

uint64_t gpufl__gauge_sink_ignored(gpufl__gauge_sink_t *g) {
    return atomic_load_explicit(&g->ignored, memory_order_relaxed);
}
