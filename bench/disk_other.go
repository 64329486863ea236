//go:build !unix

package bench

import (
	"errors"
	"os"
)

// openSync is not implemented off Unix: the disk probe reports that it did not run.
func openSync(string) (*os.File, error) {
	return nil, errors.New("synchronous writes are probed on Unix only")
}
