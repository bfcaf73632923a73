package scenario

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/memory"
	"github.com/headroom-sim/headroom/sim/steptime"
	"github.com/headroom-sim/headroom/sim/workload"
)

// Env is what resolving a scenario may use.
type Env struct {
	Catalog *catalogs.Catalog
	// Open opens a file the scenario references (a trace, an empirical
	// length file); nil refuses file references (the API).
	Open func(name string) (io.ReadCloser, error)
	// Calibration loads the step-time profile a scenario's calibration
	// field names; nil refuses calibration references.
	Calibration func(ref string) (*steptime.Profile, error)
	// MaxRequests bounds the requests of one run (0 = no bound).
	MaxRequests int
	// KernelDB loads measured kernel latencies for a GPU: from dir, or the
	// built-in measurements when dir is "" (nil, nil when there are none);
	// nil refuses the table backend.
	KernelDB KernelLoader
}

// KernelLoader loads measured kernel latencies for a GPU (Env.KernelDB).
type KernelLoader = func(g *hardware.GPU, dir string) (*steptime.KernelDB, error)

// DefaultBackend is the step-time backend a scenario gets when it names
// none: the measured kernels where Headroom has them for the GPU (the
// formula elsewhere). docs/accuracy.md compares the two on the measured
// serving runs.
const DefaultBackend = "table"

// ErrFilesNotAllowed is returned when a scenario references a file where
// the caller cannot read files.
var ErrFilesNotAllowed = errors.New("file references are not allowed here")

// ErrTooLarge is returned when a scenario exceeds Env.MaxRequests.
var ErrTooLarge = errors.New("scenario exceeds the request limit")

// Resolved is a scenario ready to run, with the memory profile behind its
// KV-cache size.
type Resolved struct {
	Config  sim.Config
	Memory  memory.Profile
	Setup   memory.Setup
	Warning []string
	// Disaggregation is the prefill pool and the link of a disaggregated
	// scenario (Memory and Setup are then the decode pool's).
	Disaggregation *DisaggResolved
	// ColdStart is a new replica's scale-up delay (with autoscale).
	ColdStart *ColdStart
}

// Resolve looks the scenario's ids up, fills vLLM's defaults, computes each
// replica's KV blocks and reads referenced files. Errors are *FieldError
// for bad values, wrap catalogs.ErrUnknownGPU/ErrUnknownModel for unknown
// ids and memory.ErrDoesNotFit when the model cannot be served.
// serving is a scenario resolved up to its workload: what a model on a
// GPU with these engine settings is, and whether it fits.
type serving struct {
	model    *models.Model
	gpu      *hardware.GPU
	prec     models.Precision
	eng      engine.Config
	ep       int
	dp       int
	replicas int
	moeTP    int
	moeEP    int
	db       *steptime.KernelDB
	draft    *models.Drafter // speculative decoding's drafter (speculative.go)
	setup    memory.Setup
	mem      memory.Profile
	prof     steptime.Profile
}

// CheckFits resolves everything but the workload (no trace or length file
// is read) and reports whether the configuration can start, as Resolve
// would: planners prune with it before simulating.
func (s *Scenario) CheckFits(env Env) (memory.Profile, error) {
	if s.Disaggregation != nil {
		return s.checkFitsDisaggregated(env)
	}
	sv, err := s.resolveServing(env)
	if err != nil {
		return memory.Profile{}, err
	}
	return sv.mem, nil
}

func (s *Scenario) resolveServing(env Env) (*serving, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	m, err := env.Catalog.Model(s.Model)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	g, err := env.Catalog.GPU(s.GPU)
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	prec, err := precision(m, s.WeightsDType, s.KVCacheDType)
	if err != nil {
		return nil, err
	}
	eng, err := s.Engine.Resolve(m, g)
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return nil, &FieldError{Field: "engine." + fe.Field, Reason: fe.Reason}
		}
		return nil, err
	}
	replicas, dp := s.Replicas, max(s.DP, 1)
	if s.ExpertParallel && s.DP == 0 && replicas > 1 {
		// The older meaning: experts over tp × replicas GPUs, the
		// replicas being data-parallel ranks.
		replicas, dp = 1, replicas
	}
	ep, moeTP, moeEP := 1, 0, 0
	if m.MoE != nil {
		gpus := s.TP * dp
		ep = gpus
		moeTP, moeEP = gpus, 1
		if s.ExpertParallel {
			moeTP, moeEP = 1, gpus
			if m.MoE.NumExperts%gpus != 0 {
				return nil, &FieldError{Field: "expert_parallel", Reason: fmt.Sprintf("%d experts do not split evenly over tp × dp = %d GPUs", m.MoE.NumExperts, gpus)}
			}
		}
	} else if s.ExpertParallel {
		return nil, &FieldError{Field: "expert_parallel", Reason: fmt.Sprintf("%s has no routed experts", m.ID)}
	}
	setup := memory.Setup{Model: m, GPU: g, Precision: prec, TP: s.TP, EP: ep, Engine: eng}
	if !memory.ValidTP(setup, s.TP) {
		return nil, &FieldError{Field: "tp", Reason: fmt.Sprintf("%d does not divide %s's %d attention heads (or its %d KV heads) evenly", s.TP, m.ID, m.NumHeads, m.NumKVHeads)}
	}
	if s.TP > g.TPLimit() {
		return nil, &FieldError{Field: "tp", Reason: fmt.Sprintf("%d exceeds the %d GPUs of one %s node", s.TP, g.TPLimit(), g.ID)}
	}
	draft, err := resolveDrafter(env, &eng, m, prec, s.TP)
	if err != nil {
		return nil, err
	}
	if draft != nil {
		setup.DraftWeightsBytes, setup.DraftKVBytesPerToken = draft.WeightBytesPerGPU(s.TP, ep), draft.KVBytesPerToken(s.TP)
	}
	prof := steptime.DefaultProfile(g)
	if s.Calibration != "" {
		if env.Calibration == nil {
			return nil, &FieldError{Field: "calibration", Reason: "calibration profiles cannot be loaded here"}
		}
		p, err := env.Calibration(s.Calibration)
		if err != nil {
			return nil, fmt.Errorf("calibration: %w", err)
		}
		prof = *p
		if err := prof.Validate(); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				return nil, &FieldError{Field: "calibration." + fe.Field, Reason: fe.Reason}
			}
			return nil, err
		}
		setup.ExtraNonTorchBytes = prof.NonTorchAdjustGiB * hardware.GiB
	}
	mp, err := memory.Compute(setup)
	if err != nil {
		if tp := memory.MinTPThatFits(setup); tp > 0 && errors.Is(err, memory.ErrDoesNotFit) {
			return nil, fmt.Errorf("%w (smallest tp that fits: %d)", err, tp)
		}
		return nil, err
	}
	if err := prof.Validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return nil, &FieldError{Field: "calibration." + fe.Field, Reason: fe.Reason}
		}
		return nil, err
	}
	db, err := s.kernelDB(env, g)
	if err != nil {
		return nil, err
	}
	return &serving{model: m, gpu: g, prec: prec, eng: eng, ep: ep, dp: dp, moeTP: moeTP, moeEP: moeEP, replicas: replicas,
		db: db, draft: draft, setup: setup, mem: mp, prof: prof}, nil
}

// kernelDB loads the measured kernels the step-time backend reads: none
// for the formula backend; the scenario's directory, or the built-in
// measurements of g, for the table backend (named or by default).
func (s *Scenario) kernelDB(env Env, g *hardware.GPU) (*steptime.KernelDB, error) {
	backend := s.StepTime.Backend
	if backend == "" {
		backend = DefaultBackend
		if s.StepTime.KernelDB != "" {
			backend = "table"
		}
	}
	if backend != "table" {
		if s.StepTime.KernelDB != "" {
			return nil, &FieldError{Field: "steptime.kernel_db", Reason: "is only read by the table backend"}
		}
		return nil, nil
	}
	if env.KernelDB == nil {
		if s.StepTime.Backend == "table" || s.StepTime.KernelDB != "" {
			return nil, &FieldError{Field: "steptime.backend", Reason: "measured kernel tables cannot be loaded here"}
		}
		return nil, nil
	}
	db, err := env.KernelDB(g, s.StepTime.KernelDB)
	if err != nil {
		return nil, &FieldError{Field: "steptime.kernel_db", Reason: err.Error()}
	}
	if db == nil && s.StepTime.Backend == "table" {
		return nil, &FieldError{Field: "steptime.backend", Reason: fmt.Sprintf("Headroom has no measured kernels for %s: give steptime.kernel_db, or use the formula backend", g.ID)}
	}
	return db, nil
}

func (s *Scenario) Resolve(env Env) (*Resolved, error) {
	if s.Disaggregation != nil {
		return s.resolveDisaggregated(env)
	}
	sv, err := s.resolveServing(env)
	if err != nil {
		return nil, err
	}
	m, g, prec, eng, setup, mp, prof := sv.model, sv.gpu, sv.prec, sv.eng, sv.setup, sv.mem, sv.prof
	w, err := s.resolveWorkload(env)
	if err != nil {
		return nil, err
	}
	bs := eng.BlockSize
	cfg := sim.Config{
		Model: m, GPU: g, Precision: prec, TP: s.TP, Replicas: sv.replicas, DP: sv.dp, MoETP: sv.moeTP, MoEEP: sv.moeEP, Router: s.Router,
		Engine: eng, NumGPUBlocks: mp.NumGPUBlocks, BlockBytes: mp.BlockBytes,
		Profile:      prof,
		KernelDB:     sv.db,
		MoERouting:   s.StepTime.MoERouting,
		NetworkRTTMS: s.NetworkRTTMS,
		Workload:     w,
		SLA:          s.SLA,
		Report:       sim.ReportOptions{StallThresholdMS: s.Report.StallThresholdMS, Timeseries: s.Report.Timeseries},
		Seed:         uint64(s.Workload.Seed),
	}
	if m.NumSlidingLayers() > 0 {
		// Sliding-window layers hold at most the window: the block count of
		// a sequence is not simply ceil(n / block_size).
		cfg.BlockUnits = func(n int) int { return memory.BlocksForTokens(m, bs, n) }
	}
	var warn []string
	if sp, note := speculative(&eng, sv.draft); sp != nil {
		cfg.Speculative = sp
		if note != "" {
			warn = append(warn, "engine.speculative.acceptance: "+note)
		}
		if sp.AcceptanceWarning != "" {
			warn = append(warn, "engine.speculative.acceptance: "+sp.AcceptanceWarning)
		}
	}
	res := &Resolved{Config: cfg, Memory: mp, Setup: setup, Warning: warn}
	if a := s.Autoscale; a != nil {
		if sv.replicas != s.Replicas {
			return nil, &FieldError{Field: "autoscale", Reason: "scales replicas, which expert_parallel without dp reads as data-parallel ranks: give dp"}
		}
		cs := a.ColdStartOf(mp.WeightsBytes, s.TP*sv.dp, m.NumLayers, steptime.CUDAGraphTokens(eng.MaxNumSeqs, eng.MaxNumBatchedTokens))
		if res.Config.Autoscale, err = a.policy(cs); err != nil {
			return nil, err
		}
		res.ColdStart = &cs
	}
	if err := res.Config.Validate(); err != nil {
		return nil, err
	}
	if env.MaxRequests > 0 {
		if n := s.EstimatedRequests(w); n > env.MaxRequests {
			return res, fmt.Errorf("%w: about %d requests, the limit is %d", ErrTooLarge, n, env.MaxRequests)
		}
	}
	return res, nil
}

// EstimatedRequests is how many requests the run will send: the request
// count, the trace length, or Σ rate × duration over the stages (closed-loop
// stages are estimated at one request per client per second).
func (s *Scenario) EstimatedRequests(w sim.Workload) int {
	if w.Trace != nil {
		if w.Requests > 0 {
			return min(w.Requests, len(w.Trace))
		}
		return len(w.Trace)
	}
	if len(w.Stages) == 0 {
		return w.Requests
	}
	var n float64
	for _, st := range w.Stages {
		n += st.RateRPS*st.DurationS + float64(st.Concurrency)*st.DurationS
	}
	if w.Requests > 0 {
		return min(w.Requests, int(n))
	}
	return int(n)
}

func precision(m *models.Model, weights, kv string) (models.Precision, error) {
	var wdt, kvdt hardware.DType
	var err error
	if weights != "" {
		if wdt, err = hardware.ParseDType(weights); err != nil {
			return models.Precision{}, &FieldError{Field: "weights_dtype", Reason: err.Error()}
		}
	}
	if kv != "" && kv != "auto" {
		if kvdt, err = hardware.ParseDType(kv); err != nil {
			return models.Precision{}, &FieldError{Field: "kv_cache_dtype", Reason: err.Error()}
		}
		switch kvdt {
		case hardware.BF16, hardware.FP16, hardware.FP8, hardware.INT8, hardware.FP32:
		default:
			return models.Precision{}, &FieldError{Field: "kv_cache_dtype", Reason: fmt.Sprintf("%s is not a KV-cache type (auto, bf16, fp16, fp8, int8)", kvdt)}
		}
	}
	return m.ResolvePrecision(wdt, kvdt), nil
}

func (s *Scenario) resolveWorkload(env Env) (sim.Workload, error) {
	ws := &s.Workload
	w := sim.Workload{
		Requests: ws.Requests, Warmup: ws.WarmupRequests, Arrival: ws.Arrival, MaxConcurrency: ws.MaxConcurrency,
		Stages: ws.LoadStages(0), SharedPrefix: ws.SharedPrefix, MultiTurn: ws.MultiTurn,
	}
	if t := ws.Trace; t != nil {
		rc, err := open(env, "workload.trace.file", t.File)
		if err != nil {
			return w, err
		}
		defer rc.Close()
		recs, err := workload.ParseTrace(rc, t.Format, t.File)
		if err != nil {
			return w, err
		}
		w.Trace = t.Apply(recs)
		w.TraceHashTokens = workload.TraceHashTokens(t.Format)
		if w.Requests > 0 && w.Requests < len(w.Trace) {
			w.Trace = w.Trace[:w.Requests]
		}
		return w, nil
	}
	var err error
	if w.Input, err = sampler(env, ws.InputTokens, "workload.input_tokens"); err != nil {
		return w, err
	}
	if w.Output, err = sampler(env, ws.OutputTokens, "workload.output_tokens"); err != nil {
		return w, err
	}
	return w, nil
}

func sampler(env Env, spec workload.LengthSpec, field string) (workload.LengthSampler, error) {
	var emp []int
	if spec.Type == workload.LengthEmpirical {
		rc, err := open(env, field+".file", spec.File)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		if emp, err = workload.ParseLengthColumn(rc, spec.Column, spec.File); err != nil {
			return nil, err
		}
	}
	return workload.NewLengthSampler(spec, field, emp)
}

func open(env Env, field, name string) (io.ReadCloser, error) {
	if env.Open == nil {
		return nil, &FieldError{Field: field, Reason: ErrFilesNotAllowed.Error()}
	}
	rc, err := env.Open(name)
	if err != nil {
		return nil, &FieldError{Field: field, Reason: err.Error()}
	}
	return rc, nil
}

// LongestRequest is the most tokens, prompt and output together, one
// request of the scenario's workload holds (sim.LongestRequest over the
// requests it sends; a staged load's Poisson count is covered to ten
// standard deviations above its mean). It reads the files the workload
// references, nothing else.
func (s *Scenario) LongestRequest(env Env) (int, error) {
	w, err := s.resolveWorkload(env)
	if err != nil {
		return 0, err
	}
	n := s.EstimatedRequests(w)
	if len(w.Stages) > 0 {
		n += int(10*math.Sqrt(float64(n))) + 100
	}
	return sim.LongestRequest(&w, uint64(s.Workload.Seed), n+w.Warmup), nil
}
