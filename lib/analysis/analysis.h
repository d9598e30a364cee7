// SPDX-License-Identifier: Apache-2.0
/*
 * analysis.h - the inside of the public read API (gpufl_analysis.h): a
 * handle holds the loaded model, the report computed from it on first need,
 * the tables built from both on first use, and one string table for every
 * STRING column. analysis.c holds the handle, analysis_tables.c the tables,
 * analysis_feed.c the feeding of lines.
 */
#ifndef GPUFL_ANALYSIS_ANALYSIS_H
#define GPUFL_ANALYSIS_ANALYSIS_H

#include "analysis/model.h"
#include "analysis/report.h"

#include <gpufl/gpufl_analysis.h>

#include <pthread.h>

/* A column's name and type, as a table declares it. */
typedef struct gpufl__an_coldef {
    const char *name;
    gpufl_column_type_t type;
} gpufl__an_coldef_t;

typedef struct gpufl__an_table {
    int built;
    size_t rows, ncols;
    const gpufl__an_coldef_t *defs;
    gpufl__an_coldef_t *owned_defs; /* defs when made for this session (perf), else NULL */
    void **data;                   /* per column: int64_t[rows] or double[rows] */
} gpufl__an_table_t;

typedef struct gpufl__an_text gpufl__an_text_t; /* a rendered report, kept until close */

struct gpufl_analysis {
    pthread_mutex_t lock;
    char *dir;
    gpufl__model_t *m;
    gpufl__report_t report; /* built by gpufl__analysis_report_built() */
    int report_built;
    gpufl__an_table_t tables[GPUFL_TABLE_COUNT];

    /* Strings: id -> string (strs[0] is NULL), found by pointer first, then
     * by content (slots: ids by hash, open addressing). The strings belong
     * to the model, the report or the handle. */
    const char **strs;
    uint32_t *hashes;
    size_t n_strs, strs_alloc;
    uint32_t *slots;
    size_t n_slots;
    gpufl__idmap_t by_ptr;
    int str_failed; /* a string could not be added: the build fails */

    gpufl__an_text_t *texts;

    /* A handle being fed (analysis_feed.c); NULL for one opened from a
     * directory. m is then built from what was fed, on first need. */
    struct gpufl__analysis_feed *feed;
};

/* The id of s (0 for NULL), adding it when new. On failure sets
 * a->str_failed and returns 0. */
int64_t gpufl__analysis_str(gpufl_analysis_t *a, const char *s);

/* Builds a->report once. 0 or GPUFL_ENOMEM. */
int gpufl__analysis_report_built(gpufl_analysis_t *a);

/* Frees the model and everything built from it (tables, texts, report,
 * strings), leaving the handle as if nothing had been read. */
void gpufl__analysis_drop_model(gpufl_analysis_t *a);

/* analysis_feed.c: makes a->m current for a handle being fed (builds it from
 * the lines so far when something was fed since); nothing for a handle
 * opened from a directory. Called locked. 0, GPUFL_EINVAL (in order, before
 * the end), GPUFL_ENOMEM. */
int gpufl__analysis_feed_model(gpufl_analysis_t *a);
/* Frees a->feed; accepts a handle with none. */
void gpufl__analysis_feed_free(gpufl_analysis_t *a);

/* Builds table t (analysis_tables.c): its defs, rows and column arrays.
 * 0, GPUFL_ENOMEM. */
int gpufl__analysis_table_build(gpufl_analysis_t *a, gpufl_table_t t);
/* Frees a table's columns and zeroes it. */
void gpufl__analysis_table_free(gpufl__an_table_t *t);

#endif
