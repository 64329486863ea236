package inspect

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cockroachdb/pebble/vfs"
)

// ErrRunning means a process holds a lock on the data directory: the server runs.
var ErrRunning = errors.New("the server seems to be running (stop the server first)")

// lockHolder returns the pid of a process holding a POSIX record lock on the file at path
// (dragonboat and pebble lock their LOCK files with fcntl F_SETLK), or 0. The file is opened
// read-only and F_GETLK only asks; a missing file is not held.
func lockHolder(path string) (int, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if lk.Type == syscall.F_UNLCK {
		return 0, nil
	}
	return int(lk.Pid), nil
}

// checkLock fails with ErrRunning when a process holds the lock file at path.
func checkLock(path string) error {
	pid, err := lockHolder(path)
	if err != nil {
		return err
	}
	if pid != 0 {
		return fmt.Errorf("%w: process %d holds %s", ErrRunning, pid, path)
	}
	return nil
}

// CheckStopped refuses a data directory a running server holds: dragonboat's locks on its
// NodeHost directory, its log store (and WAL directory), and pebble's on every shard store.
func (l *Layout) CheckStopped() error {
	paths := []string{filepath.Join(l.NodeHostDir, "LOCK")}
	globs := []string{filepath.Join(l.NodeHostDir, "*", "*", "*", "LOCK"), filepath.Join(l.ShardsDir, "*", "db-*", "LOCK")}
	if l.DataLogDir != "" {
		paths = append(paths, filepath.Join(l.DataLogDir, "corral-wal", "LOCK"))
		globs = append(globs, filepath.Join(l.DataLogDir, "corral-wal", "*", "*", "*", "LOCK"))
	}
	for _, g := range globs {
		m, _ := filepath.Glob(g)
		paths = append(paths, m...)
	}
	for _, p := range paths {
		if err := checkLock(p); err != nil {
			return err
		}
	}
	return nil
}

// readOnlyFS is the file system pebble gets: reads pass through to the OS, everything that
// would create, rename or remove a file fails, and Lock only checks that no process holds the
// lock (pebble takes its lock even when opened ReadOnly, by creating and truncating the LOCK
// file).
type readOnlyFS struct{ vfs.FS }

var errReadOnly = errors.New("inspect: refusing to write (read-only)")

func (readOnlyFS) Create(name string) (vfs.File, error) {
	return nil, fmt.Errorf("%w: create %s", errReadOnly, name)
}
func (readOnlyFS) Link(oldname, newname string) error {
	return fmt.Errorf("%w: link %s", errReadOnly, newname)
}
func (readOnlyFS) Remove(name string) error { return fmt.Errorf("%w: remove %s", errReadOnly, name) }
func (readOnlyFS) RemoveAll(name string) error {
	return fmt.Errorf("%w: remove %s", errReadOnly, name)
}
func (readOnlyFS) Rename(oldname, newname string) error {
	return fmt.Errorf("%w: rename %s", errReadOnly, oldname)
}
func (readOnlyFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	return nil, fmt.Errorf("%w: reuse %s", errReadOnly, oldname)
}
func (readOnlyFS) MkdirAll(dir string, perm os.FileMode) error {
	return fmt.Errorf("%w: mkdir %s", errReadOnly, dir)
}
func (readOnlyFS) Lock(name string) (io.Closer, error) {
	if err := checkLock(name); err != nil {
		return nil, err
	}
	return io.NopCloser(nil), nil
}
