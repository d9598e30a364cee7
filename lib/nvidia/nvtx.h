// SPDX-License-Identifier: Apache-2.0
/*
 * nvtx.h - the NVTX source: NVTX ranges recorded as scopes while a session
 * runs an engine from Trace up (nvtx.c, docs/nvtx.md).
 */
#ifndef GPUFL_NVIDIA_NVTX_H
#define GPUFL_NVIDIA_NVTX_H

#include <gpufl/gpufl.h>

#include <stdint.h>

/* Starts recording NVTX ranges for the session starting (the Trace engine
 * runs): points NVTX_INJECTION64_PATH at this library when it is
 * unset, and warns (recording nothing) when it names another library. */
void gpufl__nvtx_start(void);
/* Stops recording: the callbacks return at once again. */
void gpufl__nvtx_stop(void);
/* The capability entry: whether NVTX ranges are recorded, and why not. */
int gpufl__nvtx_feature(int tracing, const char **why);

#endif
