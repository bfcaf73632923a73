package sim

import (
	"math/rand/v2"
	"testing"
)

// TestBlockIndexMatchesMap drives the table and a Go map with the same
// random operations and compares them after each. Keys are spaced so that
// many share a home slot and a fingerprint's low bits (long probe runs,
// shifts across the wrap-around) and the table grows from 16 slots to
// 2048.
func TestBlockIndexMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, capacity := range []int{1, 8, 100, 1000} {
		hashOf := make([]uint64, capacity) // the hash each block is registered under
		ix := newBlockIndex(func(b int32) uint64 { return hashOf[b] })
		ref := map[uint64]int32{}
		var free []int32
		for b := range capacity {
			free = append(free, int32(b))
		}
		keys := []uint64{}
		for step := 0; step < 20000; step++ {
			switch {
			case len(free) > 0 && r.IntN(2) == 0:
				k := uint64(r.IntN(4*capacity)+1) * 0x10000 // clustered homes
				v := free[len(free)-1]
				_, had := ref[k]
				if ix.putNew(k, v) == had {
					t.Fatalf("step %d: putNew(%x) inserted = %v with the key present = %v", step, k, !had, had)
				}
				if had {
					continue
				}
				free = free[:len(free)-1]
				hashOf[v] = k
				ref[k] = v
				keys = append(keys, k)
			case len(keys) > 0:
				i := r.IntN(len(keys))
				k := keys[i]
				keys[i] = keys[len(keys)-1]
				keys = keys[:len(keys)-1]
				ix.del(k, ref[k])
				free = append(free, ref[k])
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
			if _, ok := ix.get(0x123456789); ok {
				t.Fatalf("step %d: found an absent key", step)
			}
		}
		ix.del(12345, 0) // absent: no-op
	}
}

// TestBlockIndexSharedFingerprint registers two keys with the same
// fingerprint (and so the same home slot): lookups must compare the full
// hash.
func TestBlockIndexSharedFingerprint(t *testing.T) {
	hashOf := make([]uint64, 4)
	ix := newBlockIndex(func(b int32) uint64 { return hashOf[b] })
	// (base + g⁻¹)·g = base·g + 1: the same high 32 bits.
	const g = 0x9e3779b97f4a7c15
	inv := uint64(g)
	for range 6 {
		inv *= 2 - g*inv
	}
	base := uint64(0xdeadbeef)
	other := base + inv
	if fingerprint(other) != fingerprint(base) || other == base {
		t.Fatalf("fingerprints %x, %x: want equal", fingerprint(base), fingerprint(other))
	}
	hashOf[0], hashOf[1] = base, other
	if !ix.putNew(base, 0) || !ix.putNew(other, 1) {
		t.Fatal("putNew refused a new key")
	}
	if ix.putNew(base, 2) || ix.putNew(other, 3) {
		t.Fatal("putNew accepted a present key")
	}
	for k, want := range map[uint64]int32{base: 0, other: 1} {
		if got, ok := ix.get(k); !ok || got != want {
			t.Fatalf("get(%x) = %d, %v; want %d", k, got, ok, want)
		}
	}
	ix.del(base, 0)
	if _, ok := ix.get(base); ok {
		t.Fatal("deleted key still found")
	}
	if got, ok := ix.get(other); !ok || got != 1 {
		t.Fatalf("get(other) = %d, %v after deleting its twin", got, ok)
	}
}
