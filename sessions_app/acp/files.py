"""The client file system a harness may use: `fs/read_text_file` and `fs/write_text_file`,
confined to the session's working directory (docs/acp.md, "What a harness may ask").

These run in the worker, as the worker's user, on the harness's behalf: a harness that is kept
away from other directories (its own user, a sandbox) must not reach them through us. So:
- a path must be absolute (ACP's rule) and, resolved (`..`, symlinks), inside the cwd: a symlink
  inside the cwd that points inside it is followed, one that points out is refused;
- the resolved path is then opened component by component from the cwd with O_NOFOLLOW, so a
  directory swapped for a symlink between the check and the open is refused, not followed;
- the cwd itself must still be the directory the turn started in (its device and inode): a cwd
  renamed away and replaced by a symlink is refused;
- only regular files with one link (no FIFO that would block the worker, no device, no hard
  link to a file elsewhere), up to MAX_FILE_BYTES, as UTF-8 text;
- when the harness runs as a user of its own (sandbox.py, `owner`), what a write creates or
  replaces, the file and any directory made for it, is given to that user: the worker writes as
  root, and the harness must be able to change its files afterwards.
"""

from __future__ import annotations

import errno
import os
import stat

MAX_FILE_BYTES = 8 * 1024 * 1024
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Refused(Exception):
    """The request is not one this client serves; the message goes back to the harness."""


class WorkingDirectory:
    def __init__(self, cwd: str, *, owner: int | None = None):
        self.root = os.path.realpath(cwd)
        self.owner = owner  # the harness's uid (and gid), None: the worker's own user
        info = os.stat(self.root)
        self._identity = (info.st_dev, info.st_ino)

    def read_text(self, path: str, *, line: int | None = None, limit: int | None = None) -> str:
        """The file's text; from 1-based `line`, at most `limit` lines (ACP's parameters)."""
        fd = self._open(path, os.O_RDONLY)
        try:
            data = _read_all(fd)
        finally:
            os.close(fd)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(f"{path} is not UTF-8 text") from None
        if line is None and limit is None:
            return text
        lines = text.splitlines(keepends=True)
        start = max((line or 1) - 1, 0)
        end = len(lines) if limit is None else start + limit
        return "".join(lines[start:end])

    def write_text(self, path: str, content: str) -> None:
        """Create or replace the file (creating missing directories inside the cwd)."""
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise Refused("the content is not valid Unicode (an unpaired surrogate)") from None
        if len(data) > MAX_FILE_BYTES:
            raise Refused(f"the content is larger than {MAX_FILE_BYTES} bytes")
        fd = self._open(path, os.O_WRONLY | os.O_CREAT, create_dirs=True)
        try:
            self._own(fd)
            os.ftruncate(fd, 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    # --- confinement ----------------------------------------------------------------------------

    def _parts(self, path: str) -> tuple[str, ...]:
        if not isinstance(path, str) or not path or "\x00" in path:
            raise Refused("path must be a non-empty string")
        if not os.path.isabs(path):
            raise Refused(f"path {path!r} must be absolute")
        resolved = os.path.realpath(path)
        if resolved == self.root:
            raise Refused(f"{path} is a directory")
        if not resolved.startswith(self.root + os.sep):
            raise Refused(f"{path} is outside the session's working directory {self.root}")
        return tuple(resolved[len(self.root) + 1 :].split(os.sep))

    def _open(self, path: str, flags: int, *, create_dirs: bool = False) -> int:
        parts = self._parts(path)
        try:
            fd = self._walk(parts, flags, create_dirs)
        except OSError as exc:
            raise Refused(_explain(path, exc)) from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise Refused(f"{path} is not a regular file")
            if info.st_nlink > 1:
                raise Refused(f"{path} has other hard links: refused")
            if info.st_size > MAX_FILE_BYTES:
                raise Refused(f"{path} is larger than {MAX_FILE_BYTES} bytes")
            # Opened non-blocking so a FIFO could not hang the worker; a regular file blocks.
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _walk(self, parts: tuple[str, ...], flags: int, create_dirs: bool) -> int:
        directory = os.open(self.root, _DIR_FLAGS)
        try:
            info = os.fstat(directory)
            if (info.st_dev, info.st_ino) != self._identity:
                raise Refused("the session's working directory was replaced since the turn began")
            for name in parts[:-1]:
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=directory)
                except FileNotFoundError:
                    if not create_dirs:
                        raise
                    os.mkdir(name, 0o777, dir_fd=directory)
                    child = os.open(name, _DIR_FLAGS, dir_fd=directory)
                    self._own(child)
                os.close(directory)
                directory = child
            mode = flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
            return os.open(parts[-1], mode, 0o666, dir_fd=directory)
        finally:
            os.close(directory)

    def _own(self, fd: int) -> None:
        # By the open descriptor: whatever is at the path by now, this is the one we made.
        if self.owner is not None:
            os.fchown(fd, self.owner, self.owner)


def _read_all(fd: int) -> bytes:
    chunks, size = [], 0
    while chunk := os.read(fd, 1024 * 1024):
        size += len(chunk)
        if size > MAX_FILE_BYTES:
            raise Refused(f"the file is larger than {MAX_FILE_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _explain(path: str, exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return f"{path}: no such file"
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        # The path had no symlink when it was resolved: one was put there since.
        return f"{path}: a symlink or a non-directory is in the way (changed while opening)"
    if exc.errno == errno.ENXIO:  # a FIFO with no reader, a device
        return f"{path} is not a regular file"
    if exc.errno == errno.EISDIR:
        return f"{path} is a directory"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"{path}: permission denied"
    return f"{path}: {exc.strerror or 'cannot be opened'}"
