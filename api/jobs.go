package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headroom-sim/headroom/internal/study/plan"
)

// JobState is where a job is in its life.
type JobState string

// Job states. A job is queued, then running, then one of the three final
// states; a queued job may go straight to cancelled.
const (
	JobQueued    JobState = "queued"
	JobRunning   JobState = "running"
	JobSucceeded JobState = "succeeded"
	JobFailed    JobState = "failed"
	JobCancelled JobState = "cancelled"
)

// JobStates lists every state.
var JobStates = []JobState{JobQueued, JobRunning, JobSucceeded, JobFailed, JobCancelled}

func (s JobState) final() bool { return s == JobSucceeded || s == JobFailed || s == JobCancelled }

// Runner does one kind of job. It must return promptly once ctx ends, and
// may report progress (0–1). Its result is encoded as JSON once, when the
// job ends, and kept as those bytes; a Noted result adds notes to the
// job's view.
type Runner func(ctx context.Context, params json.RawMessage, progress func(float64)) (any, error)

// Noted is a runner's result with notes for its job's view: what the
// server changed in it, such as a time series it coarsened.
type Noted struct {
	Value any
	Notes []string
}

// Check validates a job's params at submission, so bad input is a 4xx of
// POST /v1/jobs rather than a failed job. It may be nil.
type Check func(params json.RawMessage) error

type jobKind struct {
	run   Runner
	check Check
}

// JobOptions size a JobManager.
type JobOptions struct {
	Workers     int
	QueueSize   int
	ResultTTL   time.Duration
	MaxFinished int
	// Timeout bounds one job's run.
	Timeout time.Duration
	// MaxResultBytes bounds one job's encoded result (the job fails with
	// *ResultTooLargeError beyond it; 0: no bound). MaxResultsBytes bounds
	// the results kept together: the oldest finished jobs are dropped to
	// make room (0: no bound).
	MaxResultBytes  int64
	MaxResultsBytes int64
	Logger          *slog.Logger
	// OnTransition, if set, is told of every state change: from is "" for a
	// new job, to is "" for one dropped after its TTL.
	OnTransition func(kind string, from, to JobState)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// JobManager runs jobs of registered kinds on a bounded worker pool fed by
// a bounded queue, and keeps finished jobs for a while.
type JobManager struct {
	opt   JobOptions
	mu    sync.Mutex
	kinds map[string]jobKind
	jobs  map[string]*job
	seq   int64
	queue chan *job
	// base is the parent of every job's context; stop cancels them all.
	base    context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	started bool
	closed  bool
	// meanRunS is a moving average of run times, for Retry-After.
	meanRunS float64
	// resultBytes is the size of the results kept.
	resultBytes int64
}

type job struct {
	id, kind string
	seq      int64
	params   json.RawMessage
	state    JobState
	progress atomic.Uint64 // float64 bits
	created  time.Time
	started  time.Time
	finished time.Time
	// result is the encoded result (compact JSON, never changed once set);
	// resultType its Go type, to decode it for a chart.
	result     []byte
	resultType reflect.Type
	notes      []string
	err        error
	cancel     context.CancelFunc
	// cancelled is set by Cancel: the run's end is then "cancelled".
	cancelled bool
	// held is what SubmitHeld handed over (the runner reads it with
	// heldValue), release what gives its memory back: called once the job
	// is final, however it ends.
	held    any
	release func()
}

// NewJobManager makes a manager; register kinds, then Start it.
func NewJobManager(opt JobOptions) *JobManager {
	if opt.Workers < 1 {
		opt.Workers = 1
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.OnTransition == nil {
		opt.OnTransition = func(string, JobState, JobState) {}
	}
	base, stop := context.WithCancel(context.Background())
	return &JobManager{
		opt: opt, kinds: map[string]jobKind{}, jobs: map[string]*job{},
		queue: make(chan *job, opt.QueueSize), base: base, stop: stop,
	}
}

// Register adds (or replaces) a job kind; New registers simulate, sweep,
// plan, curve, maxload, compare and calibrate. check may be nil.
func (m *JobManager) Register(kind string, run Runner, check Check) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kinds[kind] = jobKind{run: run, check: check}
}

// Kinds lists the registered kinds, sorted.
func (m *JobManager) Kinds() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.kinds))
	for k := range m.kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Start launches the workers.
func (m *JobManager) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.closed {
		return
	}
	m.started = true
	for range m.opt.Workers {
		m.wg.Go(m.work)
	}
}

// Submit checks params and queues a job. Errors: an unknown kind or the
// check's error, *QueueFullError, ErrShuttingDown.
func (m *JobManager) Submit(kind string, params json.RawMessage) (JobView, error) {
	return m.submit(kind, params, true, nil, nil)
}

// SubmitHeld queues a job whose input the caller has checked and holds in
// memory (held, which the runner reads with heldValue; params only record
// it): the job keeps it until it is final, then calls release. When
// SubmitHeld fails the caller still owns held and release.
func (m *JobManager) SubmitHeld(kind string, params json.RawMessage, held any, release func()) (JobView, error) {
	return m.submit(kind, params, false, held, release)
}

// heldKey carries a job's held value in its runner's context.
type heldKey struct{}

// heldValue is what SubmitHeld handed the job running under ctx (nil for
// a job submitted with Submit).
func heldValue(ctx context.Context) any { return ctx.Value(heldKey{}) }

func (m *JobManager) submit(kind string, params json.RawMessage, check bool, held any, release func()) (JobView, error) {
	m.mu.Lock()
	k, ok := m.kinds[kind]
	known := make([]string, 0, len(m.kinds))
	for name := range m.kinds {
		known = append(known, name)
	}
	m.mu.Unlock()
	if !ok {
		slices.Sort(known)
		return JobView{}, &ValidationError{Fields: []FieldProblem{{Field: "kind",
			Reason: fmt.Sprintf("unknown job kind %q (known: %s)", kind, strings.Join(known, ", "))}}}
	}
	if k.check != nil && check {
		if err := k.check(params); err != nil {
			return JobView{}, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return JobView{}, fmt.Errorf("%w: no new jobs", ErrShuttingDown)
	}
	m.evictLocked()
	m.seq++
	j := &job{id: rand.Text(), kind: kind, seq: m.seq, params: params, state: JobQueued, created: m.opt.Now(), held: held, release: release}
	select {
	case m.queue <- j:
	default:
		return JobView{}, &QueueFullError{RetryAfterS: m.retryAfterLocked()}
	}
	m.jobs[j.id] = j
	m.opt.OnTransition(kind, "", JobQueued)
	return j.view(false), nil
}

// retryAfterLocked estimates when a queue slot frees: the mean run time
// times the queued jobs per worker, at least a second.
func (m *JobManager) retryAfterLocked() int {
	mean := m.meanRunS
	if mean == 0 {
		mean = 1
	}
	s := mean * float64(len(m.queue)) / float64(m.opt.Workers)
	return int(min(max(math.Ceil(s), 1), 3600))
}

// Get returns a job with its result (the kept bytes, not a copy: never
// modify them).
func (m *JobManager) Get(id string) (JobView, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, err := m.lookupLocked(id)
	if err != nil {
		return JobView{}, err
	}
	return j.view(true), nil
}

// lookupLocked drops the expired jobs and finds id.
func (m *JobManager) lookupLocked(id string) (*job, error) {
	m.evictLocked()
	j, ok := m.jobs[id]
	if !ok {
		return nil, notFound("job %q: no such job here (finished jobs are kept for %s, and no job outlives the server process: one from before a restart is gone)", id, m.opt.ResultTTL)
	}
	return j, nil
}

// List returns every job, oldest first, without results.
func (m *JobManager) List() []JobView {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evictLocked()
	js := make([]*job, 0, len(m.jobs))
	for _, j := range m.jobs {
		js = append(js, j)
	}
	slices.SortFunc(js, func(a, b *job) int { return int(a.seq - b.seq) })
	out := make([]JobView, len(js))
	for i, j := range js {
		out[i] = j.view(false)
	}
	return out
}

// Result returns a succeeded job's result decoded into its Go type (as
// its runner returned it), for charts.
func (m *JobManager) Result(id string) (JobView, any, error) {
	m.mu.Lock()
	j, err := m.lookupLocked(id)
	if err != nil {
		m.mu.Unlock()
		return JobView{}, nil, err
	}
	v, t := j.view(true), j.resultType
	m.mu.Unlock()
	if v.State != JobSucceeded || t == nil {
		return v, nil, nil
	}
	ptr := t.Kind() == reflect.Pointer
	if ptr {
		t = t.Elem()
	}
	dst := reflect.New(t)
	if err := json.Unmarshal(v.Result, dst.Interface()); err != nil {
		return v, nil, fmt.Errorf("decode job %s result: %w", id, err)
	}
	if ptr {
		return v, dst.Interface(), nil
	}
	return v, dst.Elem().Interface(), nil
}

// Cancel stops or deletes a job: a queued one is cancelled at once, a
// running one once its runner returns (both stay listed, cancelled); a
// finished one is deleted, its result freed (deleted is then true). It is
// idempotent: a job a Cancel stopped answers every later Cancel as the
// first left it (it stays listed, cancelled, until its TTL), so two
// DELETEs crossing each other agree.
func (m *JobManager) Cancel(id string) (v JobView, deleted bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return JobView{}, false, notFound("job %q", id)
	}
	switch {
	case j.cancelled:
	case j.state == JobQueued:
		j.cancelled = true
		m.finishLocked(j, JobCancelled, nil, fmt.Errorf("cancelled by DELETE before it started: %w", context.Canceled))
	case j.state == JobRunning:
		j.cancelled = true
		j.cancel()
	default:
		v = j.view(false)
		m.dropLocked(j)
		return v, true, nil
	}
	return j.view(false), false, nil
}

// ResultBytes is the size of the results kept.
func (m *JobManager) ResultBytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.resultBytes
}

// Drain refuses new jobs (ErrShuttingDown) and cancels the queued ones,
// logging each: they stay listed, cancelled, until the process ends.
// Running jobs go on; Shutdown waits for them.
func (m *JobManager) Drain() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	close(m.queue)
	for _, j := range m.jobs {
		if j.state == JobQueued {
			m.opt.Logger.Warn("queued job cancelled: the server is shutting down", "job", j.id, "kind", j.kind)
			m.finishLocked(j, JobCancelled, nil, fmt.Errorf("%w: cancelled before it started", ErrShuttingDown))
		}
	}
}

// Shutdown drains, then waits for running jobs until ctx ends; then it
// cancels them (each logged) and waits for their runners.
func (m *JobManager) Shutdown(ctx context.Context) {
	m.Drain()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		m.mu.Lock()
		for _, j := range m.jobs {
			if j.state == JobRunning {
				m.opt.Logger.Warn("running job cancelled: the shutdown grace period is over", "job", j.id, "kind", j.kind)
			}
		}
		m.mu.Unlock()
		m.stop()
		<-done
	}
	m.stop()
}

func (m *JobManager) work() {
	for j := range m.queue {
		m.runOne(j)
	}
}

func (m *JobManager) runOne(j *job) {
	m.mu.Lock()
	if j.state != JobQueued {
		m.mu.Unlock()
		return
	}
	k := m.kinds[j.kind]
	ctx, cancel := context.WithTimeout(m.base, m.opt.Timeout)
	defer cancel()
	if j.held != nil {
		ctx = context.WithValue(ctx, heldKey{}, j.held)
	}
	j.cancel = cancel
	j.state, j.started = JobRunning, m.opt.Now()
	m.opt.OnTransition(j.kind, JobQueued, JobRunning)
	m.mu.Unlock()

	res, err := m.call(ctx, k.run, j)
	var enc encoded
	if err == nil {
		enc, err = m.encode(res)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err == nil:
		j.progress.Store(math.Float64bits(1))
		m.makeRoomLocked(int64(len(enc.raw)))
		j.resultType, j.notes = enc.typ, enc.notes
		m.finishLocked(j, JobSucceeded, enc.raw, nil)
	case j.cancelled:
		m.finishLocked(j, JobCancelled, nil, fmt.Errorf("cancelled by DELETE: %w", context.Canceled))
	case errors.Is(err, context.Canceled) && m.base.Err() != nil:
		m.finishLocked(j, JobCancelled, nil, fmt.Errorf("%w: %w", ErrShuttingDown, err))
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		m.finishLocked(j, JobFailed, nil, fmt.Errorf("job exceeded its time limit of %s: %w", m.opt.Timeout, err))
	default:
		m.finishLocked(j, JobFailed, nil, err)
	}
	if run := j.finished.Sub(j.started).Seconds(); m.meanRunS == 0 {
		m.meanRunS = run
	} else {
		m.meanRunS = 0.8*m.meanRunS + 0.2*run
	}
}

// encoded is a result as kept.
type encoded struct {
	raw   []byte
	typ   reflect.Type
	notes []string
}

// encode encodes a runner's result once, within MaxResultBytes.
func (m *JobManager) encode(res any) (encoded, error) {
	var e encoded
	if n, ok := res.(Noted); ok {
		res, e.notes = n.Value, n.Notes
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return e, fmt.Errorf("encode the result: %w", err)
	}
	if limit := m.opt.MaxResultBytes; limit > 0 && int64(len(raw)) > limit {
		return e, &ResultTooLargeError{Bytes: int64(len(raw)), Limit: limit}
	}
	e.raw, e.typ = raw, reflect.TypeOf(res)
	return e, nil
}

// makeRoomLocked drops the oldest finished jobs that hold results until n
// more bytes fit within MaxResultsBytes.
func (m *JobManager) makeRoomLocked(n int64) {
	limit := m.opt.MaxResultsBytes
	if limit <= 0 || m.resultBytes+n <= limit {
		return
	}
	var held []*job
	for _, j := range m.jobs {
		if len(j.result) > 0 {
			held = append(held, j)
		}
	}
	slices.SortFunc(held, func(a, b *job) int { return a.finished.Compare(b.finished) })
	for _, j := range held {
		if m.resultBytes+n <= limit {
			return
		}
		m.opt.Logger.Warn("finished job dropped: the results kept would exceed jobs.max_results_bytes",
			"job", j.id, "kind", j.kind, "result_bytes", len(j.result), "limit", limit)
		m.dropLocked(j)
	}
}

// dropLocked forgets a finished job and frees its result.
func (m *JobManager) dropLocked(j *job) {
	delete(m.jobs, j.id)
	m.resultBytes -= int64(len(j.result))
	j.result = nil
	m.opt.OnTransition(j.kind, j.state, "")
}

// call runs the runner, turning a panic into an error (logged once here).
func (m *JobManager) call(ctx context.Context, run Runner, j *job) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			m.opt.Logger.Error("job panicked", "job", j.id, "kind", j.kind, "panic", p)
			res, err = nil, fmt.Errorf("job %s panicked", j.id)
		}
	}()
	return run(ctx, j.params, func(f float64) {
		if !(f >= 0) {
			return
		}
		f = min(f, 1)
		for {
			old := j.progress.Load()
			if f <= math.Float64frombits(old) || j.progress.CompareAndSwap(old, math.Float64bits(f)) {
				return
			}
		}
	})
}

func (m *JobManager) finishLocked(j *job, to JobState, raw []byte, err error) {
	from := j.state
	j.state, j.result, j.err, j.finished = to, raw, err, m.opt.Now()
	m.resultBytes += int64(len(raw))
	j.params, j.held = nil, nil
	if j.release != nil {
		j.release()
		j.release = nil
	}
	m.opt.OnTransition(j.kind, from, to)
	if err != nil && to == JobFailed {
		if _, internal := problemFor(err); internal {
			attrs := []any{"job", j.id, "kind", j.kind, "err", err}
			var pe *plan.PanicError
			if errors.As(err, &pe) {
				attrs = append(attrs, "stack", string(pe.Stack))
			}
			m.opt.Logger.Error("job failed", attrs...)
		}
	}
}

// evictLocked drops finished jobs past their TTL, then the oldest finished
// ones beyond MaxFinished.
func (m *JobManager) evictLocked() {
	now := m.opt.Now()
	var finished []*job
	for _, j := range m.jobs {
		if !j.state.final() {
			continue
		}
		if now.Sub(j.finished) > m.opt.ResultTTL {
			m.dropLocked(j)
			continue
		}
		finished = append(finished, j)
	}
	if extra := len(finished) - m.opt.MaxFinished; extra > 0 {
		slices.SortFunc(finished, func(a, b *job) int { return a.finished.Compare(b.finished) })
		for _, j := range finished[:extra] {
			m.dropLocked(j)
		}
	}
}

func (j *job) view(withResult bool) JobView {
	v := JobView{ID: j.id, Kind: j.kind, State: j.state, Progress: math.Float64frombits(j.progress.Load()), CreatedAt: j.created}
	if !j.started.IsZero() {
		t := j.started
		v.StartedAt = &t
	}
	if !j.finished.IsZero() {
		t := j.finished
		v.FinishedAt = &t
	}
	if j.state == JobSucceeded {
		v.ResultBytes = int64(len(j.result))
		v.Notes = j.notes
		if withResult {
			v.Result = j.result
		}
	}
	if j.err != nil {
		p, _ := problemFor(j.err)
		if p.Status == 500 {
			p.Detail = "the job failed; the error is logged"
		}
		v.Error = &p
	}
	return v
}
