package sim

import (
	"math/rand/v2"
	"testing"
)

// TestBlockIndexMatchesMap drives the table and a Go map with the same
// random operations and compares them after each.
func TestBlockIndexMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, capacity := range []int{1, 8, 100} {
		ix := newBlockIndex(capacity)
		ref := map[uint64]int32{}
		keys := []uint64{}
		for step := 0; step < 20000; step++ {
			switch {
			case len(ref) < capacity && r.IntN(2) == 0:
				k := uint64(r.IntN(4*capacity)+1) * 0x10000 // clustered homes
				v := int32(r.IntN(1000))
				_, had := ref[k]
				if ix.putNew(k, v) == had {
					t.Fatalf("step %d: putNew(%x) inserted = %v with the key present = %v", step, k, !had, had)
				}
				if had {
					continue
				}
				ref[k] = v
				keys = append(keys, k)
			case len(keys) > 0:
				i := r.IntN(len(keys))
				k := keys[i]
				keys[i] = keys[len(keys)-1]
				keys = keys[:len(keys)-1]
				ix.del(k)
				delete(ref, k)
			}
			if ix.n != len(ref) {
				t.Fatalf("step %d: size %d, want %d", step, ix.n, len(ref))
			}
			for k, v := range ref {
				if got, ok := ix.get(k); !ok || got != v {
					t.Fatalf("step %d: get(%x) = %d, %v; want %d", step, k, got, ok, v)
				}
			}
		}
		ix.del(12345) // absent: no-op
	}
}
