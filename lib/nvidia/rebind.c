// SPDX-License-Identifier: Apache-2.0
/*
 * rebind.c - rewrites a loaded library's import slots (GOT entries) for one
 * symbol; see rebind.h. The library is found with dladdr, its program
 * headers with dl_iterate_phdr; the dynamic section gives the symbol and
 * string tables and the two relocation tables (PLT and data) whose entries
 * name imported symbols.
 */
#include "nvidia/rebind.h"

#include "util/error.h"
#include "gpufl/gpufl.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if __SIZEOF_POINTER__ == 8
#define REL_SYM(info) ELF64_R_SYM(info)
#else
#define REL_SYM(info) ELF32_R_SYM(info)
#endif

typedef struct {
    uintptr_t inside;      /* an address in the library looked for */
    uintptr_t bias;        /* its load bias (dlpi_addr) */
    const ElfW(Dyn) * dyn; /* its dynamic section, once found */
    uintptr_t relro, relro_end;
} target_t;

static int find_object(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    target_t *t = arg;
    int holds = 0;
    const ElfW(Dyn) *dyn = NULL;
    uintptr_t relro = 0, relro_end = 0;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && t->inside >= start && t->inside - start < ph->p_memsz)
            holds = 1;
        else if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)start;
        else if (ph->p_type == PT_GNU_RELRO)
            relro = start, relro_end = start + ph->p_memsz;
    }
    if (!holds) return 0;
    t->bias = info->dlpi_addr;
    t->dyn = dyn;
    t->relro = relro;
    t->relro_end = relro_end;
    return 1;
}

/* The dynamic linker relocates the table addresses of the dynamic section
 * in place on most architectures, and leaves them as link-time addresses
 * where that section is read-only: an address below the bias is the latter. */
static uintptr_t table(const target_t *t, ElfW(Addr) value) {
    return value < t->bias ? t->bias + value : value;
}

/* Points one slot at replacement. The dynamic linker made read-only only
 * the pages of RELRO below its end rounded down to a page (glibc's
 * _dl_protect_relro): a slot there is opened for the write and closed
 * again. The last, partial page shares the writable data that follows
 * (where pages are larger than the linker's alignment: 64 KiB pages on
 * aarch64) and stays writable; closing it would fault the library's next
 * write to its data. */
static int write_slot(const target_t *t, void **slot, void *replacement, char *why,
                      size_t why_size) {
    uintptr_t at = (uintptr_t)slot;
    uintptr_t page_mask = ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
    uintptr_t page = at & page_mask;
    int read_only = page >= (t->relro & page_mask) && page < (t->relro_end & page_mask);
    size_t span = (at + sizeof *slot) - page;
    if (read_only && mprotect((void *)page, span, PROT_READ | PROT_WRITE) != 0) {
        snprintf(why, why_size, "cannot make the import slot writable (mprotect refused)");
        return GPUFL_ENOTSUP;
    }
    __atomic_store_n(slot, replacement, __ATOMIC_RELEASE);
    if (read_only) mprotect((void *)page, span, PROT_READ);
    return 0;
}

int gpufl__rebind_import(const void *inside, const char *symbol, void *replacement, char *why,
                         size_t why_size) {
    target_t t = {.inside = (uintptr_t)inside};
    Dl_info info;
    if (inside == NULL || symbol == NULL || dladdr(inside, &info) == 0 ||
        dl_iterate_phdr(find_object, &t) == 0) {
        snprintf(why, why_size, "the address is in no library the dynamic linker loaded");
        return GPUFL_EINVAL;
    }
    if (t.dyn == NULL) {
        snprintf(why, why_size, "%s has no dynamic section", info.dli_fname);
        return GPUFL_EFORMAT;
    }
    uintptr_t symtab = 0, strtab = 0, jmprel = 0, rela = 0;
    size_t jmprel_size = 0, rela_size = 0, rela_ent = sizeof(ElfW(Rela));
    ElfW(Sxword) plt_kind = DT_RELA;
    for (const ElfW(Dyn) *d = t.dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = table(&t, d->d_un.d_ptr); break;
        case DT_STRTAB: strtab = table(&t, d->d_un.d_ptr); break;
        case DT_JMPREL: jmprel = table(&t, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: jmprel_size = d->d_un.d_val; break;
        case DT_PLTREL: plt_kind = (ElfW(Sxword))d->d_un.d_val; break;
        case DT_RELA: rela = table(&t, d->d_un.d_ptr); break;
        case DT_RELASZ: rela_size = d->d_un.d_val; break;
        case DT_RELAENT: rela_ent = d->d_un.d_val; break;
        default: break;
        }
    }
    if (symtab == 0 || strtab == 0 || plt_kind != DT_RELA || rela_ent != sizeof(ElfW(Rela))) {
        snprintf(why, why_size, "%s: dynamic section without RELA relocations", info.dli_fname);
        return GPUFL_EFORMAT;
    }
    const ElfW(Sym) *syms = (const ElfW(Sym) *)symtab;
    const char *names = (const char *)strtab;
    const struct {
        uintptr_t at;
        size_t size;
    } tables[] = {{jmprel, jmprel_size}, {rela, rela_size}};
    int rewritten = 0;
    for (size_t k = 0; k < sizeof tables / sizeof tables[0]; k++) {
        const ElfW(Rela) *r = (const ElfW(Rela) *)tables[k].at;
        for (size_t i = 0; r != NULL && i < tables[k].size / sizeof *r; i++) {
            size_t s = REL_SYM(r[i].r_info);
            if (s == 0 || strcmp(names + syms[s].st_name, symbol) != 0) continue;
            if (syms[s].st_shndx != SHN_UNDEF) continue; /* its own definition, not an import */
            void **slot = (void **)(t.bias + r[i].r_offset);
            int rc = write_slot(&t, slot, replacement, why, why_size);
            if (rc != 0) return rc;
            rewritten++;
        }
    }
    return rewritten;
}
