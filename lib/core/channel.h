// SPDX-License-Identifier: Apache-2.0
/*
 * channel.h - the channels rows go to: one session file each (device, scope,
 * system). Apart from sink.h so that a header that only names a channel
 * (ops.h, read by C++ test programs too) needs none of the sinks' atomics.
 */
#ifndef GPUFL_CORE_CHANNEL_H
#define GPUFL_CORE_CHANNEL_H

enum gpufl__file_id {
    GPUFL_FILE_DEVICE = 0,
    GPUFL_FILE_SCOPE = 1,
    GPUFL_FILE_SYSTEM = 2,
    GPUFL_FILE_COUNT
};

/* "device", "scope" or "system". */
const char *gpufl__channel_name(enum gpufl__file_id channel);

#endif
