// SPDX-License-Identifier: Apache-2.0
/*
 * probe.h - the NVIDIA backend's probe (core/backend.h): NVML, CUPTI and
 * libcuda opened through the session's own loaders and closed again.
 */
#ifndef GPUFL_NVIDIA_PROBE_H
#define GPUFL_NVIDIA_PROBE_H

#include "core/backend.h"

void gpufl__nvidia_probe(gpufl_probe_t *probe);

#endif
