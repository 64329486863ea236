package watchhub

// pathIndex maps a stripe's paths to their local slot numbers. It is an open-addressing hash table
// with linear probing whose buckets pack tag<<32 | local+1 (0 marks an empty bucket), the tag
// being the upper 32 bits of the path's hash. It costs 8 bytes per bucket, about 14 bytes per
// path, where a map[string]uint32 costs about 56; the path string itself lives only in the slot.
type pathIndex struct {
	buckets []uint64 // length 0 or a power of two
	n       int
}

func tagOf(hv uint64) uint32 { return uint32(hv >> 32) }

const minBuckets = 16

// find returns the local slot of path, whose hash is hv.
func (s *stripe) find(hv uint64, path string) (uint32, bool) {
	x := &s.index
	if x.n == 0 {
		return 0, false
	}
	tag := tagOf(hv)
	mask := uint32(len(x.buckets) - 1)
	for i := tag & mask; ; i = (i + 1) & mask {
		b := x.buckets[i]
		if b == 0 {
			return 0, false
		}
		if uint32(b>>32) == tag {
			local := uint32(b) - 1
			if s.slot(local).path == path {
				return local, true
			}
		}
	}
}

// insert adds a path not yet in the index.
func (s *stripe) insert(tag, local uint32) {
	x := &s.index
	if (x.n+1)*4 > len(x.buckets)*3 {
		x.resize(max(minBuckets, 2*len(x.buckets)))
	}
	x.put(uint64(tag)<<32 | uint64(local) + 1)
	x.n++
}

func (x *pathIndex) put(b uint64) {
	mask := uint32(len(x.buckets) - 1)
	i := uint32(b>>32) & mask
	for x.buckets[i] != 0 {
		i = (i + 1) & mask
	}
	x.buckets[i] = b
}

func (x *pathIndex) resize(n int) {
	old := x.buckets
	x.buckets = make([]uint64, n)
	for _, b := range old {
		if b != 0 {
			x.put(b)
		}
	}
}

// delete removes the entry for local, whose tag is given, by backward-shift deletion (no
// tombstones), and shrinks a mostly empty table.
func (s *stripe) delete(tag, local uint32) {
	x := &s.index
	want := uint64(tag)<<32 | uint64(local) + 1
	mask := uint32(len(x.buckets) - 1)
	i := tag & mask
	for x.buckets[i] != want {
		if x.buckets[i] == 0 {
			panic("watchhub: path index lost an entry")
		}
		i = (i + 1) & mask
	}
	// Shift back every following entry of the cluster that may not sit before its home bucket.
	for j := (i + 1) & mask; x.buckets[j] != 0; j = (j + 1) & mask {
		home := uint32(x.buckets[j]>>32) & mask
		// The entry at j may move to the hole at i unless its home lies cyclically in (i, j].
		if (j-home)&mask >= (j-i)&mask {
			x.buckets[i] = x.buckets[j]
			i = j
		}
	}
	x.buckets[i] = 0
	x.n--
	if x.n == 0 && len(x.buckets) > minBuckets {
		x.buckets = nil
	} else if len(x.buckets) > minBuckets && x.n*8 < len(x.buckets) {
		x.resize(len(x.buckets) / 2)
	}
}
