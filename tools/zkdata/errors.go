package zkdata

import "fmt"

// FormatError reports input that is not what ZooKeeper writes: the file, the byte offset of the
// record or field at fault, and what was expected there. For a compressed snapshot the offset
// counts uncompressed bytes.
type FormatError struct {
	File   string
	Offset int64
	// Uncompressed is set when Offset counts bytes after decompression.
	Uncompressed bool
	What         string
	// Err is the cause when there is one: io.ErrUnexpectedEOF where the input ends early, or
	// the decompressor's error.
	Err error
}

func (e *FormatError) Unwrap() error { return e.Err }

func (e *FormatError) Error() string {
	where := "offset"
	if e.Uncompressed {
		where = "uncompressed offset"
	}
	return fmt.Sprintf("zkdata: %s: %s %d: %s", e.File, where, e.Offset, e.What)
}
