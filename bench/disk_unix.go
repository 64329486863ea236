//go:build unix

package bench

import (
	"os"
	"syscall"
)

// openSync creates path for writes that return once the data is on the device (O_DSYNC).
func openSync(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_DSYNC, 0o600)
}
