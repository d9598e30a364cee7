// SPDX-License-Identifier: Apache-2.0
/*
 * demangle.c - kernel names demangled through the C++ runtime's
 * __cxa_demangle, looked up at run time (see demangle.h).
 */
#include "util/demangle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buffer, size_t *length, int *status);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cxa_demangle_fn demangler;

static void find_demangler(void) {
    void *fn = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (fn == NULL) {
        /* Never unloaded: the pointer stays valid for the process. */
        void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);
        if (lib != NULL) fn = dlsym(lib, "__cxa_demangle");
    }
    /* An object pointer from dlsym to a function pointer: POSIX allows it. */
    memcpy(&demangler, &fn, sizeof fn);
}

int gpufl__demangle_available(char *why, size_t why_size) {
    pthread_once(&once, find_demangler);
    if (demangler != NULL) return 1;
    snprintf(why, why_size,
             "no C++ runtime with __cxa_demangle (libstdc++.so.6): names stay mangled");
    return 0;
}

char *gpufl__demangle(const char *mangled) {
    /* Itanium ABI names start with _Z; anything else is left as it is. */
    if (mangled == NULL || strncmp(mangled, "_Z", 2) != 0) return NULL;
    pthread_once(&once, find_demangler);
    if (demangler == NULL) return NULL;
    int status = -1;
    char *text = demangler(mangled, NULL, NULL, &status);
    if (status != 0) {
        free(text);
        return NULL;
    }
    return text;
}
