package sim

// eventKind orders events that happen at the same time: arrivals and client
// wake-ups first, then step completions, then scheduling attempts, so a
// step that starts at time t sees every request that arrived at t.
type eventKind uint8

const (
	evArrival  eventKind = iota // the driver's next open-loop arrival
	evWake                      // a client's think time ends, or a delayed send
	evDeliver                   // a request reaches the API server (after half the round trip)
	evTokenize                  // an API server's tokenizer batch reaches its deadline (frontend.go)
	evEngine                    // a request reaches its engine rank (after the API server)
	evPD                        // a step of a request's trip through disaggregated pools (pdpool.go)
	evStepEnd                   // a rank's step (or a lock-stepped instance's) completes
	evStage                     // a stage of a staged load begins
	evKick                      // a rank (or lock-stepped instance) should try to schedule
	evTick                      // time-series sample at a whole second
	evScale                     // the autoscaler evaluates its policy (autoscale.go)
	evReady                     // an instance the autoscaler started takes requests
)

type event struct {
	t    Time
	kind eventKind
	seq  uint64
	// target is what the event is for: the rank (evStepEnd, evKick), or
	// -1 − the instance of a lock-stepped group; the instance (evEngine,
	// evTokenize, evPD, evReady).
	target int32
	client int32
	req    *request
	sess   *session
}

func (a *event) less(b *event) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.seq < b.seq
}

// eventQueue is a binary min-heap of events by (time, kind, sequence).
type eventQueue struct {
	items []event
	seq   uint64
}

func (q *eventQueue) len() int { return len(q.items) }

func (q *eventQueue) push(e event) {
	q.seq++
	e.seq = q.seq
	q.items = append(q.items, e)
	i := len(q.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.items[i].less(&q.items[p]) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

func (q *eventQueue) pop() event {
	top := q.items[0]
	n := len(q.items) - 1
	q.items[0] = q.items[n]
	q.items = q.items[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q.items[r].less(&q.items[l]) {
			m = r
		}
		if !q.items[m].less(&q.items[i]) {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return top
}

// deque is a FIFO of requests that also takes requests back at the front
// (preempted requests go first).
type deque struct {
	buf        []*request
	head, size int
}

func (d *deque) len() int { return d.size }

func (d *deque) grow() {
	n := max(16, 2*len(d.buf))
	nb := make([]*request, n)
	for i := 0; i < d.size; i++ {
		nb[i] = d.buf[(d.head+i)%len(d.buf)]
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(r *request) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.size)%len(d.buf)] = r
	d.size++
}

func (d *deque) pushFront(r *request) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = r
	d.size++
}

func (d *deque) front() *request { return d.buf[d.head] }

func (d *deque) at(i int) *request { return d.buf[(d.head+i)%len(d.buf)] }

func (d *deque) popFront() *request {
	r := d.buf[d.head]
	d.buf[d.head] = nil
	d.head = (d.head + 1) % len(d.buf)
	d.size--
	return r
}

// removeAt removes the i-th request, keeping the order of the rest.
func (d *deque) removeAt(i int) *request {
	r := d.at(i)
	for j := i; j > 0; j-- {
		d.buf[(d.head+j)%len(d.buf)] = d.buf[(d.head+j-1)%len(d.buf)]
	}
	d.buf[d.head] = nil
	d.head = (d.head + 1) % len(d.buf)
	d.size--
	return r
}
