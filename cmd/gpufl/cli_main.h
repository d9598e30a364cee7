// SPDX-License-Identifier: Apache-2.0
/*
 * cli_main.h - the one entry into the gpufl command-line tool, for the
 * executable (main.c) and the Python extension (`python -m gpufl`). It is
 * compiled into both, never exported from libgpufl.
 */
#ifndef GPUFL_CLI_MAIN_H
#define GPUFL_CLI_MAIN_H

/* Runs the tool on argv as main() gets it (argv[0] is the program; the usage
 * always names it "gpufl"). Prints to the C stdout and stderr, and leaves
 * them to the caller to flush. Returns the exit code (docs/cli.md): 0 done,
 * 1 runtime failure, 2 usage error. Safe to call again in one process, from
 * one thread at a time. */
int gpufl__cli_main(int argc, char **argv);

#endif
