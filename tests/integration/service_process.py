# SPDX-License-Identifier: Apache-2.0
"""What the test harnesses of real services (pg_harness.py's PostgreSQL, prom_harness.py's
Prometheus) share: stopping the server process (its stop signal, then SIGKILL after a time),
closing its log, removing its working directory unless a variable asks to keep it, and use as a
context manager. A harness sets STOP_SIGNAL, STOP_TIMEOUT_S and KEEP_VARIABLE, and proc, _log
and workdir."""
import os
import shutil
import signal
import subprocess


class ServiceProcess:
    STOP_SIGNAL = signal.SIGTERM
    STOP_TIMEOUT_S = 15
    KEEP_VARIABLE = None  # e.g. GPUFL_KEEP_POSTGRES: "1" keeps the working directory

    def _kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(self.STOP_SIGNAL)
            try:
                self.proc.wait(timeout=self.STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self._log:
            self._log.close()
            self._log = None

    def stop(self):
        """Stops the server and removes its working directory. Safe to call twice; also runs at
        interpreter exit."""
        self._kill()
        if self.workdir and os.environ.get(self.KEEP_VARIABLE) != "1":
            shutil.rmtree(self.workdir, ignore_errors=True)
        self.workdir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False
