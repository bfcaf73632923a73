package sim

import "github.com/headroom-sim/headroom/sim/steptime"

// frontend is an instance's API server as vLLM runs it (see
// ../shared/docs/vllm-request-path.md): one event loop that parses each
// request and hands it to the engine, and that turns every engine step's
// output message into streamed events, one request after another; and one
// tokenizer thread shared by all requests, fed in micro-batches. Both are
// first-come first-served servers: work waits while they are busy, which
// is what spreads a burst of simultaneous requests over time and delays
// tokens when many requests stream at once. A request's own times on the
// path (its parse, its client's send and receive) are drawn per request
// (requestpath.go).
type frontend struct {
	coef       steptime.FrontendCoeffs
	scale      float64 // the profile's overhead scale
	seed       uint64  // the run's, for the per-request draws
	loopFree   Time    // the event loop is busy until then
	tokenFree  Time    // the tokenizer thread is busy until then
	busyNS     int64   // event-loop time spent, for the report
	tokenizeNS int64
	tok        tokBatch
}

// tokBatch is the tokenizer's batch being collected (vLLM's
// AsyncMicrobatchTokenizer._batch_encode_loop): it opened when its first
// prompt reached the thread, and takes every prompt that comes before its
// deadline, up to its size.
type tokBatch struct {
	open     bool
	gen      int32 // tells a deadline event of this batch from an earlier one's
	deadline Time
	longest  int // the batch's longest prompt, in tokens
	members  []tokMember
}

// tokMember is a prompt in the batch and where it goes when encoded.
type tokMember struct {
	r    *request
	then admitted
}

// admitted says where a request goes once the API server has handed it on.
type admitted uint8

const (
	toEngine      admitted = iota // its instance's engine ranks
	toPrefillPool                 // a prefill engine of a disaggregated run
	toDecodePool                  // a decode engine of a disaggregated run
)

func usToNS(us, scale float64) Time { t, _ := toClock(us*scale, 1e3); return t }

// window is the tokenizer's collection window (0: no batching) and size
// its largest batch.
func (f *frontend) window() (window Time, size int) {
	size = f.coef.TokenizerBatch
	if size <= 0 {
		size = 32
	}
	return usToNS(f.coef.TokenizerWindowUS, f.scale), size
}

// parse runs request r, which reached the API server at t, through the
// event loop's per-request work; it returns when the prompt reaches the
// tokenizer thread.
func (f *frontend) parse(t Time, r *request) Time {
	start := max(t, f.loopFree)
	d := pathTime(f.seed, r.serial, pathRequest, f.coef.RequestUS, f.coef.RequestSigma, f.scale)
	f.loopFree = start + d
	f.busyNS += d
	return f.loopFree
}

// encodeTime is the tokenizer's time for n prompt tokens.
func (f *frontend) encodeTime(n int) Time {
	return usToNS(f.coef.PerPromptTokenUS*float64(n), f.scale)
}

// admit runs request r, which reached the API server at t, through
// parsing and tokenisation, and sends it on (then) when the engine
// receives it: at once without a tokenizer window, else when its batch is
// encoded.
func (s *Simulator) admit(in *instance, t Time, r *request, then admitted) {
	f := &in.front
	at := f.parse(t, r)
	window, size := f.window()
	if window <= 0 {
		start := max(at, f.tokenFree)
		d := f.encodeTime(r.input)
		f.tokenFree = start + d
		f.tokenizeNS += d
		s.handOn(in, r, f.tokenFree, then)
		return
	}
	b := &f.tok
	if b.open && at >= b.deadline {
		// Prompts reach the thread in the order the loop parsed them:
		// no later one can make this batch.
		s.encodeBatch(in, b.deadline)
	}
	if !b.open {
		b.open, b.gen = true, b.gen+1
		b.deadline = max(at, f.tokenFree) + window
		s.push(event{t: b.deadline, kind: evTokenize, target: in.id, client: b.gen})
	}
	b.members = append(b.members, tokMember{r, then})
	b.longest = max(b.longest, r.input)
	if len(b.members) >= size {
		s.encodeBatch(in, max(at, f.tokenFree))
	}
}

// tokenizerDeadline closes instance in's batch gen at its deadline t.
func (s *Simulator) tokenizerDeadline(in *instance, gen int32, t Time) {
	if b := &in.front.tok; b.open && b.gen == gen {
		s.encodeBatch(in, t)
	}
}

// encodeBatch encodes the open batch of in, closed at t, in one call, and
// hands its prompts on together when it is done. The call encodes the
// prompts in parallel (Hugging Face tokenizers' encode_batch runs one
// prompt per thread of its pool), so it lasts as long as the longest
// prompt's encoding.
func (s *Simulator) encodeBatch(in *instance, t Time) {
	f := &in.front
	b := &f.tok
	start := max(t, f.tokenFree)
	d := f.encodeTime(b.longest)
	f.tokenFree = start + d
	f.tokenizeNS += d
	for i, m := range b.members {
		s.handOn(in, m.r, f.tokenFree, m.then)
		b.members[i] = tokMember{}
	}
	b.open, b.members, b.longest = false, b.members[:0], 0
}

// handOn sends r on to where then says, reaching it at at.
func (s *Simulator) handOn(in *instance, r *request, at Time, then admitted) {
	switch then {
	case toEngine:
		// The instance's engine arrivals come in the order they were
		// handed on (these times never decrease, and equal times keep
		// the order their events were pushed in): the event names the
		// instance, its queue the request.
		r.arrival = at
		in.toEngine.pushBack(r)
		s.push(event{t: at, kind: evEngine, target: in.id})
	case toPrefillPool:
		s.push(event{t: at, kind: evPD, client: pdPrefillEngine, target: in.id, req: r})
	case toDecodePool:
		s.push(event{t: at, kind: evPD, client: pdDecodeEngine, req: r})
	}
}

// outputs processes one engine step's output message, which reached the
// API server at t with n requests' new tokens: it returns when the loop
// begins it (vLLM's iteration timestamp, the server-side clock of first
// tokens) and the time each request's event is written, request i after
// the i before it.
func (f *frontend) outputs(t Time, n int) (begin Time, per func(i int) Time) {
	begin, first, tok := f.batch(t, n)
	return begin, func(i int) Time { return first + tok*Time(i) }
}

// batchStart is batch before the batch's size is known: when the loop
// begins it, and when it writes request 0's event and the spacing after.
// batchEnd(begin, n) then charges the loop for it.
func (f *frontend) batchStart(t Time) (begin, first, tok Time) {
	begin = max(t, f.loopFree)
	tok = usToNS(f.coef.PerOutputTokenUS, f.scale)
	return begin, begin + usToNS(f.coef.PerStepUS, f.scale) + tok, tok
}

// batchEnd charges the loop, which began at begin, for n requests' events.
func (f *frontend) batchEnd(begin Time, n int) {
	d := usToNS(f.coef.PerStepUS, f.scale) + usToNS(f.coef.PerOutputTokenUS, f.scale)*Time(n)
	f.loopFree = begin + d
	f.busyNS += d
}

// batch is outputs without the closure: request i's event is written at
// first + tok·i.
func (f *frontend) batch(t Time, n int) (begin, first, tok Time) {
	begin = max(t, f.loopFree)
	step := usToNS(f.coef.PerStepUS, f.scale)
	tok = usToNS(f.coef.PerOutputTokenUS, f.scale)
	d := step + tok*Time(n)
	f.loopFree = begin + d
	f.busyNS += d
	return begin, begin + step + tok, tok
}
