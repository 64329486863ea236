//go:build unix

package tlsconf

import (
	"os"
	"syscall"
)

// inode is the file's inode number: a store replaced by a rename of the same size and time
// still counts as changed.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
