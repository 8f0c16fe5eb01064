#!/usr/bin/env python3
"""A case-insensitive file system for tests: mirrors BACKING at MOUNTPOINT through FUSE, and
finds every name whatever its case, as macOS's and Windows's file systems (and casefolded
ext4) do: `alice` opens `Alice` when that is the spelling on disk, and a new name is created
as spelled. Nothing else differs from a plain loopback.

Usage: casefold_fs.py BACKING MOUNTPOINT   (runs in the foreground; needs mfusepy and /dev/fuse)
"""

import errno
import fcntl
import os
import sys
import threading

import mfusepy as fuse


class CaseFold(fuse.Operations):
    use_ns = True

    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.mutex = threading.Lock()

    def _real(self, path):
        """The backing path of `path`, each component matched without regard to case."""
        real = self.root
        for part in [p for p in path.split('/') if p]:
            exact = os.path.join(real, part)
            if os.path.lexists(exact):
                real = exact
                continue
            folded = part.casefold()
            try:
                match = next((n for n in os.listdir(real) if n.casefold() == folded), part)
            except OSError:
                match = part
            real = os.path.join(real, match)
        return real

    # Metadata
    def getattr(self, path, fh=None):
        st = os.lstat(self._real(path)) if fh is None else os.fstat(fh)
        keys = ('st_atime', 'st_ctime', 'st_gid', 'st_mode', 'st_mtime', 'st_nlink', 'st_size',
                'st_uid', 'st_ino', 'st_dev', 'st_blocks', 'st_blksize')
        out = {k: getattr(st, k) for k in keys}
        for k in ('st_atime', 'st_ctime', 'st_mtime'):
            out[k + '_ns'] = getattr(st, k + '_ns')
        return out

    def access(self, path, amode):
        if not os.access(self._real(path), amode):
            raise fuse.FuseOSError(errno.EACCES)
        return 0

    def chmod(self, path, mode):
        os.chmod(self._real(path), mode)
        return 0

    def chown(self, path, uid, gid):
        os.chown(self._real(path), uid, gid)
        return 0

    def utimens(self, path, times=None):
        os.utime(self._real(path), times)
        return 0

    def statfs(self, path):
        sv = os.statvfs(self._real(path))
        return {k: getattr(sv, k) for k in ('f_bavail', 'f_bfree', 'f_blocks', 'f_bsize',
                                            'f_favail', 'f_ffree', 'f_files', 'f_flag',
                                            'f_frsize', 'f_namemax')}

    # Folders
    def readdir(self, path, fh):
        return ['.', '..'] + os.listdir(self._real(path))

    def mkdir(self, path, mode):
        with self.mutex:
            real = self._real(path)
            os.mkdir(real, mode)
        return 0

    def rmdir(self, path):
        os.rmdir(self._real(path))
        return 0

    def opendir(self, path):
        return os.open(self._real(path), os.O_RDONLY | os.O_DIRECTORY)

    def releasedir(self, path, fh):
        os.close(fh)
        return 0

    def fsyncdir(self, path, datasync, fh):
        os.fsync(fh)
        return 0

    # Names
    def unlink(self, path):
        os.unlink(self._real(path))
        return 0

    def rename(self, old, new):
        with self.mutex:
            os.rename(self._real(old), self._real(new))
        return 0

    def link(self, target, source):
        os.link(self._real(source), self._real(target))
        return 0

    def symlink(self, target, source):
        os.symlink(source, self._real(target))
        return 0

    def readlink(self, path):
        return os.readlink(self._real(path))

    # Files
    def create(self, path, mode, fi=None):
        with self.mutex:
            return os.open(self._real(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)

    def open(self, path, flags):
        return os.open(self._real(path), flags)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        if fh is None:
            os.truncate(self._real(path), length)
        else:
            os.ftruncate(fh, length)
        return 0

    def flush(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        if datasync:
            os.fdatasync(fh)
        else:
            os.fsync(fh)
        return 0

    def release(self, path, fh):
        os.close(fh)
        return 0

    def flock(self, path, fh, op):
        # On the backing file, so locks taken through any spelling exclude each other.
        try:
            fcntl.flock(fh, op)
        except OSError as e:
            raise fuse.FuseOSError(e.errno) from e
        return 0


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    fuse.FUSE(CaseFold(sys.argv[1]), sys.argv[2], foreground=True, nothreads=False)


if __name__ == '__main__':
    main()
