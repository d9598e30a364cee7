// SPDX-License-Identifier: Apache-2.0
/*
 * model_query.c - the lookups the report, the insights and the exports call
 * on a loaded model (model.h): by id, by path, by device, by stack.
 */
#include "analysis/model_internal.h"

#include "util/error.h"

#include <stdlib.h>
#include <string.h>

const char *gpufl__model_str(const gpufl__model_t *m, int64_t id) {
    return gpufl__dict_get(&m->dict, id);
}

const gpufl__model_scope_t *gpufl__model_scope_find(const gpufl__model_t *m, int64_t id) {
    size_t idx;
    if (id <= 0 || !gpufl__idmap_get(&m->scope_index, (uint64_t)id, &idx)) return NULL;
    return &m->scopes[idx];
}

const gpufl__model_scope_path_t *gpufl__model_scope_path_find(const gpufl__model_t *m,
                                                              const char *path) {
    long k = gpufl__model_path_find(m, path, strlen(path));
    return k >= 0 ? &m->scope_paths[k] : NULL;
}

const gpufl__model_kernel_config_t *gpufl__model_config_find(const gpufl__model_t *m, int64_t id) {
    size_t idx;
    if (id <= 0 || !gpufl__idmap_get(&m->config_index, (uint64_t)id, &idx)) return NULL;
    return &m->configs[idx];
}

double gpufl__model_gpu_ns(const gpufl__model_gpu_work_t *w) {
    return w->kernel_ns + w->copy_ns + w->memset_ns;
}

const gpufl__model_kernel_config_t *gpufl__model_launch_config(const gpufl__model_t *m,
                                                               const gpufl__model_launch_t *l) {
    return l->config_index >= 0 ? &m->configs[l->config_index] : NULL;
}

const char *gpufl__model_launch_name(const gpufl__model_t *m, const gpufl__model_launch_t *l) {
    const gpufl__model_kernel_config_t *c = gpufl__model_launch_config(m, l);
    return c && *c->demangled ? c->demangled : "?";
}

const gpufl__model_gpu_t *gpufl__model_gpu_find(const gpufl__model_t *m, int64_t device) {
    size_t idx;
    if (device < 0 || !gpufl__idmap_get(&m->gpu_index, (uint64_t)device + 1, &idx)) return NULL;
    return &m->gpus[idx];
}

const gpufl__model_source_cost_t *gpufl__model_source_cost(const gpufl__model_t *m,
                                                           const char *source) {
    for (size_t i = 0; i < m->n_source_costs; i++)
        if (strcmp(m->source_costs[i].source, source) == 0) return &m->source_costs[i];
    return NULL;
}

const gpufl__model_stack_t *gpufl__model_stack_find(const gpufl__model_t *m, int64_t id) {
    size_t idx;
    if (id <= 0 || !gpufl__idmap_get(&m->stack_index, (uint64_t)id, &idx)) return NULL;
    return &m->stacks[idx];
}

const gpufl__model_frame_t *gpufl__model_stack_frame(const gpufl__model_t *m,
                                                     const gpufl__model_stack_t *s, size_t i) {
    if (s == NULL || i >= s->depth) return NULL;
    size_t idx = m->stack_frames[s->first + i];
    return idx < m->n_frames ? &m->frames[idx] : NULL;
}

const gpufl__model_frame_t *gpufl__model_stack_site(const gpufl__model_t *m, int64_t stack_id) {
    const gpufl__model_stack_t *s = gpufl__model_stack_find(m, stack_id);
    const gpufl__model_frame_t *first_user = NULL;
    for (size_t i = 0; s && i < s->depth; i++) {
        const gpufl__model_frame_t *f = gpufl__model_stack_frame(m, s, i);
        if (f == NULL || !f->user) continue;
        if (f->line > 0 && *f->file) return f;
        if (first_user == NULL) first_user = f;
    }
    return first_user;
}
