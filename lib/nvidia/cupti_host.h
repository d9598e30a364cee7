// SPDX-License-Identifier: Apache-2.0
/*
 * cupti_host.h - the few declarations gpufl needs from CUPTI's profiler host
 * API (cupti_profiler_host.h, CUDA 13.0), which is a C++ header
 * (it includes <string>): the host object that turns metric names into a
 * configuration image and evaluates decoded counter data. Layouts copied
 * field for field from that header; each struct begins with its own size.
 * The fake libcupti declares its side with this header too.
 */
#ifndef GPUFL_NVIDIA_CUPTI_HOST_H
#define GPUFL_NVIDIA_CUPTI_HOST_H

#include <cupti_result.h>

#include <stddef.h>
#include <stdint.h>

#define GPUFL_HOST_STRUCT_SIZE(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))

typedef struct gpufl__host_object gpufl__host_object_t; /* CUpti_Profiler_Host_Object */

enum { GPUFL_HOST_RANGE_PROFILER = 0 }; /* CUPTI_PROFILER_TYPE_RANGE_PROFILER */

typedef struct gpufl__host_init_params { /* CUpti_Profiler_Host_Initialize_Params */
    size_t structSize;
    void *pPriv;
    int profilerType; /* CUpti_ProfilerType, an enum */
    const char *pChipName;
    const uint8_t *pCounterAvailabilityImage;
    gpufl__host_object_t *pHostObject;
} gpufl__host_init_params_t;

typedef struct gpufl__host_deinit_params { /* CUpti_Profiler_Host_Deinitialize_Params */
    size_t structSize;
    void *pPriv;
    gpufl__host_object_t *pHostObject;
} gpufl__host_deinit_params_t;

typedef struct gpufl__host_add_metrics_params { /* CUpti_Profiler_Host_ConfigAddMetrics_Params */
    size_t structSize;
    void *pPriv;
    gpufl__host_object_t *pHostObject;
    const char **ppMetricNames;
    size_t numMetrics;
} gpufl__host_add_metrics_params_t;

typedef struct gpufl__host_image_size_params { /* ..._GetConfigImageSize_Params */
    size_t structSize;
    void *pPriv;
    gpufl__host_object_t *pHostObject;
    size_t configImageSize;
} gpufl__host_image_size_params_t;

typedef struct gpufl__host_image_params { /* ..._GetConfigImage_Params */
    size_t structSize;
    void *pPriv;
    gpufl__host_object_t *pHostObject;
    size_t configImageSize;
    uint8_t *pConfigImage;
} gpufl__host_image_params_t;

typedef struct gpufl__host_passes_params { /* ..._GetNumOfPasses_Params */
    size_t structSize;
    void *pPriv;
    size_t configImageSize;
    uint8_t *pConfigImage;
    size_t numOfPasses;
} gpufl__host_passes_params_t;

typedef struct gpufl__host_evaluate_params { /* ..._EvaluateToGpuValues_Params */
    size_t structSize;
    void *pPriv;
    gpufl__host_object_t *pHostObject;
    const uint8_t *pCounterDataImage;
    size_t counterDataImageSize;
    size_t rangeIndex;
    const char **ppMetricNames;
    size_t numMetrics;
    double *pMetricValues;
} gpufl__host_evaluate_params_t;

#endif
