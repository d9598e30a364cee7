// SPDX-License-Identifier: Apache-2.0
/*
 * interp.c - the one interpreter a process may register (see interp.h and
 * gpufl_interp.h).
 */
#include "core/interp.h"

#include "util/error.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static gpufl__interp_reg_t slot;
static _Atomic(const gpufl__interp_reg_t *) registered;
static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct code_range {
    uintptr_t addr, lo, hi;
} code_range_t;

static int find_segment(struct dl_phdr_info *info, size_t size, void *data) {
    code_range_t *r = data;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X)) continue;
        uintptr_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
        if (r->addr >= lo && r->addr < hi) {
            r->lo = lo;
            r->hi = hi;
            return 1;
        }
    }
    return 0;
}

int gpufl__exec_segment(uintptr_t addr, uintptr_t *lo, uintptr_t *hi) {
    code_range_t r = {addr, 0, 0};
    if (!dl_iterate_phdr(find_segment, &r)) return 0;
    *lo = r.lo;
    *hi = r.hi;
    return 1;
}

int gpufl_interp_register(const gpufl_interp_t *interp) {
    if (interp == NULL || interp->size < sizeof *interp || interp->language == NULL ||
        interp->native_code == NULL || interp->walk == NULL || interp->describe == NULL)
        return gpufl__set_error(GPUFL_EINVAL, "gpufl_interp_register: a field is NULL or size "
                                              "is too small");
    uintptr_t lo, hi;
    if (!gpufl__exec_segment((uintptr_t)interp->native_code, &lo, &hi))
        return gpufl__set_error(GPUFL_EINVAL,
                                "gpufl_interp_register: native_code %p is in no "
                                "loaded object's code",
                                interp->native_code);
    pthread_mutex_lock(&register_lock);
    int rc = 0;
    const gpufl__interp_reg_t *now = atomic_load_explicit(&registered, memory_order_acquire);
    if (now == NULL) {
        memcpy(&slot.api, interp, sizeof slot.api);
        slot.api.size = sizeof slot.api;
        slot.code_lo = lo;
        slot.code_hi = hi;
        atomic_store_explicit(&registered, &slot, memory_order_release);
    } else if (now->api.walk != interp->walk || now->api.describe != interp->describe) {
        rc = gpufl__set_error(GPUFL_EALREADY,
                              "gpufl_interp_register: %s frames are already "
                              "provided by another registration",
                              now->api.language);
    }
    pthread_mutex_unlock(&register_lock);
    return rc;
}

static atomic_int capturing; /* live stack tables (sessions capturing stacks) */

int gpufl_interp_capturing(void) {
    return atomic_load_explicit(&capturing, memory_order_relaxed) > 0;
}

void gpufl__interp_capturing(int delta) { atomic_fetch_add(&capturing, delta); }

void gpufl__interp_after_fork_child(void) { atomic_store(&capturing, 0); }

const gpufl__interp_reg_t *gpufl__interp_get(void) {
    return atomic_load_explicit(&registered, memory_order_acquire);
}
