package format

import "testing"

func TestNext(t *testing.T) {
	for _, tc := range []struct {
		name      string
		active    Level
		members   []uint64
		announced map[uint64]Level
		want      Level
		ok        bool
	}{
		{"every member ahead", 1, []uint64{1, 2, 3}, map[uint64]Level{1: 2, 2: 3, 3: 2}, 2, true},
		{"one member behind", 1, []uint64{1, 2, 3}, map[uint64]Level{1: 2, 2: 1, 3: 2}, 1, false},
		{"one member silent", 1, []uint64{1, 2, 3}, map[uint64]Level{1: 2, 2: 2}, 1, false},
		{"a removed server does not count", 1, []uint64{1, 2}, map[uint64]Level{1: 2, 2: 2, 9: 1}, 2, true},
		{"never down", 3, []uint64{1, 2}, map[uint64]Level{1: 2, 2: 2}, 3, false},
		{"no members known", 1, nil, map[uint64]Level{1: 2}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Next(tc.active, tc.members, tc.announced)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Next = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
