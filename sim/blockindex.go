package sim

// blockIndex maps block content hashes to block ids: an open-addressing
// table with linear probing and backward-shift deletion, sized for the
// block pool (every hashed block is in it at most once), so lookups and
// updates never allocate. Key 0 marks an empty slot; hashes are never 0.
type blockIndex struct {
	keys []uint64
	vals []int32
	mask uint64
	n    int
}

func newBlockIndex(capacity int) *blockIndex {
	size := 16
	for size < 2*capacity {
		size *= 2
	}
	return &blockIndex{keys: make([]uint64, size), vals: make([]int32, size), mask: uint64(size - 1)}
}

func (t *blockIndex) slot(k uint64) uint64 { return (k * 0x9e3779b97f4a7c15) >> 7 & t.mask }

func (t *blockIndex) get(k uint64) (int32, bool) {
	for i := t.slot(k); ; i = (i + 1) & t.mask {
		switch t.keys[i] {
		case k:
			return t.vals[i], true
		case 0:
			return 0, false
		}
	}
}

// put inserts k (which must be absent).
func (t *blockIndex) put(k uint64, v int32) {
	i := t.slot(k)
	for t.keys[i] != 0 {
		i = (i + 1) & t.mask
	}
	t.keys[i], t.vals[i] = k, v
	t.n++
}

// del removes k if present.
func (t *blockIndex) del(k uint64) {
	i := t.slot(k)
	for t.keys[i] != k {
		if t.keys[i] == 0 {
			return
		}
		i = (i + 1) & t.mask
	}
	// Backward-shift the entries after i that probed past it.
	for {
		t.keys[i] = 0
		j := i
		for {
			j = (j + 1) & t.mask
			if t.keys[j] == 0 {
				t.n--
				return
			}
			home := t.slot(t.keys[j])
			// Move j back to i if its home is not in (i, j] cyclically.
			if (j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j)) {
				t.keys[i], t.vals[i] = t.keys[j], t.vals[j]
				break
			}
		}
		i = j
	}
}
