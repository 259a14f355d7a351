"""A worker's stdout and stderr, drained on threads of the parent's: a worker never blocks on a full pipe, and
what a verdict shows of its output is its start and its end, the profiler's own log lines left out."""

from __future__ import annotations

import re
import threading
from typing import IO

# Output kept from a worker's stdout and stderr: its start and its end (the rest is counted, not kept).
OUTPUT_HEAD_BYTES = 4 * 1024
OUTPUT_TAIL_BYTES = 16 * 1024
# What PyTorch's profiler (Kineto) prints on stderr each time it starts and stops: the judge's, not the
# solution's output, so it is left out of what a verdict shows.
PROFILER_LOG_LINE = re.compile(r"^(USDT|STAGE):\d{4}-\d\d-\d\d [^\n]*\.cpp:\d+\] [^\n]*\n?", re.M)


class OutputCapture:
    """Drains one pipe on a thread (a worker never blocks on a full pipe), keeping its head and tail."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes]) -> None:
        while chunk := stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536):
            self.total += len(chunk)
            if len(self.head) < OUTPUT_HEAD_BYTES:
                self.head += chunk[: OUTPUT_HEAD_BYTES - len(self.head)]
            self.tail += chunk
            del self.tail[:-OUTPUT_TAIL_BYTES]
        stream.close()

    def text(self) -> str:
        """What was kept, with a marker where bytes were dropped (the profiler's own log lines left out)."""
        self._thread.join(timeout=1.0)
        head, tail = bytes(self.head), bytes(self.tail)
        overlap = len(head) + len(tail) - self.total
        if overlap >= 0:
            text = (head + tail[overlap:]).decode(errors="replace")
        else:
            text = f"{head.decode(errors='replace')}\n[… {-overlap} bytes not kept …]\n{tail.decode(errors='replace')}"
        return PROFILER_LOG_LINE.sub("", text)
