package inspect

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/cespare/xxhash/v2"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// tan's log files (dragonboat internal/tan/record.go, derived from pebble's record format):
// 32 KiB blocks of chunks, each with a header — checksum (u32 LE), length (u16 LE), type (u8)
// and, for the recyclable types 5..8, the low 32 bits of the log number (u32 LE) — and the
// payload. The checksum is the low 32 bits of xxhash64 over the header from the type byte on
// and the payload (pebble uses CRC32C: its reader does not read tan's files). A record is one
// full chunk, or a first, middle... and last chunk; each record is one marshalled pb.Update.
const (
	tanBlockSize        = 32 << 10
	tanLegacyHeader     = 7
	tanRecyclableHeader = 11
	tanFull, tanFirst   = 1, 2
	tanMiddle, tanLast  = 3, 4
)

// readLogFile calls f for every pb.Update record of a tan log file, in file order. A zeroed
// or broken chunk ends the file, as it ends tan's own replay (the tail of the last log after
// a crash, or preallocated space).
func readLogFile(fn string, f func(*pb.Update)) error {
	b, err := os.ReadFile(fn)
	if err != nil {
		return err
	}
	num := uint32(logNum(fn))
	var rec []byte
	inRecord := false
	for blk := 0; blk < len(b); blk += tanBlockSize {
		block := b[blk:min(len(b), blk+tanBlockSize)]
		for off := 0; off+tanLegacyHeader <= len(block); {
			sum := binary.LittleEndian.Uint32(block[off:])
			n := int(binary.LittleEndian.Uint16(block[off+4:]))
			typ := block[off+6]
			if sum == 0 && n == 0 && typ == 0 {
				if off+tanRecyclableHeader > len(block) {
					break // padding at the end of a block
				}
				return nil // zeroed: the end of what was written
			}
			h := tanLegacyHeader
			if typ >= 5 && typ <= 8 {
				h = tanRecyclableHeader
				if off+h > len(block) || binary.LittleEndian.Uint32(block[off+7:]) != num {
					return nil // a recycled file's older contents
				}
				typ -= 4
			}
			if off+h+n > len(block) || uint32(xxhash.Sum64(block[off+6:off+h+n])) != sum {
				return nil // a torn or damaged tail
			}
			payload := block[off+h : off+h+n]
			off += h + n
			switch typ {
			case tanFull, tanFirst:
				rec, inRecord = append(rec[:0], payload...), true
			case tanMiddle, tanLast:
				if !inRecord {
					continue
				}
				rec = append(rec, payload...)
			default:
				return fmt.Errorf("%s: chunk type %d at offset %d", fn, typ, blk+off)
			}
			if typ == tanFull || typ == tanLast {
				inRecord = false
				var u pb.Update
				if err := u.Unmarshal(rec); err != nil {
					return fmt.Errorf("%s: a record does not decode: %w", fn, err)
				}
				f(&u)
			}
		}
	}
	return nil
}
