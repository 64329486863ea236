package watchhub

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestPathIndex drives the open-addressing index with heavily colliding tags (clusters that wrap
// around the table, deletions inside clusters, growth and shrinking) against a reference map.
func TestPathIndex(t *testing.T) {
	for _, tagSpace := range []uint32{1, 7, 1 << 20} {
		rng := rand.New(rand.NewPCG(uint64(tagSpace), 9))
		var s stripe
		ref := map[string]uint32{} // path -> local
		tags := map[string]uint32{}
		var names []string
		for i := 0; i < 300; i++ {
			names = append(names, "/p"+strconv.Itoa(i))
		}
		for step := 0; step < 8000; step++ {
			p := names[rng.IntN(len(names))]
			if local, ok := ref[p]; ok && rng.IntN(2) == 0 {
				ps := s.slot(local)
				s.delete(ps.tag, local)
				*ps = pathSlot{}
				s.free = append(s.free, local)
				delete(ref, p)
			} else if !ok {
				tag := rng.Uint32N(tagSpace) * 0x9e3779b1 // spread over the table, still colliding
				if tagSpace > 7 {
					tag = rng.Uint32()
				}
				tags[p] = tag
				local := newPath(&s, uint64(tag)<<32, p)
				ref[p] = local
			}
			if step%97 == 0 || step > 7950 {
				for _, q := range names {
					want, in := ref[q]
					got, ok := s.find(uint64(tags[q])<<32, q)
					if ok != in || (ok && got != want) {
						t.Fatalf("tags %d step %d: find(%s) = %d,%v want %d,%v", tagSpace, step, q, got, ok, want, in)
					}
				}
				if s.index.n != len(ref) {
					t.Fatalf("index has %d entries, want %d", s.index.n, len(ref))
				}
			}
		}
	}
}
