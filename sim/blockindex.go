package sim

// blockIndex maps block content hashes to block ids: an open-addressing
// table with linear probing and backward-shift deletion, sized for the
// block pool (every hashed block is in it at most once), so lookups and
// updates never allocate. Key 0 marks an empty slot; hashes are never 0.
type blockIndex struct {
	slots []indexSlot
	mask  uint64
	n     int
}

// indexSlot keeps a key beside its value: one cache line per probe.
type indexSlot struct {
	key uint64
	val int32
}

func newBlockIndex(capacity int) *blockIndex {
	size := 16
	for size < 2*capacity {
		size *= 2
	}
	return &blockIndex{slots: make([]indexSlot, size), mask: uint64(size - 1)}
}

func (t *blockIndex) slot(k uint64) uint64 { return (k * 0x9e3779b97f4a7c15) >> 7 & t.mask }

func (t *blockIndex) get(k uint64) (int32, bool) {
	for i := t.slot(k); ; i = (i + 1) & t.mask {
		switch t.slots[i].key {
		case k:
			return t.slots[i].val, true
		case 0:
			return 0, false
		}
	}
}

// putNew inserts k unless it is present, in one probe; it reports whether
// it inserted.
func (t *blockIndex) putNew(k uint64, v int32) bool {
	i := t.slot(k)
	for {
		switch t.slots[i].key {
		case k:
			return false
		case 0:
			t.slots[i] = indexSlot{k, v}
			t.n++
			return true
		}
		i = (i + 1) & t.mask
	}
}

// del removes k if present.
func (t *blockIndex) del(k uint64) {
	i := t.slot(k)
	for t.slots[i].key != k {
		if t.slots[i].key == 0 {
			return
		}
		i = (i + 1) & t.mask
	}
	// Backward-shift the entries after i that probed past it.
	for {
		t.slots[i].key = 0
		j := i
		for {
			j = (j + 1) & t.mask
			if t.slots[j].key == 0 {
				t.n--
				return
			}
			home := t.slot(t.slots[j].key)
			// Move j back to i if its home is not in (i, j] cyclically.
			if (j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j)) {
				t.slots[i] = t.slots[j]
				break
			}
		}
		i = j
	}
}
