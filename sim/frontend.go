package sim

import "github.com/headroom-sim/headroom/sim/steptime"

// frontend is an instance's API server as vLLM runs it (see
// ../shared/docs/vllm-request-path.md): one event loop that parses each
// request and hands it to the engine, and that turns every engine step's
// output message into streamed events, one request after another; and one
// tokenizer thread shared by all requests. Both are first-come
// first-served servers: work waits while they are busy, which is what
// spreads a burst of simultaneous requests over time and delays tokens
// when many requests stream at once.
type frontend struct {
	coef       steptime.FrontendCoeffs
	scale      float64 // the profile's overhead scale
	loopFree   Time    // the event loop is busy until then
	tokenFree  Time    // the tokenizer thread is busy until then
	busyNS     int64   // event-loop time spent, for the report
	tokenizeNS int64
}

func usToNS(us, scale float64) Time { t, _ := toClock(us*scale, 1e3); return t }

// admit runs a request that reached the API server at t through parsing
// and tokenisation; it returns when the engine receives it.
func (f *frontend) admit(t Time, promptTokens int) Time {
	start := max(t, f.loopFree)
	d := usToNS(f.coef.RequestUS, f.scale)
	f.loopFree = start + d
	f.busyNS += d
	tokStart := max(f.loopFree, f.tokenFree)
	td := usToNS(f.coef.PerPromptTokenUS*float64(promptTokens), f.scale)
	f.tokenFree = tokStart + td
	f.tokenizeNS += td
	return f.tokenFree
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
