// SPDX-License-Identifier: Apache-2.0
/*
 * main.c - the gpufl executable. The command-line tool itself is
 * gpufl__cli_main() (cli.c), which the Python package runs too
 * (`python -m gpufl`), so both are the same code.
 */
#include "cli_main.h"

int main(int argc, char **argv) { return gpufl__cli_main(argc, argv); }
