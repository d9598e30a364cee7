// SPDX-License-Identifier: Apache-2.0
/*
 * model_lost.c - what went with damaged lines: the lines themselves, with
 * the rows the reader could tell they held, and the scopes whose scope_begin
 * was in one (their scope_end survives, with no begin to join).
 *
 * A lost scope is named from what survives, in this order: the path column
 * of its own row in the damaged line (whole columns before the cut survive);
 * the path of a surviving child, less its last part; its surviving name
 * column under a parent whose path is known (or at the top level). Nothing
 * left: no path, and the report says how many had none.
 */
#include "analysis/model.h"
#include "analysis/model_internal.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

static int out_of_memory(void) {
    return gpufl__set_error(GPUFL_ENOMEM, "out of memory for damaged lines");
}

/* A cell of a surviving column, 0 when the column or the value is missing. */
static int64_t cell_or_zero(const gpufl__reader_column_t *col, size_t row) {
    return col && !col->is_null[row] ? col->values[row] : 0;
}

/* Keeps the surviving columns of a damaged line's scope_begin rows. */
static int salvage_begins(gpufl__model_t *m, const gpufl__reader_batch_t *b) {
    load_state_t *st = m->load_state;
    const gpufl__reader_column_t *id = gpufl__reader_batch_column(b, "id");
    const gpufl__reader_column_t *parent = gpufl__reader_batch_column(b, "parent");
    const gpufl__reader_column_t *name = gpufl__reader_batch_column(b, "name");
    const gpufl__reader_column_t *tag = gpufl__reader_batch_column(b, "tag");
    const gpufl__reader_column_t *path = gpufl__reader_batch_column(b, "path");
    if (!id) return 0;
    for (size_t r = 0; r < b->rows; r++) {
        if (cell_or_zero(id, r) <= 0) continue;
        int rc = gpufl__model_reserve((void **)&st->salvaged, &st->salvaged_alloc, st->n_salvaged,
                                      sizeof *st->salvaged, m->limits.max_scopes);
        if (rc) return rc < 0 ? rc : 0; /* past the cap: those stay unnamed */
        st->salvaged[st->n_salvaged++] =
            (salvaged_begin_t){cell_or_zero(id, r), cell_or_zero(parent, r), cell_or_zero(name, r),
                               cell_or_zero(tag, r), cell_or_zero(path, r)};
    }
    return 0;
}

int gpufl__model_on_damaged(void *user, const gpufl__reader_pos_t *pos,
                            const gpufl__reader_damage_t *d) {
    gpufl__model_t *m = user;
    m->damaged_lines++;
    if (pos->file == GPUFL_LOG_FILE_SCOPE) m->damaged_scope_lines++;
    if (d->type && strcmp(d->type, "scope_begin") == 0 && d->columns) {
        int rc = salvage_begins(m, d->columns);
        if (rc) return rc;
    }
    /* Kept as many as warnings are: each is one of them too. */
    int rc = gpufl__model_reserve((void **)&m->damaged, &m->damaged_alloc, m->n_damaged,
                                  sizeof *m->damaged, m->limits.max_warnings);
    if (rc) return rc < 0 ? rc : 0;
    gpufl__model_damage_t *x = &m->damaged[m->n_damaged];
    x->file = gpufl__model_pool_str(m, pos->name, strlen(pos->name));
    x->type = d->type ? gpufl__model_pool_str(m, d->type, strlen(d->type)) : NULL;
    if (!x->file || (d->type && !x->type)) return out_of_memory();
    x->line = pos->line;
    x->rows = d->rows;
    x->rows_exact = d->rows_exact;
    m->n_damaged++;
    return 0;
}

int gpufl__model_add_lost_scope(gpufl__model_t *m, const scope_end_row_t *e) {
    int rc = gpufl__model_reserve((void **)&m->lost_scopes, &m->lost_scopes_alloc, m->n_lost_scopes,
                                  sizeof *m->lost_scopes, m->limits.max_scopes);
    if (rc) return rc < 0 ? rc : 0; /* at most as many as ends were kept */
    gpufl__model_scope_t *s = &m->lost_scopes[m->n_lost_scopes++];
    memset(s, 0, sizeof *s);
    s->id = e->id;
    s->tid = e->tid;
    s->begin_ns = GPUFL_MODEL_UNKNOWN;
    s->end_ns = e->ts_ns;
    s->implicit = e->implicit != 0;
    s->lost = 1;
    s->tag = "";
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Naming                                                                   */
/* ---------------------------------------------------------------------- */

/* Sets a lost scope's path (a string that lives as long as the model) and
 * its name, the path's last part. */
static void set_path(gpufl__model_scope_t *s, const char *path) {
    const char *slash = strrchr(path, '/');
    s->path = path;
    s->name = slash ? slash + 1 : path;
}

/* A dict string, or NULL for id 0 and undefined ids (not counted as
 * undefined: these ids come from a damaged line). */
static const char *dict_or_null(const gpufl__model_t *m, int64_t id) {
    const char *str = id > 0 ? gpufl__model_str(m, id) : NULL;
    return str && *str ? str : NULL;
}

/* parent's path + "/" + name, in the model's pool; NULL when out of memory. */
static const char *join_path(gpufl__model_t *m, const char *parent, const char *name) {
    size_t pl = strlen(parent), nl = strlen(name);
    char *buf = malloc(pl + nl + 2);
    if (!buf) return NULL;
    memcpy(buf, parent, pl);
    buf[pl] = '/';
    memcpy(buf + pl + 1, name, nl + 1);
    const char *out = gpufl__model_pool_str(m, buf, pl + nl + 1);
    free(buf);
    return out;
}

/* The path of the scope with id (a surviving one, or a lost one already
 * named), NULL when unknown. */
static const char *path_of(const gpufl__model_t *m, const gpufl__idmap_t *lost, int64_t id) {
    const gpufl__model_scope_t *s = gpufl__model_scope_find(m, id);
    size_t idx;
    if (s) return s->path;
    if (id > 0 && gpufl__idmap_get(lost, (uint64_t)id, &idx)) return m->lost_scopes[idx].path;
    return NULL;
}

/* A lost scope in id order: scopes are numbered as they begin, so a
 * parent's id is smaller than its children's. */
typedef struct by_id {
    int64_t id;
    size_t index;
} by_id_t;

static int cmp_by_id(const void *a, const void *b) {
    const by_id_t *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Names from surviving name columns: at the top level the name is the path,
 * below a parent whose path is known (parents come first in id order) the
 * path is the parent's plus the name. */
static int name_from_names(gpufl__model_t *m, const gpufl__idmap_t *lost, const by_id_t *order) {
    for (size_t k = 0; k < m->n_lost_scopes; k++) {
        gpufl__model_scope_t *s = &m->lost_scopes[order[k].index];
        const char *name = dict_or_null(m, s->name_id), *parent;
        if (s->path || !name) continue;
        if (s->parent == 0) {
            set_path(s, name);
        } else if ((parent = path_of(m, lost, s->parent)) != NULL) {
            const char *path = join_path(m, parent, name);
            if (!path) return out_of_memory();
            set_path(s, path);
        }
    }
    return 0;
}

/* Names the lost parent of a child whose path is known: the child's path
 * less its last part. */
static int name_parent(gpufl__model_t *m, const gpufl__idmap_t *lost,
                       const gpufl__model_scope_t *c) {
    size_t idx;
    if (!c->path || c->parent <= 0 || !gpufl__idmap_get(lost, (uint64_t)c->parent, &idx)) return 0;
    gpufl__model_scope_t *s = &m->lost_scopes[idx];
    const char *slash = strrchr(c->path, '/');
    if (s->path || !slash || slash == c->path) return 0;
    const char *path = gpufl__model_pool_str(m, c->path, (size_t)(slash - c->path));
    if (!path) return out_of_memory();
    set_path(s, path);
    return 0;
}

/* Takes what the damaged lines kept of each lost scope's begin row; its own
 * path column, when that survived, names it. */
static int apply_salvage(gpufl__model_t *m, gpufl__idmap_t *lost, by_id_t *order) {
    load_state_t *st = m->load_state;
    gpufl__idmap_t salvaged;
    size_t idx;
    int rc = 0;
    gpufl__idmap_init(&salvaged);
    for (size_t i = 0; i < st->n_salvaged && !rc; i++)
        if (gpufl__idmap_put(&salvaged, (uint64_t)st->salvaged[i].id, i, NULL) < 0)
            rc = out_of_memory();
    for (size_t i = 0; i < m->n_lost_scopes && !rc; i++) {
        gpufl__model_scope_t *s = &m->lost_scopes[i];
        order[i] = (by_id_t){s->id, i};
        if (s->id <= 0) continue;
        if (gpufl__idmap_put(lost, (uint64_t)s->id, i, NULL) < 0) rc = out_of_memory();
        if (rc || !gpufl__idmap_get(&salvaged, (uint64_t)s->id, &idx)) continue;
        const salvaged_begin_t *b = &st->salvaged[idx];
        const char *tag = dict_or_null(m, b->tag_id), *path = dict_or_null(m, b->path_id);
        s->parent = b->parent;
        s->name_id = b->name_id;
        s->tag_id = b->tag_id;
        s->path_id = b->path_id;
        if (tag) s->tag = tag;
        if (path) set_path(s, path);
    }
    gpufl__idmap_fini(&salvaged);
    return rc;
}

int gpufl__model_name_lost_scopes(gpufl__model_t *m) {
    size_t n = m->n_lost_scopes;
    if (!n) return 0;
    gpufl__idmap_t lost;
    gpufl__idmap_init(&lost);
    by_id_t *order = malloc(n * sizeof *order);
    int rc = order ? apply_salvage(m, &lost, order) : out_of_memory();
    for (size_t i = 0; i < m->n_scopes && !rc; i++) rc = name_parent(m, &lost, &m->scopes[i]);
    for (size_t i = 0; i < n && !rc; i++) rc = name_parent(m, &lost, &m->lost_scopes[i]);
    if (!rc) {
        qsort(order, n, sizeof *order, cmp_by_id);
        rc = name_from_names(m, &lost, order);
    }
    free(order);
    gpufl__idmap_fini(&lost);
    return rc;
}

void gpufl__model_free_lost(gpufl__model_t *m) {
    free(m->lost_scopes);
    free(m->damaged);
    m->lost_scopes = NULL;
    m->damaged = NULL;
    m->n_lost_scopes = m->n_damaged = 0;
}
