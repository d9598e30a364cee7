// SPDX-License-Identifier: Apache-2.0
// demo_args.h - the command line the two demos share (demo.cpp and
// demo_gpu.cu): --log-path DIR, --steps N, --help.
#pragma once

#include <gpufl/gpufl.hpp>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// Reads argv into opts.log_path and *steps. Returns -1 to go on, else the
// exit code: 0 after --help (usage printed), 2 for a bad argument.
inline int demo_parse_args(int argc, char **argv, const char *program, const char *usage,
                           gpufl::InitOptions &opts, int *steps) {
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
            std::fputs(usage, stdout);
            return 0;
        }
        bool has_value = i + 1 < argc;
        if (!std::strcmp(argv[i], "--log-path") && has_value) {
            opts.log_path = argv[++i];
        } else if (!std::strcmp(argv[i], "--steps") && has_value) {
            const char *text = argv[++i];
            char *end;
            errno = 0;
            long n = std::strtol(text, &end, 10);
            if (end == text || *end || errno || n < 0 || n > INT_MAX) {
                std::fprintf(stderr, "%s: --steps takes a whole number >= 0, not '%s'\n", program,
                             text);
                return 2;
            }
            *steps = static_cast<int>(n);
        } else {
            bool known = !std::strcmp(argv[i], "--log-path") || !std::strcmp(argv[i], "--steps");
            std::fprintf(stderr, "%s: %s '%s' (try --help)\n", program,
                         known ? "missing value for" : "unknown argument", argv[i]);
            return 2;
        }
    }
    return -1;
}
