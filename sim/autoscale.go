package sim

import (
	"fmt"
	"math"
	"slices"
)

// Autoscaling: a replica autoscaler as Kubernetes' HPA (or KEDA) runs
// one in front of vLLM, simulated inside the run. At every interval the
// policy reads a metric of the serving replicas, computes the replicas it
// wants (HPA's ceil(total / target-per-replica), inside a tolerance), and
//   - starts the missing ones: a started replica holds its GPUs (and is
//     billed) from the decision on, but takes requests only after the
//     scale-up delay (provisioning, weight loading, compilation, CUDA-graph
//     capture: the caller works it out);
//   - removes the extra ones once the highest wish of the stabilization
//     window allows it: replicas still starting are cancelled first, then
//     serving ones drain: the router stops sending them requests, they
//     finish what they hold and stop when the last of it ends.
// Every replica-second from 0 to the end of the run is counted as
// starting, serving or draining.

// Autoscaling metrics.
const (
	// ScaleOnRequestRate: requests the router received per second over the
	// last interval; Target is requests/s per replica.
	ScaleOnRequestRate = "request_rate"
	// ScaleOnInFlight: requests in the serving replicas (API server,
	// queued and running); Target is requests per replica.
	ScaleOnInFlight = "in_flight"
	// ScaleOnKVUsage: KV-cache usage of the serving replicas
	// (vllm:kv_cache_usage_perc); Target is the usage ratio per replica.
	ScaleOnKVUsage = "kv_cache_usage"
)

// Autoscale is the autoscaler of a run (Config.Autoscale). Config.Replicas
// replicas serve from time 0.
type Autoscale struct {
	MinReplicas int
	MaxReplicas int
	// Metric is ScaleOnRequestRate, ScaleOnInFlight or ScaleOnKVUsage.
	Metric string
	// Target is the metric's value per replica the policy aims at.
	Target float64
	// IntervalS is the policy's evaluation period (HPA's sync period).
	IntervalS float64
	// ScaleUpDelayS is the time from a scale-up decision until the new
	// replica takes requests.
	ScaleUpDelayS float64
	// ScaleDownStabilizationS: a scale-down goes to the highest replica
	// count the policy wanted over this window (HPA's
	// behavior.scaleDown.stabilizationWindowSeconds, default 300).
	ScaleDownStabilizationS float64
	// Tolerance: no change while total / (serving × target) is within
	// 1 ± Tolerance (HPA's 0.1).
	Tolerance float64
}

// MaxAutoscaleRecords bounds the timeline and decisions a report lists
// (the replica-seconds are exact regardless).
const MaxAutoscaleRecords = 100_000

// validate checks the autoscaler against the run's initial replicas.
// Errors name the scenario's fields.
func (a *Autoscale) validate(replicas int) error {
	switch {
	case a.MinReplicas < 1 || a.MinReplicas > 4096:
		return fieldErr("autoscale.min_replicas", fmt.Sprintf("%d is not in [1, 4096]", a.MinReplicas))
	case a.MaxReplicas < a.MinReplicas || a.MaxReplicas > 4096:
		return fieldErr("autoscale.max_replicas", fmt.Sprintf("%d is not in [min_replicas %d, 4096]", a.MaxReplicas, a.MinReplicas))
	case replicas < a.MinReplicas || replicas > a.MaxReplicas:
		return fieldErr("replicas", fmt.Sprintf("the %d replicas serving at the start must be within autoscale's [%d, %d]", replicas, a.MinReplicas, a.MaxReplicas))
	case a.Metric != ScaleOnRequestRate && a.Metric != ScaleOnInFlight && a.Metric != ScaleOnKVUsage:
		return fieldErr("autoscale.metric", fmt.Sprintf("%q is not %s, %s or %s", a.Metric, ScaleOnRequestRate, ScaleOnInFlight, ScaleOnKVUsage))
	case !(a.Target > 0) || math.IsInf(a.Target, 1) || a.Target > 1e9:
		return fieldErr("autoscale.target", fmt.Sprintf("must be a finite number > 0, got %g", a.Target))
	case a.Metric == ScaleOnKVUsage && a.Target > 1:
		return fieldErr("autoscale.target", fmt.Sprintf("a KV-cache usage target is a ratio in (0, 1], got %g", a.Target))
	case !(a.Tolerance >= 0 && a.Tolerance < 1):
		return fieldErr("autoscale.tolerance", fmt.Sprintf("must be in [0, 1), got %g", a.Tolerance))
	}
	if r := durationReason(a.IntervalS, float64(nsPerSecond), "s"); r != "" || a.IntervalS < 1e-3 {
		if r == "" {
			r = fmt.Sprintf("must be at least 0.001 s, got %g", a.IntervalS)
		}
		return fieldErr("autoscale.interval_s", r)
	}
	if r := durationReason(a.ScaleUpDelayS, float64(nsPerSecond), "s"); r != "" {
		return fieldErr("autoscale.scale_up_delay_s", r)
	}
	if r := durationReason(a.ScaleDownStabilizationS, float64(nsPerSecond), "s"); r != "" {
		return fieldErr("autoscale.scale_down_stabilization_s", r)
	}
	return nil
}

// instanceSlots is how many instances the simulator builds: the replicas,
// or with an autoscaler twice its maximum (room for as many draining as
// serving).
func (c *Config) instanceSlots() int {
	if c.Autoscale == nil {
		return c.Replicas
	}
	return 2 * max(c.Autoscale.MaxReplicas, c.Replicas)
}

// Replica states of an autoscaled run.
const (
	slotOff int8 = iota
	slotStarting
	slotServing
	slotDraining
)

// AutoscaleReport is what the autoscaler did.
type AutoscaleReport struct {
	Metric        string  `json:"metric"`
	Target        float64 `json:"target"`
	MinReplicas   int     `json:"min_replicas"`
	MaxReplicas   int     `json:"max_replicas"`
	ScaleUpDelayS float64 `json:"scale_up_delay_s"`
	// EndS is the end of the accounting: the end of the last stage or of
	// the last engine step, whichever is later.
	EndS           float64        `json:"end_s"`
	ReplicaSeconds ReplicaSeconds `json:"replica_seconds"`
	// ScaleUps counts replicas started, ScaleDowns replicas cancelled
	// while starting or drained.
	ScaleUps   int `json:"scale_ups"`
	ScaleDowns int `json:"scale_downs"`
	// PeakReplicas is the most replicas held (billed) at once.
	PeakReplicas int `json:"peak_replicas"`
	// Timeline lists the replica counts from time 0, one entry per change.
	Timeline []ReplicaCount `json:"timeline"`
	// Decisions lists the evaluations that changed the replica count.
	Decisions []ScaleDecision `json:"decisions"`
	// Truncated is set when the timeline or decisions were cut at
	// MaxAutoscaleRecords entries.
	Truncated bool `json:"truncated,omitempty"`
}

// ReplicaSeconds splits the replica time of a run by state; Total is
// their sum, the time billed.
type ReplicaSeconds struct {
	Starting float64 `json:"starting"`
	Serving  float64 `json:"serving"`
	Draining float64 `json:"draining"`
	Total    float64 `json:"total"`
}

// ReplicaCount is the number of replicas in each state from TS on.
type ReplicaCount struct {
	TS       float64 `json:"t_s"`
	Serving  int     `json:"serving"`
	Starting int     `json:"starting"`
	Draining int     `json:"draining"`
}

// ScaleDecision is one evaluation that changed the replica count.
type ScaleDecision struct {
	TS float64 `json:"t_s"`
	// Value is the metric's total over the serving replicas (req/s,
	// requests, or the sum of usage ratios).
	Value float64 `json:"value"`
	// Serving is how many replicas served when the metric was read.
	Serving int `json:"serving"`
	// From and To are the replicas held (serving + starting) before and
	// after.
	From int `json:"from"`
	To   int `json:"to"`
}

// slotChange is one replica's state change.
type slotChange struct {
	t     Time
	slot  int
	state int8
}

type recommendation struct {
	t       Time
	desired int
}

// autoscaler runs the policy of Config.Autoscale.
type autoscaler struct {
	s        *Simulator
	cfg      *Autoscale
	interval Time
	delay    Time
	window   Time

	state   []int8
	since   []Time // drain start, for draining slots
	gen     []int32
	serving []*instance // sorted by id: what the router may choose

	arrivals  int // requests routed since the last evaluation
	recs      []recommendation
	changes   []slotChange
	decisions []ScaleDecision
	ups       int
	downs     int
}

// newAutoscaler sets the first Config.Replicas slots serving at 0.
func newAutoscaler(s *Simulator) *autoscaler {
	c := s.cfg.Autoscale
	a := &autoscaler{s: s, cfg: c}
	a.interval, _ = toClock(c.IntervalS, float64(nsPerSecond)) // validated
	a.delay, _ = toClock(c.ScaleUpDelayS, float64(nsPerSecond))
	a.window, _ = toClock(c.ScaleDownStabilizationS, float64(nsPerSecond))
	n := len(s.insts)
	a.state, a.since, a.gen = make([]int8, n), make([]Time, n), make([]int32, n)
	for i := range s.cfg.Replicas {
		a.set(0, i, slotServing)
	}
	return a
}

// start schedules the first evaluation.
func (a *autoscaler) start() {
	a.s.push(event{t: a.interval, kind: evScale})
}

// set records slot i entering state at t and keeps the serving list.
func (a *autoscaler) set(t Time, i int, state int8) {
	in := a.s.insts[i]
	if a.state[i] == slotServing {
		a.serving = slices.DeleteFunc(a.serving, func(x *instance) bool { return x == in })
	}
	a.state[i] = state
	a.since[i] = t
	if state == slotServing {
		at, _ := slices.BinarySearchFunc(a.serving, in.id, func(x *instance, id int32) int { return int(x.id - id) })
		a.serving = slices.Insert(a.serving, at, in)
	}
	a.changes = append(a.changes, slotChange{t: t, slot: i, state: state})
}

// count returns the slots in each state.
func (a *autoscaler) count() (serving, starting, draining int) {
	for _, st := range a.state {
		switch st {
		case slotServing:
			serving++
		case slotStarting:
			starting++
		case slotDraining:
			draining++
		}
	}
	return
}

// handle runs an autoscaler event: an evaluation, or a started replica
// becoming ready.
func (a *autoscaler) handle(e *event) {
	if e.kind == evReady {
		i := int(e.target)
		if a.state[i] == slotStarting && a.gen[i] == e.client {
			a.fresh(i)
			a.set(e.t, i, slotServing)
		}
		return
	}
	a.evaluate(e.t)
}

// fresh gives a restarted replica's ranks empty KV caches (a new engine
// holds no prefix cache), keeping the run's counters.
func (a *autoscaler) fresh(i int) {
	s := a.s
	cfg := s.cfg
	caching := cfg.Engine.EnablePrefixCaching && cfg.Model.NumSlidingLayers() == 0
	for _, rp := range s.insts[i].ranks {
		if rp.steps == 0 && rp.kv.referenced() == 0 && rp.kv.queryTokens == 0 {
			continue // never used: already empty
		}
		kv := newKVCache(cfg.NumGPUBlocks, cfg.Engine.BlockSize, caching, cfg.BlockUnits)
		kv.hitTokens, kv.queryTokens, kv.dropLastHit = rp.kv.hitTokens, rp.kv.queryTokens, rp.kv.dropLastHit
		rp.kv = kv
	}
}

// evaluate settles finished drains, reads the metric and scales.
func (a *autoscaler) evaluate(t Time) {
	s := a.s
	for i, st := range a.state {
		if st == slotDraining && s.insts[i].outstanding() == 0 {
			end := a.since[i]
			for _, rp := range s.insts[i].ranks {
				end = max(end, rp.lastEnd)
			}
			a.set(end, i, slotOff)
		}
	}
	serving, starting, _ := a.count()
	var total float64
	switch a.cfg.Metric {
	case ScaleOnRequestRate:
		total = float64(a.arrivals) / a.cfg.IntervalS
	case ScaleOnInFlight:
		for _, in := range a.serving {
			total += float64(in.outstanding())
		}
	case ScaleOnKVUsage:
		for _, in := range a.serving {
			total += in.kvUsage()
		}
	}
	a.arrivals = 0
	current := serving + starting
	desired := current
	if ratio := total / (float64(max(serving, 1)) * a.cfg.Target); math.Abs(ratio-1) > a.cfg.Tolerance {
		desired = int(math.Ceil(total/a.cfg.Target - 1e-9))
	}
	desired = min(max(desired, a.cfg.MinReplicas), a.cfg.MaxReplicas)
	// The wishes of the stabilization window, as a deque of decreasing
	// counts: its front is the highest (at most max_replicas entries).
	for len(a.recs) > 0 && a.recs[len(a.recs)-1].desired <= desired {
		a.recs = a.recs[:len(a.recs)-1]
	}
	a.recs = append(a.recs, recommendation{t: t, desired: desired})
	for a.recs[0].t <= t-a.window && len(a.recs) > 1 {
		a.recs = a.recs[1:]
	}
	target := desired
	if desired < current {
		target = min(a.recs[0].desired, current)
	}
	if target > current {
		a.scaleUp(t, target-current)
	} else if target < current {
		a.scaleDown(t, current-target)
	}
	if after := a.held(); after != current && len(a.decisions) < MaxAutoscaleRecords {
		a.decisions = append(a.decisions, ScaleDecision{TS: float64(t) / 1e9, Value: round(total, 6), Serving: serving, From: current, To: after})
	}
	if next := t + a.interval; next <= horizon && a.workRemains() {
		s.push(event{t: next, kind: evScale})
	}
}

// held is the replicas serving or starting.
func (a *autoscaler) held() int {
	serving, starting, _ := a.count()
	return serving + starting
}

// scaleUp starts n replicas on free slots, lowest first (fewer when the
// slots are all taken by draining replicas: the next evaluation retries).
func (a *autoscaler) scaleUp(t Time, n int) {
	for i := 0; i < len(a.state) && n > 0; i++ {
		if a.state[i] != slotOff {
			continue
		}
		a.gen[i]++
		a.set(t, i, slotStarting)
		a.ups++
		n--
		if a.delay == 0 {
			a.fresh(i)
			a.set(t, i, slotServing)
			continue
		}
		a.s.push(event{t: t + a.delay, kind: evReady, target: int32(i), client: a.gen[i]})
	}
}

// scaleDown removes n replicas: the most recently started of those still
// starting, then the serving ones holding the fewest requests (the
// highest slot first on ties), which drain.
func (a *autoscaler) scaleDown(t Time, n int) {
	for n > 0 {
		pick := -1
		for i, st := range a.state {
			if st == slotStarting && (pick < 0 || a.since[i] >= a.since[pick]) {
				pick = i
			}
		}
		if pick < 0 {
			break
		}
		a.set(t, pick, slotOff)
		a.downs++
		n--
	}
	for n > 0 && len(a.serving) > 1 {
		pick := a.serving[0]
		for _, in := range a.serving[1:] {
			if in.outstanding() <= pick.outstanding() {
				pick = in
			}
		}
		i := int(pick.id)
		a.set(t, i, slotDraining)
		a.downs++
		n--
		if pick.outstanding() == 0 {
			a.set(t, i, slotOff)
		}
	}
}

// workRemains reports whether anything but autoscaling and time-series
// ticks is still to happen (the evaluations stop with the workload).
func (a *autoscaler) workRemains() bool {
	for i := range a.s.q.items {
		if k := a.s.q.items[i].kind; k < evTick {
			return true
		}
	}
	return false
}

// routable is the instances the router may pick.
func (a *autoscaler) routable() []*instance {
	a.arrivals++
	return a.serving
}

func sameCounts(a, b ReplicaCount) bool {
	return a.Serving == b.Serving && a.Starting == b.Starting && a.Draining == b.Draining
}

// servedRanks is how many engine ranks ever served: what the report's KV
// figures average over.
func (s *Simulator) servedRanks() int {
	if s.as == nil {
		return len(s.ranks)
	}
	used := map[int]bool{}
	for _, c := range s.as.changes {
		if c.state == slotServing {
			used[c.slot] = true
		}
	}
	n := 0
	for i := range used {
		n += len(s.insts[i].ranks)
	}
	return max(n, 1)
}

// report integrates the changes over [0, end] and lists the timeline.
func (a *autoscaler) report() *AutoscaleReport {
	s := a.s
	c := a.cfg
	end := Time(0)
	for _, st := range s.cfg.Workload.Stages {
		d, _ := toClock(st.DurationS, float64(nsPerSecond))
		end += d
	}
	for _, rp := range s.ranks {
		end = max(end, rp.lastEnd)
	}
	rep := &AutoscaleReport{Metric: c.Metric, Target: c.Target, MinReplicas: c.MinReplicas, MaxReplicas: c.MaxReplicas,
		ScaleUpDelayS: c.ScaleUpDelayS, EndS: round(float64(end)/1e9, 6), ScaleUps: a.ups, ScaleDowns: a.downs,
		Timeline: []ReplicaCount{}, Decisions: a.decisions}
	if rep.Decisions == nil {
		rep.Decisions = []ScaleDecision{}
	}
	changes := slices.Clone(a.changes)
	slices.SortStableFunc(changes, func(x, y slotChange) int {
		switch {
		case x.t < y.t:
			return -1
		case x.t > y.t:
			return 1
		}
		return 0
	})
	state := make([]int8, len(a.state))
	var ns [4]int     // replicas per state
	var secs [4]int64 // replica-nanoseconds per state
	ns[slotOff] = len(state)
	last := Time(0)
	flush := func(t Time) {
		t = min(t, end)
		if t > last {
			for k := range ns {
				secs[k] += int64(ns[k]) * (t - last)
			}
			last = t
		}
	}
	for i := 0; i < len(changes); {
		t := changes[i].t
		flush(t)
		for ; i < len(changes) && changes[i].t == t; i++ {
			ch := changes[i]
			ns[state[ch.slot]]--
			state[ch.slot] = ch.state
			ns[ch.state]++
		}
		if t > end {
			continue // after the run: not accounted, not listed
		}
		rep.PeakReplicas = max(rep.PeakReplicas, ns[slotStarting]+ns[slotServing]+ns[slotDraining])
		p := ReplicaCount{TS: round(float64(t)/1e9, 9), Serving: ns[slotServing], Starting: ns[slotStarting], Draining: ns[slotDraining]}
		n := len(rep.Timeline)
		switch {
		case n > 0 && sameCounts(rep.Timeline[n-1], p):
		case n < MaxAutoscaleRecords:
			rep.Timeline = append(rep.Timeline, p)
		default:
			rep.Truncated = true
		}
	}
	flush(end)
	rep.ReplicaSeconds = ReplicaSeconds{
		Starting: round(float64(secs[slotStarting])/1e9, 6),
		Serving:  round(float64(secs[slotServing])/1e9, 6),
		Draining: round(float64(secs[slotDraining])/1e9, 6),
	}
	rep.ReplicaSeconds.Total = round(float64(secs[slotStarting]+secs[slotServing]+secs[slotDraining])/1e9, 6)
	if len(a.decisions) >= MaxAutoscaleRecords {
		rep.Truncated = true
	}
	return rep
}
