package sim

// blockIndex maps block content hashes to the blocks registered under
// them: an open-addressing table with linear probing and backward-shift
// deletion, doubled when it would be more than half full (every block is
// in it at most once, so it stops growing at twice the pool).
//
// A slot is 8 bytes: a 32-bit fingerprint of the hash and the block; the
// full hash is the block's own (hashOf), read only when a fingerprint
// matches. The table is then half the size it would be holding the hashes,
// which matters because every probe of a random hash is a cache miss.
type blockIndex struct {
	slots  []indexSlot
	mask   uint64
	n      int
	hashOf func(b int32) uint64 // the hash block b is registered under
}

// indexSlot is one entry; ref is the block + 1 (0: empty).
type indexSlot struct {
	fp  uint32
	ref uint32
}

func newBlockIndex(hashOf func(b int32) uint64) *blockIndex {
	return &blockIndex{slots: make([]indexSlot, 16), mask: 15, hashOf: hashOf}
}

// grow doubles the table, keeping it at most half full.
func (t *blockIndex) grow() {
	old := t.slots
	t.slots = make([]indexSlot, 2*len(old))
	t.mask = uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.ref == 0 {
			continue
		}
		i := t.home(s.fp)
		for t.slots[i].ref != 0 {
			i = (i + 1) & t.mask
		}
		t.slots[i] = s
	}
}

// fingerprint is 32 well-mixed bits of k; a slot's home is its low bits.
func fingerprint(k uint64) uint32 { return uint32((k * 0x9e3779b97f4a7c15) >> 32) }

func (t *blockIndex) home(fp uint32) uint64 { return uint64(fp) & t.mask }

// get returns the block registered under k.
func (t *blockIndex) get(k uint64) (int32, bool) {
	fp := fingerprint(k)
	for i := t.home(fp); ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s.ref == 0 {
			return 0, false
		}
		if s.fp == fp && t.hashOf(int32(s.ref-1)) == k {
			return int32(s.ref - 1), true
		}
	}
}

// putNew registers block v under k unless a block is registered under k
// already, in one probe; it reports whether it registered v. (The caller
// sets v's hash to k.)
func (t *blockIndex) putNew(k uint64, v int32) bool {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	fp := fingerprint(k)
	for i := t.home(fp); ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s.ref == 0 {
			t.slots[i] = indexSlot{fp, uint32(v) + 1}
			t.n++
			return true
		}
		if s.fp == fp && t.hashOf(int32(s.ref-1)) == k {
			return false
		}
	}
}

// del removes block b, registered under k, if present.
func (t *blockIndex) del(k uint64, b int32) {
	ref := uint32(b) + 1
	i := t.home(fingerprint(k))
	for t.slots[i].ref != ref {
		if t.slots[i].ref == 0 {
			return
		}
		i = (i + 1) & t.mask
	}
	// Backward-shift the entries after i that probed past it.
	for {
		t.slots[i] = indexSlot{}
		j := i
		for {
			j = (j + 1) & t.mask
			if t.slots[j].ref == 0 {
				t.n--
				return
			}
			home := t.home(t.slots[j].fp)
			// Move j back to i if its home is not in (i, j] cyclically.
			if (j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j)) {
				t.slots[i] = t.slots[j]
				break
			}
		}
		i = j
	}
}
