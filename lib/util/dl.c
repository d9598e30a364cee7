// SPDX-License-Identifier: Apache-2.0
/*
 * dl.c - dlopen/dlsym with ordered library names, versioned symbol names and
 * one-line reasons. Shared by every vendor module (NVML, libcuda, CUPTI) and
 * by the stack symbolizer (libdw).
 */
#include "util/dl.h"

#include "util/error.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Libraries are never unmapped (RTLD_NODELETE): they start threads
 * and register exit handlers of their own, and CUPTI must outlive any
 * callback it may still deliver. dlclose then only drops our reference; a
 * later open finds the library already loaded. */

/* A resolved address is stored into the caller's function pointer: POSIX
 * guarantees both have the same size and representation. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function and object pointers differ");

static void copy_text(char *out, size_t size, const char *text) {
    if (size == 0) return;
    snprintf(out, size, "%s", text ? text : "");
}

/* dlerror() says "No such file" both when a path does not exist and when a
 * soname is on no search path: that is "not found", anything else is a file
 * that exists and failed to load (wrong architecture, missing dependency). */
static int is_not_found(const char *name, const char *error) {
    if (strchr(name, '/') != NULL) return access(name, F_OK) != 0;
    return error == NULL || strstr(error, "No such file") != NULL;
}

int gpufl__dl_open(gpufl__dl_t *dl, const char *override_path, const char *const *names,
                   const char *hint, char *why, size_t why_size) {
    static const char *const none[] = {NULL};
    const char *single[2] = {override_path, NULL};
    const char *const *list = (override_path && override_path[0]) ? single : (names ? names : none);
    char first_error[512] = "";
    const char *first_name = list[0] ? list[0] : "(no library name)";
    int first_not_found = 1;

    memset(dl, 0, sizeof *dl);
    for (size_t i = 0; list[i] != NULL; i++) {
        dlerror();
        void *handle = dlopen(list[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (handle != NULL) {
            dl->handle = handle;
            copy_text(dl->name, sizeof dl->name, list[i]);
            return 0;
        }
        const char *error = dlerror();
        /* Report the first name that exists but failed, else the first name. */
        int not_found = is_not_found(list[i], error);
        if (i == 0 || (first_not_found && !not_found)) {
            first_name = list[i];
            first_not_found = not_found;
            copy_text(first_error, sizeof first_error, error ? error : "unknown dlopen error");
        }
    }
    if (first_not_found)
        snprintf(why, why_size, "%s not found%s%s", first_name, hint ? ": " : "", hint ? hint : "");
    else
        snprintf(why, why_size, "cannot load %s: %s", first_name, first_error);
    return GPUFL_ENOTSUP;
}

/* "name (or older, oldest)": the names a symbol was looked up by. */
static void format_names(char *out, size_t size, const gpufl__dl_sym_t *sym) {
    size_t n = (size_t)snprintf(out, size, "%s", sym->names[0]);
    for (int v = 1; v < GPUFL_DL_VARIANTS && sym->names[v] && n < size; v++)
        n += (size_t)snprintf(out + n, size - n, "%s%s", v == 1 ? " (or " : ", ", sym->names[v]);
    if (sym->names[1] && n < size) snprintf(out + n, size - n, ")");
}

/* Appends a symbol to dl->missing; once full, the list ends with "...". */
static void note_missing(gpufl__dl_t *dl, const gpufl__dl_sym_t *sym) {
    char entry[256];
    size_t length = strlen(dl->missing);
    dl->missing_count++;
    if (length >= 3 && strcmp(dl->missing + length - 3, "...") == 0) return;
    format_names(entry, sizeof entry, sym);
    if (length + 2 + strlen(entry) + 5 <= sizeof dl->missing)
        snprintf(dl->missing + length, sizeof dl->missing - length, "%s%s", length ? ", " : "",
                 entry);
    else
        snprintf(dl->missing + length, sizeof dl->missing - length, "%s...", length ? ", " : "");
}

int gpufl__dl_resolve(gpufl__dl_t *dl, gpufl__dl_sym_t *syms, size_t count, char *why,
                      size_t why_size) {
    int status = 0;
    for (size_t i = 0; i < count; i++) {
        gpufl__dl_sym_t *sym = &syms[i];
        void *address = NULL;
        sym->found = -1;
        for (int v = 0; v < GPUFL_DL_VARIANTS && sym->names[v] && dl->handle; v++) {
            address = dlsym(dl->handle, sym->names[v]);
            if (address != NULL) {
                sym->found = v;
                break;
            }
        }
        memcpy(sym->slot, &address, sizeof address);
        if (address != NULL) continue;
        if (sym->required && status == 0) {
            char names[256];
            format_names(names, sizeof names, sym);
            snprintf(why, why_size, "%s lacks %s", dl->name[0] ? dl->name : "the library", names);
            status = GPUFL_ENOTSUP;
        } else if (!sym->required) {
            note_missing(dl, sym);
        }
    }
    return status;
}

void gpufl__dl_close(gpufl__dl_t *dl) {
    if (dl == NULL) return;
    if (dl->handle != NULL) dlclose(dl->handle);
    memset(dl, 0, sizeof *dl);
}
