//go:build unix

package bench

import "syscall"

// openFileLimit returns how many files this process may have open (RLIMIT_NOFILE's soft limit,
// which the Go runtime raises to the hard limit at start); false when it cannot tell.
func openFileLimit() (uint64, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, false
	}
	return uint64(r.Cur), true
}
