package sim

// Time is simulated time in nanoseconds since the start of the run.
type Time = int64

const (
	nsPerSecond = int64(1e9)
	nsPerMS     = 1e6
)

// segment is a run of tokens with a shared identity: a shared prefix, one
// turn's user text, one request's output. Blocks whose tokens come from the
// same segments at the same offsets have the same content.
type segment struct {
	id  uint64
	len int
}

// request is one request's state inside the simulator. The fields every
// step reads or writes of every running request come first, in one 64-byte
// cache line.
type request struct {
	computed  int  // tokens whose KV is computed (vLLM num_computed_tokens)
	generated int  // output tokens produced
	input     int  // prompt tokens, all of them
	output    int  // tokens to generate
	lastToken Time // the client received the latest token
	cached    int  // leading blocks of the table already registered in the prefix cache
	// speculative decoding (speculative.go): drafts proposed for the next
	// step, and drafts being verified in the current one
	drafts, verify int32
	stage          int32
	warmup         bool // a warm-up request: run, but left out of every statistic
	swapped        bool // preempted by swap: its KV sits in CPU memory
	// lazy: blocks holding a token from private on are not registered in
	// the prefix cache until the request could look them up again
	// (kvCache.registerPrivate); no other request can hit them.
	lazy bool
	// coStart: its first token came out of the same engine step as
	// another request's (Report.CoStartedRatio).
	coStart bool

	blocks     []int32  // block table
	hashes     []uint64 // chain hashes of the first len(hashes) full blocks
	hashPos    segCursor
	swapBlocks int32 // blocks it holds in the swap space
	client     int32 // closed-loop client, -1 for open loop

	serial  int64 // order of creation, unique
	sess    *session
	sent    Time // the client sent it
	arrival Time // the engine received it: after the network, the API server and the tokenizer

	segs   []segment
	outSeg uint64 // segment id of this request's output tokens

	scheduled   Time // first time scheduled, -1 before
	firstToken  Time // the client received the first token, -1 before
	engineFirst Time // the engine produced the first token
	serverFirst Time // the API server began the output batch with the first token (vLLM's TTFT clock)
	preemptions int32
	place       int32 // the instance it was routed to, then the rank that took it
	hitTokens   int32 // prompt tokens served from the prefix cache at first admission
	// private is the offset of the first token no other request can
	// share (its own prompt text and answer, when no later turn repeats
	// them); see lazy.
	private int32

	pd *pdState // its trip through a disaggregated run's pools (nil otherwise)
}

// numTokens is the sequence length the engine must have computed before it
// samples the next token: the prompt plus every output token so far.
func (r *request) numTokens() int { return r.input + r.generated }

// segCursor walks a request's token sequence block by block for hashing.
type segCursor struct {
	seg int // index into segs (len(segs) = the output segment)
	off int // offset inside it
}

// session links the turns of a multi-turn conversation.
type session struct {
	id        int64
	turnsLeft int
	client    int32
	context   []segment // the conversation so far: earlier prompts and answers
	prefix    []segment // shared prefix, if any
}

// reqPool hands finished requests' structs to new requests: a long run
// then allocates a request only when more are in flight than ever before,
// and the collector has little to do.
type reqPool struct {
	free []*request
	on   bool // off in disaggregated runs, whose events may still name a request after it finishes
}

// maxPooled bounds the structs kept for reuse.
const maxPooled = 1 << 16

// get returns a zeroed request, and the segment slice of the struct's
// last use for the new request's segments (empty, maybe with room).
func (p *reqPool) get() (*request, []segment) {
	k := len(p.free) - 1
	if k < 0 {
		return &request{}, nil
	}
	r := p.free[k]
	p.free[k] = nil
	p.free = p.free[:k]
	segs := r.segs[:0]
	*r = request{}
	return r, segs
}

// put takes r, finished and named by nothing the run will read again.
func (p *reqPool) put(r *request) {
	if p.on && len(p.free) < maxPooled {
		p.free = append(p.free, r)
	}
}
