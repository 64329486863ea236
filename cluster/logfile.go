package cluster

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"

	"github.com/lni/vfs"
	"golang.org/x/sys/unix"
)

// logFileFS is the file system dragonboat's log store (tan) writes through: every call passes to
// the operating system's file system, except that a Raft log file tan creates is allocated up
// front and synced with fdatasync.
//
// tan appends each saved update to its replica's current log file and syncs it. It reserves a
// new file's space with fallocate's KEEP_SIZE mode, so every append still grows the file's size,
// and it syncs with fsync: each sync then commits the file system's journal for the size and the
// modification time as well as flushing the data. A file allocated at its full size
// (fallocate without KEEP_SIZE) takes appends without changing its size; fdatasync then flushes
// the data and the allocation state the data needs (the written range of a preallocated extent),
// and skips the modification time. On this machine's ext4 that made a 1 KiB append and its sync
// about 40 % cheaper in time and 30-45 % in CPU (docs/storage.md, "How a log file is synced").
//
// The invariant that keeps this invisible to tan: a reader of a log file sees exactly the bytes
// written to it, as it would with tan's own files, whose size is what was written.
//   - While a file is being written, Open of its name returns a reader that ends at the bytes
//     written so far (logReader). Without it, a reader that runs past the last record (tan reads
//     to the end of the file when a leader fetches a lagging follower's entries up to the last
//     one) meets the allocated zeros and tan reports a torn record instead of the end.
//   - A file closed in order (tan closes the full one when it starts the next, and the current
//     one when the store closes) is cut back to the bytes written.
//   - After a crash the last file keeps its zero tail; tan reads every log file it did not close
//     when it opens, takes the zeros as a torn tail and copies the records into a new file, as
//     it does after a torn write. A write the crash cut short leaves a chunk whose end reads as
//     the allocation's zeros, which tan would take for corruption: tornTailFactory zeroes such
//     a chunk before tan opens the directory (logtail.go).
//
// And one durability rule tan itself lacks: a log file is synced before it is closed. tan starts
// the next file inside a save, before writing the update that finds the current one full, and
// syncs only the new file at the end of the save; an earlier update of the same save still sits
// unsynced in the file it closed. Its per-replica mode saves one update per file per save, so it
// never meets that, but the server log (serverlog.go) saves every replica's updates in one.
// The cost is one more sync per 64 MiB of log. Test: TestLogFileSyncedBeforeClose.
//
// The bytes on disk are tan's own, so a server of any version reads a directory written by any
// other.
type logFileFS struct {
	vfs.FS
	log *slog.Logger

	mu      sync.Mutex
	writing map[string]*logFile // log files open for writing, by cleaned name
	sync    func(fd int) error  // fdatasync; tests count the calls
}

func newLogFileFS(fs vfs.FS, log *slog.Logger) *logFileFS {
	return &logFileFS{FS: fs, log: log, writing: make(map[string]*logFile), sync: fdatasync}
}

func fdatasync(fd int) error {
	for {
		err := unix.Fdatasync(fd)
		if err != unix.EINTR {
			return err
		}
	}
}

// logFileName matches the name of a tan log file (its makeFilename: the file number, at least six
// digits, and ".log"). Index, manifest, bootstrap and temporary files keep the plain behaviour.
var logFileName = regexp.MustCompile(`^[0-9]{6,}\.log$`)

// logFileAlloc is how much of a new log file is allocated: tan starts the next file once the
// current one holds 64 MiB (its MaxLogFileSize), after the update that crosses the mark; the
// extra mebibyte covers most such updates (a larger one only grows the file, as every append did
// before).
const logFileAlloc = 65 << 20

// Create creates the file; a tan log file is allocated to logFileAlloc bytes and wrapped.
func (fs *logFileFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil || !logFileName.MatchString(fs.FS.PathBase(name)) {
		return f, err
	}
	osf, ok := f.(*os.File)
	if !ok {
		return f, nil
	}
	if err := unix.Fallocate(int(osf.Fd()), 0, 0, logFileAlloc); err != nil {
		// Not supported by this file system: tan's own behaviour (appends, fsync), but synced
		// before it is closed.
		fs.log.Debug("raft log file not preallocated", "file", name, "err", err)
		return syncedOnClose{File: f}, nil
	}
	lf := &logFile{File: osf, osf: osf, fs: fs, name: filepath.Clean(name)}
	fs.mu.Lock()
	fs.writing[lf.name] = lf
	fs.mu.Unlock()
	return lf, nil
}

// Open opens the file; a log file being written is read only up to the bytes written.
func (fs *logFileFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil {
		return f, err
	}
	fs.mu.Lock()
	lf := fs.writing[filepath.Clean(name)]
	fs.mu.Unlock()
	if lf == nil {
		return f, nil
	}
	return &logReader{File: f, end: &lf.end}, nil
}

// logFile is a tan log file allocated at its full size. tan writes it sequentially from offset
// 0 (its record writer); end is the end of what was written.
type logFile struct {
	vfs.File
	osf  *os.File
	fs   *logFileFS
	name string
	end  atomic.Int64
}

func (f *logFile) Write(p []byte) (int, error) {
	n, err := f.osf.Write(p)
	f.grow(f.end.Load() + int64(n))
	return n, err
}

func (f *logFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.osf.WriteAt(p, off)
	f.grow(off + int64(n))
	return n, err
}

// grow moves end forward to e; only the file's one writer calls it.
func (f *logFile) grow(e int64) {
	if e > f.end.Load() {
		f.end.Store(e)
	}
}

// Sync flushes the written data and what reading it back needs, not the modification time.
func (f *logFile) Sync() error { return f.fs.sync(int(f.osf.Fd())) }

// Close syncs the file, cuts it back to the bytes written, then closes it. A failed sync fails
// the close (tan stops on it). A failed cut leaves a zero tail, which tan takes for a torn tail
// when it next opens the directory (it copies the records out): it is logged and the close
// goes on.
func (f *logFile) Close() error {
	if err := f.Sync(); err != nil {
		f.osf.Close()
		return err
	}
	if err := f.osf.Truncate(f.end.Load()); err != nil {
		f.fs.log.Warn("raft log file not cut back to its data", "file", f.name, "err", err)
	}
	f.fs.mu.Lock()
	delete(f.fs.writing, f.name)
	f.fs.mu.Unlock()
	return f.osf.Close()
}

// syncedOnClose is a log file tan writes its own way (no preallocation), synced before it is
// closed.
type syncedOnClose struct{ vfs.File }

func (f syncedOnClose) Close() error {
	if err := f.File.Sync(); err != nil {
		f.File.Close()
		return err
	}
	return f.File.Close()
}

// logReader reads a log file that is being written: the file ends at *end, the bytes written
// when the read is made, as a file of tan's own would.
type logReader struct {
	vfs.File
	end *atomic.Int64
	pos int64
}

func (r *logReader) Read(p []byte) (int, error) {
	left := r.end.Load() - r.pos
	if left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := r.File.Read(p)
	r.pos += int64(n)
	return n, err
}

func (r *logReader) ReadAt(p []byte, off int64) (int, error) {
	left := r.end.Load() - off
	if left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > left {
		n, err := r.File.ReadAt(p[:left], off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	return r.File.ReadAt(p, off)
}

func (r *logReader) Seek(offset int64, whence int) (int64, error) {
	if whence == io.SeekEnd {
		offset, whence = r.end.Load()+offset, io.SeekStart
	}
	pos, err := r.File.Seek(offset, whence)
	if err == nil {
		r.pos = pos
	}
	return pos, err
}
