"""How much of a file Eva reads: every file a command or the bot opens has a size limit, and a
file past it is refused with one line naming the file and the limit, before it fills memory.

The limits, and why each is what it is:

- a DiscordChatExporter export: 256 MiB, read whole (one JSON document); parsing costs about
  3.7 times the file in memory (measured on rust.dce.json: 2.7 MB -> 10 MB), so about 1 GB at
  the limit, roughly 350,000 messages;
- a line of a JSONL export: 1 MiB (a file is read a line at a time, so the line is what fills
  memory); the longest message an import takes is 16,000 characters, at most 192 KB as JSON
  escapes, so a longer line is not a message;
- an author map (``--author-ids``): 4 MiB, about 100,000 authors at 40 bytes an entry;
- the persona (``PERSONA_FILE``): 64 KiB, about 16,000 tokens, sent with every reply turn;
- the heartbeat (``HEALTH_FILE``): 64 KiB; the bot writes about 150 bytes;
- the settings file ``.env``: 1 MiB;
- the embedded server's list of the processes using it (``pg/.handle_pids.json``): 1 MiB.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memory.errors import UserFacingError

KIB, MIB = 1 << 10, 1 << 20
DCE_EXPORT_BYTES = 256 * MIB
JSONL_LINE_BYTES = 1 * MIB
AUTHOR_MAP_BYTES = 4 * MIB
PERSONA_BYTES = 64 * KIB
HEARTBEAT_BYTES = 64 * KIB
ENV_FILE_BYTES = 1 * MIB
PID_LIST_BYTES = 1 * MIB


class FileTooLarge(UserFacingError):
    """A file holds more than Eva reads of that kind of file; nothing was read into memory."""


def size_text(limit: int) -> str:
    """``262144`` -> "256 KiB": the limits are whole KiB or MiB."""
    if limit % MIB == 0:
        return f"{limit // MIB} MiB"
    if limit % KIB == 0:
        return f"{limit // KIB} KiB"
    return f"{limit:,} bytes"


def too_large(name: str, limit: int, what: str, fix: str) -> FileTooLarge:
    return FileTooLarge(f"{name} is larger than {size_text(limit)}, the most {what} may be; {fix}")


def read_limited(
    path: str | os.PathLike[str], limit: int, what: str, fix: str, label: str | None = None
) -> bytes:
    """The bytes of ``path``, or :class:`FileTooLarge` (naming it ``label``, by default its
    file name) when it holds more than ``limit``.

    The size is checked before reading (a big file is refused without being read) and on what
    was read (a pipe, ``/dev/zero`` or a file that grew meanwhile has no size to check first):
    never more than ``limit`` + 1 bytes are read. OSError (missing, unreadable) is the caller's.
    """
    file = Path(path)
    name = label or file.name
    with file.open("rb") as stream:
        if os.fstat(stream.fileno()).st_size > limit:
            raise too_large(name, limit, what, fix)
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise too_large(name, limit, what, fix)
    return data


def check_size(
    path: str | os.PathLike[str], limit: int, what: str, fix: str, label: str | None = None
) -> None:
    """For a file a library reads itself (``.env``): refused when larger than ``limit``, or
    when it is not a regular file (a pipe or a device has no size, and may never end).
    A missing file is not checked (the library decides what that means)."""
    file = Path(path)
    try:
        status = file.stat()
    except OSError:
        return
    name = label or file.name
    if not stat.S_ISREG(status.st_mode):
        raise FileTooLarge(f"{name} is not a regular file, so its size cannot be checked; {fix}")
    if status.st_size > limit:
        raise too_large(name, limit, what, fix)
