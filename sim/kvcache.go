package sim

import (
	"math"
	"math/bits"
)

// kvCache is one replica's paged KV cache: a pool of physical blocks, a
// free queue ordered by eviction priority, and (with prefix caching) a map
// from block content hash to the block holding it, as vLLM V1's BlockPool.
//
// Invariant (checked by tests): blocks referenced by at least one request
// plus blocks in the free queue = total.
type kvCache struct {
	bs      int
	total   int
	caching bool
	// dropLastHit gives back the last block of every prefix-cache hit, as
	// vLLM does for the EAGLE-style proposers (KVCacheManager's use_eagle:
	// FullAttentionManager.find_longest_cache_hit pops the last matched
	// block so that the drafter gets the target's hidden states of it).
	dropLastHit bool
	// unitsFn gives the blocks a sequence of n tokens holds (ceil(n/bs), or
	// capped for sliding-window models); shift is log2(bs) when that is
	// ceil(n/bs) and bs a power of two (-1 otherwise): a shift, not a call.
	unitsFn func(n int) int
	shift   int

	// blocks are the blocks ever used, in the order first used: the free
	// queue is the blocks never used (len(blocks) to total, in order),
	// then the list from head to tail. That is vLLM's queue, which starts
	// with every block in order and takes from the front, without touching
	// blocks a run never reaches.
	blocks  []kvBlock
	head    int32 // first block of the list to evict/reuse; -1 when empty
	tail    int32
	numFree int
	byHash  *blockIndex

	hitTokens, queryTokens int64
	hits                   []int32 // scratch for lookup

	// Block tables and hash lists of finished requests, reused by the
	// requests that come after (retire, spare): a request's bookkeeping
	// then allocates nothing in a steady run.
	tables [][]int32
	hashes [][]uint64
}

type kvBlock struct {
	hash       uint64
	hashed     bool
	ref        int32
	prev, next int32 // free-queue links, -1 at the ends; prev = -2 when not queued
}

const notQueued = -2

// units is the number of blocks a sequence of n tokens holds.
func (c *kvCache) units(n int) int {
	if c.shift >= 0 {
		return (n + c.bs - 1) >> c.shift
	}
	if c.unitsFn != nil {
		return c.unitsFn(n)
	}
	return (n + c.bs - 1) / c.bs
}

// initialBlocks is the block records a cache starts with room for (6 KB:
// a run may hold thousands of ranks).
const initialBlocks = 1 << 8

// newKVCache returns a cache of total blocks; units, if set, replaces
// ceil(n/blockSize) as the blocks n tokens hold.
func newKVCache(total, blockSize int, caching bool, units func(int) int) *kvCache {
	// blocks grows as blocks are first used: a run touches only the blocks
	// its requests fill, however large the pool (Config.Validate bounded it).
	c := &kvCache{bs: blockSize, total: total, caching: caching, unitsFn: units, shift: -1,
		blocks: make([]kvBlock, 0, min(total, initialBlocks)), head: -1, tail: -1, numFree: total}
	if units == nil && blockSize&(blockSize-1) == 0 {
		c.shift = bits.TrailingZeros(uint(blockSize))
	}
	if caching {
		c.byHash = newBlockIndex(func(b int32) uint64 { return c.blocks[b].hash })
	}
	return c
}

// take removes the first block of the free queue and gives it one
// reference (the caller has checked that one is free).
func (c *kvCache) take() int32 {
	if n := len(c.blocks); n < c.total {
		c.blocks = append(c.blocks, kvBlock{ref: 1, prev: notQueued, next: -1})
		c.numFree--
		return int32(n)
	}
	b := c.head
	c.unlink(b)
	blk := &c.blocks[b]
	if blk.hashed {
		c.byHash.del(blk.hash, b)
		blk.hashed = false
	}
	blk.ref = 1
	return b
}

// freeQueue lists the free queue in order (for tests).
func (c *kvCache) freeQueue() []int32 {
	var q []int32
	for b := len(c.blocks); b < c.total; b++ {
		q = append(q, int32(b))
	}
	for b := c.head; b >= 0; b = c.blocks[b].next {
		q = append(q, b)
	}
	return q
}

func (c *kvCache) pushTail(b int32) {
	blk := &c.blocks[b]
	blk.prev, blk.next = c.tail, -1
	if c.tail >= 0 {
		c.blocks[c.tail].next = b
	} else {
		c.head = b
	}
	c.tail = b
	c.numFree++
}

func (c *kvCache) unlink(b int32) {
	blk := &c.blocks[b]
	if blk.prev >= 0 {
		c.blocks[blk.prev].next = blk.next
	} else {
		c.head = blk.next
	}
	if blk.next >= 0 {
		c.blocks[blk.next].prev = blk.prev
	} else {
		c.tail = blk.prev
	}
	blk.prev, blk.next = notQueued, -1
	c.numFree--
}

// usage is the fraction of blocks referenced by requests (vLLM's
// kv_cache_usage_perc: cached but unreferenced blocks count as free).
func (c *kvCache) usage() float64 { return 1 - float64(c.numFree)/float64(c.total) }

// ensureHashes computes the chain hashes of r's full blocks up to n tokens.
func (c *kvCache) ensureHashes(r *request, n int) {
	full := n / c.bs
	if r.hashes == nil && full > 0 {
		// Sized once for the whole request when the engine first needs
		// it (not while it waits), so hashing never regrows it.
		r.hashes = spare(&c.hashes, max((r.input+r.output)/c.bs+1, full))
	}
	for len(r.hashes) < full {
		prev := uint64(0x51ed270b1a5c0de)
		if k := len(r.hashes); k > 0 {
			prev = r.hashes[k-1]
		}
		h := mix(prev, r.blockContent(c.bs))
		if h == 0 {
			h = 1 // 0 marks an empty slot of the block index
		}
		r.hashes = append(r.hashes, h)
	}
}

// blockContent hashes the next bs tokens of r's sequence (prompt segments,
// then its output), advancing r.hashPos.
func (r *request) blockContent(bs int) uint64 {
	h := uint64(0)
	need := bs
	for need > 0 {
		var id uint64
		var segLen int
		if r.hashPos.seg < len(r.segs) {
			s := r.segs[r.hashPos.seg]
			id, segLen = s.id, s.len
		} else {
			id, segLen = r.outSeg, 1<<62
		}
		take := min(need, segLen-r.hashPos.off)
		h = mix(mix(mix(h, id), uint64(r.hashPos.off)), uint64(take))
		need -= take
		r.hashPos.off += take
		if r.hashPos.off == segLen {
			r.hashPos.seg++
			r.hashPos.off = 0
		}
	}
	return h
}

// lookup returns the cached blocks holding r's leading tokens. At least one
// token is always left to compute, as in vLLM.
func (c *kvCache) lookup(r *request) []int32 {
	c.hits = c.hits[:0]
	if !c.caching {
		return c.hits
	}
	n := r.numTokens()
	c.queryTokens += int64(n)
	// Unregistered private blocks cannot be hit: the lookup stops before
	// them, without hashing them.
	maxHit := min((n-1)/c.bs, c.privateBlock(r))
	c.ensureHashes(r, maxHit*c.bs)
	for i := 0; i < maxHit; i++ {
		b, ok := c.byHash.get(r.hashes[i])
		if !ok {
			break
		}
		c.hits = append(c.hits, b)
	}
	if c.dropLastHit && len(c.hits) > 0 {
		c.hits = c.hits[:len(c.hits)-1]
	}
	c.hitTokens += int64(len(c.hits) * c.bs)
	return c.hits
}

// allocate gives r the blocks to hold upto tokens, first taking the cached
// blocks in hits (which must follow r's current table). It changes nothing
// and returns false when the free blocks do not suffice.
func (c *kvCache) allocate(r *request, hits []int32, upto int) bool {
	need := c.units(upto) - len(r.blocks) - len(hits)
	touch := 0
	for _, b := range hits {
		if c.blocks[b].ref == 0 {
			touch++
		}
	}
	if max(need, 0)+touch > c.numFree {
		return false
	}
	if r.blocks == nil {
		// Size the table for the whole request once (a preempted or
		// handed-off request keeps or regrows it).
		r.blocks = spare(&c.tables, max(c.units(r.input+r.output), need+len(hits)))
	}
	for _, b := range hits {
		blk := &c.blocks[b]
		if blk.ref == 0 {
			c.unlink(b)
		}
		blk.ref++
		r.blocks = append(r.blocks, b)
	}
	r.cached += len(hits)
	for ; need > 0; need-- {
		r.blocks = append(r.blocks, c.take())
	}
	return true
}

// commit registers r's newly completed full blocks in the prefix cache.
func (c *kvCache) commit(r *request) {
	if !c.caching {
		return
	}
	full := min(r.computed/c.bs, len(r.blocks))
	if full <= r.cached {
		return
	}
	c.register(r, r.cached, min(full, c.privateBlock(r)))
	r.cached = full // private blocks wait for registerPrivate
}

// register puts blocks from..to-1 of r's table in the prefix cache.
func (c *kvCache) register(r *request, from, to int) {
	if to <= from {
		return
	}
	c.ensureHashes(r, to*c.bs)
	for i := from; i < to; i++ {
		h := r.hashes[i]
		blk := &c.blocks[r.blocks[i]]
		if blk.hashed || !c.byHash.putNew(h, r.blocks[i]) {
			continue // a block already holds it (or this one holds another)
		}
		blk.hash, blk.hashed = h, true
	}
}

// privateBlock is the first block of r's table that commit leaves
// unregistered: the first holding a private token of a lazy request.
func (c *kvCache) privateBlock(r *request) int {
	if !r.lazy {
		return math.MaxInt
	}
	return int(r.private) / c.bs
}

// registerPrivate registers the private blocks r committed but commit left
// out, before r gives its blocks up without finishing (preemption, the
// hand-off to a decode pool): r may look them up or commit them again
// later, and the prefix cache must then hold what it would hold had each
// been registered when it filled. Until then no lookup can hit them (no
// other request has their content) and no other registration can collide
// with them, so registering them late changes nothing else; from here on r
// registers every block as it fills. A finished request never needs them.
func (c *kvCache) registerPrivate(r *request) {
	if !r.lazy {
		return
	}
	if c.caching {
		c.register(r, c.privateBlock(r), r.cached)
	}
	r.lazy = false
}

// release drops r's references, tail blocks first so they are evicted
// first (vLLM frees a request's blocks in reverse order).
func (c *kvCache) release(r *request) {
	for i := len(r.blocks) - 1; i >= 0; i-- {
		b := r.blocks[i]
		blk := &c.blocks[b]
		blk.ref--
		if blk.ref == 0 {
			c.pushTail(b)
		}
	}
	r.blocks = r.blocks[:0]
	r.cached = 0
}

// retire keeps the block table and hash list of r, finished and released,
// for the requests to come.
func (c *kvCache) retire(r *request) {
	if r.blocks != nil {
		c.tables = append(c.tables, r.blocks[:0])
		r.blocks = nil
	}
	if r.hashes != nil {
		c.hashes = append(c.hashes, r.hashes[:0])
		r.hashes = nil
	}
}

// spare is an empty slice of capacity n or more from a pool of retired
// ones (block tables, hash lists): the latest retired when it is large
// enough.
func spare[T any](pool *[][]T, n int) []T {
	if k := len(*pool) - 1; k >= 0 {
		t := (*pool)[k]
		(*pool)[k] = nil
		*pool = (*pool)[:k]
		if cap(t) >= n {
			return t
		}
	}
	return make([]T, 0, n)
}

// referenced counts blocks with at least one reference (for invariants).
func (c *kvCache) referenced() int {
	n := 0
	for i := range c.blocks {
		if c.blocks[i].ref > 0 {
			n++
		}
	}
	return n
}

// mix combines a hash with a value (splitmix64 finaliser).
func mix(h, v uint64) uint64 {
	z := h ^ (v + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2))
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
