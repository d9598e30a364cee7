// SPDX-License-Identifier: Apache-2.0
/*
 * demangle.h - C++ symbol names made readable ("_Z6kernelPfi" ->
 * "kernel(float*, int)") for kernel names.
 *
 * The C++ runtime's own demangler (__cxa_demangle in libstdc++) is used,
 * found at run time: in the process already (CUDA programs are C++), else
 * libstdc++.so.6 loaded on first use. gpufl itself links no C++ runtime.
 * Without one, names stay mangled and available() says why.
 */
#ifndef GPUFL_UTIL_DEMANGLE_H
#define GPUFL_UTIL_DEMANGLE_H

#include <stddef.h>

/* The demangled form of mangled, whole (template-heavy kernel names run to
 * thousands of bytes), in memory the caller frees; NULL when mangled is not
 * a mangled C++ name or no demangler is available. Thread-safe. */
char *gpufl__demangle(const char *mangled);

/* 1 when a demangler is available, else 0 with a one-line reason in why. */
int gpufl__demangle_available(char *why, size_t why_size);

#endif
