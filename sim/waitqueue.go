package sim

import "encoding/binary"

// waitQueue is a queue of requests in order: an engine rank's waiting
// queue, or an instance's requests on their way through the API server.
// Its head holds requests; behind parkAfter of them, requests that arrive
// and have never run are parked: a few bytes each in a pointer-free log,
// their request structs handed back to the pool, and rebuilt as the
// scheduler (or the engine) reaches them. A backlog then costs about 15
// bytes a request (15.4 for the 512/256 benchmark workload) instead of the
// 272 of a request and its segments, so a day of traffic past capacity
// fits in the memory of one that is not. A parked request comes back field
// for field as it went (TestParkedRequestsComeBackAsTheyWent).
type waitQueue struct {
	head deque
	park *parking // nil: nothing is parked (disaggregated pools, tests)
}

// parkAfter is the head length beyond which arrivals are parked: more than
// one step's scheduling pass reads (it stops at the token budget, the seats
// or the free blocks).
const parkAfter = 4096

func (q *waitQueue) len() int {
	if q.park == nil {
		return q.head.len()
	}
	return q.head.len() + q.park.n
}

// at returns the i-th waiting request, rebuilding parked ones up to it.
func (q *waitQueue) at(i int) *request {
	for i >= q.head.len() {
		q.head.pushBack(q.park.pop())
	}
	return q.head.at(i)
}

func (q *waitQueue) front() *request { return q.at(0) }

func (q *waitQueue) popFront() *request {
	q.at(0)
	return q.head.popFront()
}

func (q *waitQueue) removeAt(i int) *request {
	q.at(i)
	return q.head.removeAt(i)
}

// pushFront puts a preempted request first.
func (q *waitQueue) pushFront(r *request) { q.head.pushFront(r) }

// pushBack queues an arrival.
func (q *waitQueue) pushBack(r *request) {
	if p := q.park; p != nil && (p.n > 0 || q.head.len() >= p.after) {
		p.push(r)
		return
	}
	q.head.pushBack(r)
}

// insertAt puts r at index k (0 ≤ k ≤ len).
func (q *waitQueue) insertAt(k int, r *request) {
	if k > 0 {
		q.at(k - 1)
	}
	q.head.insertAt(k, r)
}

// parking is the parked tail of a waitQueue: records in arrival order,
// each a flags byte and varints (serial and send time as deltas from the
// record before), in chunks read from the front. A request the record
// cannot rebuild exactly is kept as itself in refs, its place in the log
// marked, so the order holds whatever arrives.
type parking struct {
	after  int     // park behind this many requests (parkAfter)
	rank   int32   // the r.replica of its requests: the rank, or the instance in an API server's queue
	d      *driver // for the segment ids it rebuilds
	pool   *reqPool
	chunks [][]byte
	off    int // read offset in chunks[0]
	n      int // requests parked
	refs   deque
	spare  []byte // an emptied chunk, for the next

	wSerial, wSent, rSerial, rSent int64 // delta bases, writer and reader

	// check sees every request parked, then every one rebuilt and
	// whether from its record (tests)
	check func(parked, rebuilt *request, fromRecord bool)
}

const (
	parkChunk = 64 << 10

	parkRef    = 1 << 0 // the next of refs
	parkWarmup = 1 << 1
	parkLazy   = 1 << 2
	parkPrefix = 1 << 3 // segs[0] is a shared prefix, written out
)

func newParking(d *driver, rank int32, pool *reqPool) *parking {
	return &parking{after: parkAfter, rank: rank, d: d, pool: pool}
}

// parkable reports whether record can rebuild r: a request of no session,
// queued here and never run, whose segments are its own text
// behind at most one shared prefix.
func (p *parking) parkable(r *request) bool {
	if r.sess != nil || r.pd != nil || r.place != p.rank || r.scheduled != -1 || r.firstToken != -1 ||
		r.computed != 0 || r.generated != 0 || r.cached != 0 || r.lastToken != 0 || r.drafts != 0 || r.verify != 0 ||
		r.swapped || r.blocks != nil || r.hashes != nil || r.hashPos != (segCursor{}) || r.swapBlocks != 0 ||
		r.engineFirst != 0 || r.serverFirst != 0 || r.preemptions != 0 || r.hitTokens != 0 ||
		r.stage < 0 || r.input < 0 || r.output < 0 || r.arrival < r.sent || r.outSeg != p.d.segID(segOutput, r.serial) {
		return false
	}
	user := segment{id: p.d.segID(segUser, r.serial)}
	switch len(r.segs) {
	case 1:
		user.len = r.input
	case 2:
		user.len = r.input - r.segs[0].len
		if r.segs[0].len < 0 {
			return false
		}
	default:
		return false
	}
	if r.segs[len(r.segs)-1] != user {
		return false
	}
	return !r.lazy || int(r.private) == r.input-user.len
}

func (p *parking) push(r *request) {
	var rec [96]byte
	b := rec[:1]
	if !p.parkable(r) {
		rec[0] = parkRef
		p.refs.pushBack(r)
	} else {
		if r.warmup {
			rec[0] |= parkWarmup
		}
		if r.lazy {
			rec[0] |= parkLazy
		}
		b = binary.AppendVarint(b, r.serial-p.wSerial)
		b = binary.AppendVarint(b, r.sent-p.wSent)
		b = binary.AppendUvarint(b, uint64(r.arrival-r.sent))
		b = binary.AppendUvarint(b, uint64(r.input))
		b = binary.AppendUvarint(b, uint64(r.output))
		b = binary.AppendUvarint(b, uint64(r.stage))
		b = binary.AppendVarint(b, int64(r.client))
		if len(r.segs) == 2 {
			rec[0] |= parkPrefix
			b = binary.LittleEndian.AppendUint64(b, r.segs[0].id)
			b = binary.AppendUvarint(b, uint64(r.segs[0].len))
		}
		p.wSerial, p.wSent = r.serial, r.sent
	}
	k := len(p.chunks) - 1
	if k < 0 || len(p.chunks[k])+len(b) > cap(p.chunks[k]) {
		c := p.spare
		p.spare = nil
		if c == nil {
			c = make([]byte, 0, parkChunk)
		}
		p.chunks = append(p.chunks, c)
		k++
	}
	p.chunks[k] = append(p.chunks[k], b...)
	p.n++
	if p.check != nil {
		p.check(r, nil, false)
	}
	if rec[0]&parkRef == 0 {
		p.pool.put(r) // its record holds it now
	}
}

// pop rebuilds the first parked request.
func (p *parking) pop() *request {
	c := p.chunks[0]
	flags := c[p.off]
	p.off++
	var r *request
	if flags&parkRef != 0 {
		r = p.refs.popFront()
	} else {
		var segs []segment
		r, segs = p.pool.get()
		r.scheduled, r.firstToken, r.place = -1, -1, p.rank
		r.serial = p.rSerial + p.varint(c)
		r.sent = p.rSent + p.varint(c)
		r.arrival = r.sent + int64(p.uvarint(c))
		r.input = int(p.uvarint(c))
		r.output = int(p.uvarint(c))
		r.stage = int32(p.uvarint(c))
		r.client = int32(p.varint(c))
		r.warmup = flags&parkWarmup != 0
		r.outSeg = p.d.segID(segOutput, r.serial)
		user := segment{id: p.d.segID(segUser, r.serial), len: r.input}
		if flags&parkPrefix != 0 {
			pre := segment{id: binary.LittleEndian.Uint64(c[p.off:])}
			p.off += 8
			pre.len = int(p.uvarint(c))
			user.len -= pre.len
			r.segs = append(segs, pre, user)
		} else {
			r.segs = append(segs, user)
		}
		if flags&parkLazy != 0 {
			r.private, r.lazy = int32(r.input-user.len), true
		}
		p.rSerial, p.rSent = r.serial, r.sent
	}
	p.n--
	if p.off == len(c) {
		p.chunks[0] = nil
		p.chunks = p.chunks[1:]
		p.off = 0
		if p.spare == nil {
			p.spare = c[:0]
		}
	}
	if p.check != nil {
		p.check(nil, r, flags&parkRef == 0)
	}
	return r
}

func (p *parking) varint(c []byte) int64 {
	v, n := binary.Varint(c[p.off:])
	p.off += n
	return v
}

func (p *parking) uvarint(c []byte) uint64 {
	v, n := binary.Uvarint(c[p.off:])
	p.off += n
	return v
}
