# SPDX-License-Identifier: Apache-2.0
"""`python -m gpufl ...`: the gpufl command-line tool (see gpufl.cli)."""
from .cli import main

if __name__ == "__main__":
    main()
