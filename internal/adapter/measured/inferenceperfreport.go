package measured

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// inference-perf (kubernetes-sigs/inference-perf) writes by default, with
// per-request output off, aggregate reports: summary_lifecycle_metrics.json
// for the whole run and stage_N_lifecycle_metrics.json for each stage of
// its load (a stepped sweep has one per rate), each
//
//	{"load_summary": {"count": n, "schedule_delay": {…}, "send_duration": s,
//	                  "requested_rate": r, "achieved_rate": r},
//	 "successes": {"count": n,
//	               "latency": {"request_latency": D, "time_to_first_token": D,
//	                           "time_per_output_token": D, "inter_token_latency": D,
//	                           "normalized_time_per_output_token": D},
//	               "throughput": {"input_tokens_per_sec": x, "output_tokens_per_sec": x,
//	                              "total_tokens_per_sec": x, "requests_per_sec": x},
//	               "prompt_len": D, "output_len": D},
//	 "failures": {"count": n, "request_latency": D | null, "prompt_len": D | null}}
//
// where each D is {"mean", "min", "p0.1", "p1", … "median", … "p99.9",
// "max"} in seconds (tokens for the lengths). Mapping: time_to_first_token
// → TTFT, request_latency → E2E, inter_token_latency (gaps between the
// response's chunks) → ITL. inference-perf stamps every chunk of the HTTP
// stream, and its time_per_output_token is (last − first stamp) / (stamps
// − 1): vLLM's TPOT only when each token came in one chunk. It is kept as
// TPOT when it agrees, within 10%, with the TPOT the means imply, (mean
// E2E − mean TTFT) / (mean output − 1); otherwise it is left out and a
// note says so. normalized_time_per_output_token (latency / output tokens)
// has no Aggregate field. The files name neither the model nor the GPU,
// and the load type (constant or poisson) is in the run's config, not here.
//
// How a stage is counted (load_summary, read into Aggregate.Sent; checked
// on every stage of the reference data's three stepped runs by
// TestInferencePerfStageCounting): count is the requests the stage
// scheduled, requested_rate × stage_duration cut to a whole number (40.19
// req/s × 60 s = 2411), all of them sent, however late; send_duration is
// the time from the first send to the last, 60 s while the client keeps
// up and longer once the cap on requests in flight (num_workers ×
// worker_max_concurrency, 440 in the kubecon runs) holds sends back
// (89.7 s at 118.56 req/s); schedule_delay is how late each request was
// sent against its schedule (its max is send_duration − stage_duration);
// achieved_rate = count / send_duration. successes.throughput's
// requests_per_sec is the completions over the time from the first send
// to the last finish: between count / (send_duration + the slowest
// request) and count / send_duration. A replay that mimics the tool
// schedules count requests at requested_rate, caps them in flight, and
// divides by the same span. Every key a report holds that is not read is
// listed in Run.Ignored (normalized_time_per_output_token,
// input_tokens_per_sec, total_tokens_per_sec).

type ipDist map[string]num

type ipReport struct {
	LoadSummary *struct {
		Count         num    `json:"count"`
		ScheduleDelay ipDist `json:"schedule_delay"`
		SendDuration  num    `json:"send_duration"`
		RequestedRate num    `json:"requested_rate"`
		AchievedRate  num    `json:"achieved_rate"`
	} `json:"load_summary"`
	Successes *struct {
		Count   num `json:"count"`
		Latency *struct {
			RequestLatency ipDist `json:"request_latency"`
			TTFT           ipDist `json:"time_to_first_token"`
			TPOT           ipDist `json:"time_per_output_token"`
			ITL            ipDist `json:"inter_token_latency"`
		} `json:"latency"`
		Throughput *struct {
			InputTokensPerSec  num `json:"input_tokens_per_sec"`
			OutputTokensPerSec num `json:"output_tokens_per_sec"`
			RequestsPerSec     num `json:"requests_per_sec"`
		} `json:"throughput"`
		PromptLen ipDist `json:"prompt_len"`
		OutputLen ipDist `json:"output_len"`
	} `json:"successes"`
	Failures *struct {
		Count num `json:"count"`
	} `json:"failures"`
}

func sniffInferencePerfReport(s *shape) bool {
	return s.kind == kindJSONObject && s.top("load_summary", "successes")
}

func parseInferencePerfReport(p *parser) (*Run, error) {
	var rep ipReport
	if err := p.unmarshal(0, "", pyJSON(trimBOM(p.data)), &rep); err != nil {
		return nil, err
	}
	if rep.Successes == nil {
		return nil, p.errf(0, "successes", "missing")
	}
	a, notes, err := ipAggregate(p, &rep)
	if err != nil {
		return nil, err
	}
	run := &Run{Aggregate: a}
	for _, n := range notes {
		run.note("%s", n)
	}
	ipIgnored(run, p.data)
	if m := reIPStage.FindStringSubmatch(baseName(p.name)); m != nil {
		// A stage file read alone is that stage, at its requested rate.
		i, err := strconv.Atoi(m[1])
		if err != nil || i > 1<<20 {
			return nil, p.errf(0, "", "%s: not a stage index", m[1])
		}
		run.Stages = []StageInfo{{Index: i, RateRPS: a.RateRPS}}
		run.note("stage %d read alone: the load type and the cap on requests in flight are in the run's config.yaml (read with the results folder); Poisson arrivals without a cap are assumed", i)
	}
	return run, nil
}

// ipUsed are the keys of a report the reader uses, by object path.
var ipUsed = map[string]func(string) bool{
	"":                      keys("load_summary", "successes", "failures"),
	"load_summary.":         keys("count", "schedule_delay", "send_duration", "requested_rate", "achieved_rate"),
	"successes.":            keys("count", "latency", "throughput", "prompt_len", "output_len"),
	"successes.latency.":    keys("request_latency", "time_to_first_token", "time_per_output_token", "inter_token_latency"),
	"successes.throughput.": keys("output_tokens_per_sec", "requests_per_sec"),
	"failures.":             keys("count"),
}

// ipIgnored lists the keys of a report the reader does not use.
func ipIgnored(run *Run, data []byte) {
	var top map[string]json.RawMessage
	if json.Unmarshal(pyJSON(trimBOM(data)), &top) != nil {
		return
	}
	var walk func(prefix string, obj map[string]json.RawMessage)
	walk = func(prefix string, obj map[string]json.RawMessage) {
		used := ipUsed[prefix]
		for k, raw := range obj {
			if !used(k) {
				if prefix == "failures." && string(raw) == "null" {
					continue // a statistic of no failure
				}
				run.ignore(prefix, k)
				continue
			}
			if _, deeper := ipUsed[prefix+k+"."]; deeper {
				var sub map[string]json.RawMessage
				if json.Unmarshal(raw, &sub) == nil {
					walk(prefix+k+".", sub)
				}
			}
		}
	}
	walk("", top)
}

// ipAggregate reads one report's figures.
func ipAggregate(p *parser, rep *ipReport) (*Aggregate, []string, error) {
	s := rep.Successes
	a := &Aggregate{Completed: count(s.Count.finite())}
	if f := rep.Failures; f != nil {
		a.Failed = count(f.Count.finite())
	}
	if l := rep.LoadSummary; l != nil {
		a.RateRPS = positive(l.RequestedRate.finite())
		sent := &SentLoad{RequestedRPS: a.RateRPS, Scheduled: count(l.Count.finite()), SendDurationS: positive(l.SendDuration.finite()), AchievedRPS: positive(l.AchievedRate.finite())}
		if err := ipDistInto(p, "load_summary.schedule_delay", l.ScheduleDelay, &sent.ScheduleDelayMS, true); err != nil {
			return nil, nil, err
		}
		if sent.RequestedRPS > 0 || sent.Scheduled > 0 || sent.SendDurationS > 0 || sent.ScheduleDelayMS != nil {
			a.Sent = sent
		}
	}
	if t := s.Throughput; t != nil {
		a.RequestsPerS = positive(t.RequestsPerSec.finite())
		a.OutputTokensPerS = positive(t.OutputTokensPerSec.finite())
	}
	if m := s.PromptLen["mean"]; m.Set {
		a.MeanInputTokens = positive(m.finite())
	}
	if m := s.OutputLen["mean"]; m.Set {
		a.MeanOutputTokens = positive(m.finite())
	}
	var notes []string
	if a.Completed == 0 || s.Latency == nil {
		return a, notes, nil // no completed request: no latency statistic
	}
	lat := s.Latency
	for _, d := range []struct {
		field string
		dist  ipDist
		dst   *map[string]float64
	}{
		{"successes.latency.time_to_first_token", lat.TTFT, &a.TTFTMS},
		{"successes.latency.request_latency", lat.RequestLatency, &a.E2EMS},
		{"successes.latency.inter_token_latency", lat.ITL, &a.ITLMS},
	} {
		if err := ipDistInto(p, d.field, d.dist, d.dst, false); err != nil {
			return nil, nil, err
		}
	}
	var tpot map[string]float64
	if err := ipDistInto(p, "successes.latency.time_per_output_token", lat.TPOT, &tpot, false); err != nil {
		return nil, nil, err
	}
	if len(tpot) > 0 {
		implied := (a.E2EMS["mean"] - a.TTFTMS["mean"]) / (a.MeanOutputTokens - 1)
		switch got := tpot["mean"]; {
		case a.MeanOutputTokens > 1 && implied > 0 && math.Abs(got-implied) <= 0.1*implied:
			a.TPOTMS = tpot
		case a.MeanOutputTokens > 1 && implied > 0:
			notes = append(notes, fmt.Sprintf("time_per_output_token (mean %.3g ms) is per chunk of the stream, not per token: the means imply a TPOT of %.3g ms "+
				"((mean e2e − mean ttft) / (mean output tokens − 1)); left out", got, implied))
		default:
			notes = append(notes, "time_per_output_token left out: without mean lengths it cannot be checked against TPOT")
		}
	}
	return a, notes, nil
}

// ipDistInto stores a distribution in seconds as milliseconds; signed
// allows negative values (a send a little ahead of its schedule).
func ipDistInto(p *parser, field string, d ipDist, dst *map[string]float64, signed bool) error {
	for k, v := range d {
		stat, ok := statKey(k)
		if !ok {
			continue
		}
		x := v.finite()
		if x < 0 && !signed {
			return p.errf(0, field+"."+k, "%v s is not a valid duration", x)
		}
		setStat(dst, stat, x, 1e3)
	}
	return nil
}

// reIPStage matches inference-perf's per-stage report names.
var reIPStage = regexp.MustCompile(`^stage_([0-9]+)_lifecycle_metrics\.json$`)

// IsInferencePerfReports reports whether dir holds inference-perf's
// per-stage reports (stage_N_lifecycle_metrics.json).
func IsInferencePerfReports(fsys fs.FS, dir string) bool {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return !e.IsDir() && reIPStage.MatchString(e.Name()) })
}

// LoadInferencePerfReports reads an inference-perf results folder: one
// stage per stage_N_lifecycle_metrics.json (its index N, its requested
// rate, its aggregate). When the folder also holds per-request records
// (per_request_lifecycle_metrics.json), those are the run's requests and
// the stage reports are attached to their stages.
func LoadInferencePerfReports(fsys fs.FS, dir string) (*Run, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	type stageFile struct {
		index int
		name  string
	}
	var files []stageFile
	var other []string
	for _, e := range ents {
		if !e.IsDir() && e.Name() != "per_request_lifecycle_metrics.json" && !reIPStage.MatchString(e.Name()) {
			other = append(other, "file "+e.Name())
		}
		if m := reIPStage.FindStringSubmatch(e.Name()); m != nil && !e.IsDir() {
			i, err := strconv.Atoi(m[1])
			if err != nil || i > 1<<20 {
				return nil, fmt.Errorf("%s: not a stage index", e.Name())
			}
			files = append(files, stageFile{i, e.Name()})
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no stage_N_lifecycle_metrics.json", dir)
	}
	slices.SortFunc(files, func(a, b stageFile) int { return a.index - b.index })
	run := &Run{Name: path.Base(dir), Format: "inference-perf-report"}
	if run.Name == "results" || run.Name == "." {
		run.Name = path.Base(path.Dir(dir)) // <experiment>/results
	}
	if run.Name == "." || run.Name == "/" {
		run.Name = "inference-perf"
	}
	var notes []string
	var chunky []string // stages whose time_per_output_token is per chunk
	for _, f := range files {
		sr, err := importFile(fsys, path.Join(dir, f.name), "inference-perf-report")
		if err != nil {
			return nil, err
		}
		run.Stages = append(run.Stages, StageInfo{Index: f.index, RateRPS: sr.Aggregate.RateRPS, Aggregate: sr.Aggregate})
		run.Ignored = append(run.Ignored, sr.Ignored...)
		for _, n := range sr.Engine.Extra {
			if strings.HasPrefix(n, fmt.Sprintf("stage %d read alone", f.index)) {
				continue // the folder's config.yaml says what it could not
			}
			if strings.HasPrefix(n, "time_per_output_token (mean") {
				chunky = append(chunky, strconv.Itoa(f.index))
				continue
			}
			notes = append(notes, fmt.Sprintf("stage %d: %s", f.index, n))
		}
	}
	if len(chunky) > 0 {
		notes = append(notes, fmt.Sprintf("stages %s: time_per_output_token is per chunk of the stream, not per token (it disagrees with the TPOT the means imply, (mean e2e − mean ttft) / (mean output tokens − 1)): left out", strings.Join(chunky, ", ")))
	}
	if per := path.Join(dir, "per_request_lifecycle_metrics.json"); fileExists(fsys, per) {
		rr, err := importFile(fsys, per, "inference-perf")
		if err != nil {
			return nil, err
		}
		run.Requests, run.Model, run.Format = rr.Requests, rr.Model, "inference-perf"
		notes = append(rr.Engine.Extra, notes...)
	}
	run.Engine.Extra = notes
	run.Ignored = append(run.Ignored, other...)
	if err := applyManifests(fsys, dir, run); err != nil {
		return nil, err
	}
	if err := applyIPConfig(fsys, dir, run); err != nil {
		return nil, err
	}
	if run.GPU == "" {
		run.note("neither the reports nor a manifests.yaml beside them name the GPU")
	}
	return run, nil
}

// ipConfig is the part of inference-perf's config file (its --config_file,
// config.yaml) that describes the load beyond the reports.
type ipConfig struct {
	API struct {
		Type      string `yaml:"type"`
		Streaming *bool  `yaml:"streaming"`
	} `yaml:"api"`
	Load struct {
		Type                 string  `yaml:"type"`
		Interval             float64 `yaml:"interval"`
		NumWorkers           int     `yaml:"num_workers"`
		WorkerMaxConcurrency int     `yaml:"worker_max_concurrency"`
		Sweep                *struct {
			Type          string  `yaml:"type"`
			NumStages     int     `yaml:"num_stages"`
			StageDuration float64 `yaml:"stage_duration"`
		} `yaml:"sweep"`
		Stages []struct {
			Rate     float64 `yaml:"rate"`
			Duration float64 `yaml:"duration"`
		} `yaml:"stages"`
	} `yaml:"load"`
	Data struct {
		Type         string `yaml:"type"`
		SharedPrefix *struct {
			Prompts      int `yaml:"num_unique_system_prompts"`
			Users        int `yaml:"num_users_per_system_prompt"`
			SystemTokens int `yaml:"system_prompt_len"`
			Question     int `yaml:"question_len"`
			Output       int `yaml:"output_len"`
		} `yaml:"shared_prefix"`
	} `yaml:"data"`
	Server struct {
		ModelName string `yaml:"model_name"`
		IgnoreEOS *bool  `yaml:"ignore_eos"`
	} `yaml:"server"`
}

// applyIPConfig reads the run's inference-perf config.yaml, when one is in
// the results folder or up to two levels above it: the load type of every
// stage and its duration, the cap on requests in flight (workers ×
// worker_max_concurrency), the shape of shared-prefix prompts, and the
// model the client asked for (the run's model only when nothing else
// names one: the server's manifests say what ran).
//
// inference-perf's shared_prefix data makes num_unique_system_prompts
// system prompts of system_prompt_len tokens, and for each
// num_users_per_system_prompt questions of question_len tokens; every
// request sends one of these system × users prompts. The same prompt
// recurs (at 100 prompts and thousands of requests a stage, nearly every
// request repeats an earlier one), so the replay's shared prefix is the
// whole prompt: system × users groups of system + question tokens.
func applyIPConfig(fsys fs.FS, dir string, run *Run) error {
	name := findAbove(fsys, dir, 2, "config.yaml")
	if name == "" {
		run.note("no inference-perf config.yaml beside the reports: the load type, the cap on requests in flight and prompt sharing are unknown (Poisson arrivals assumed)")
		return nil
	}
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return err
	}
	if len(b) > 1<<20 {
		return fmt.Errorf("%s: larger than 1 MiB", name)
	}
	var cfg ipConfig
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	l := cfg.Load
	limit := 0
	if l.NumWorkers > 0 && l.WorkerMaxConcurrency > 0 && l.NumWorkers <= 1<<16 && l.WorkerMaxConcurrency <= 1<<16 {
		limit = l.NumWorkers * l.WorkerMaxConcurrency
	}
	for i := range run.Stages {
		st := &run.Stages[i]
		switch l.Type {
		case "constant", "poisson":
			st.Strategy = l.Type
		}
		if limit > 0 && st.Aggregate != nil {
			st.Aggregate.Concurrency = limit
		}
		if limit > 0 {
			st.Concurrency = limit
		}
		switch {
		case l.Sweep != nil && l.Sweep.StageDuration > 0 && l.Sweep.StageDuration < 1e7:
			st.DurationS = l.Sweep.StageDuration
		case st.Index < len(l.Stages) && l.Stages[st.Index].Duration > 0 && l.Stages[st.Index].Duration < 1e7:
			st.DurationS = l.Stages[st.Index].Duration
		}
	}
	var said []string
	said = append(said, fmt.Sprintf("load type %q", l.Type))
	if sw := l.Sweep; sw != nil {
		said = append(said, fmt.Sprintf("a %s sweep of %d stages of %g s", sw.Type, sw.NumStages, sw.StageDuration))
	}
	said = append(said, fmt.Sprintf("at most %d requests in flight (%d workers × %d)", limit, l.NumWorkers, l.WorkerMaxConcurrency))
	if sp := cfg.Data.SharedPrefix; cfg.Data.Type == "shared_prefix" && sp != nil && sp.Prompts > 0 && sp.SystemTokens > 0 && sp.Prompts <= 1<<16 && sp.Users <= 1<<16 && sp.SystemTokens <= maxTokens && sp.Question <= maxTokens {
		run.PromptShape = &PromptShape{SystemPrompts: sp.Prompts, UsersPerPrompt: sp.Users, SystemTokens: sp.SystemTokens, QuestionTokens: sp.Question, OutputTokens: sp.Output}
		run.PrefixGroups, run.PrefixTokens = sp.Prompts*max(sp.Users, 1), sp.SystemTokens+sp.Question
		said = append(said, fmt.Sprintf("shared-prefix prompts: %d system prompts of %d tokens × %d users with a %d-token question each, %d output tokens (replayed as %d recurring prompts of %d tokens)",
			sp.Prompts, sp.SystemTokens, sp.Users, sp.Question, sp.Output, run.PrefixGroups, run.PrefixTokens))
	} else if cfg.Data.Type != "" {
		said = append(said, fmt.Sprintf("data type %q", cfg.Data.Type))
	}
	if e := cfg.Server.IgnoreEOS; e != nil && *e {
		said = append(said, "ignore_eos (outputs run to their length)")
	}
	if s := cfg.API.Streaming; s != nil && !*s {
		said = append(said, "not streamed (TTFT is the whole response)")
	}
	switch m := cfg.Server.ModelName; {
	case m == "":
	case run.Model == "":
		run.Model = m
		said = append(said, fmt.Sprintf("model %q (server.model_name)", m))
	case !strings.EqualFold(run.Model, m):
		said = append(said, fmt.Sprintf("server.model_name %q, the name the client sent (and tokenized with); the server's own model, %s, is what ran and is replayed", m, run.Model))
	}
	run.note("%s: %s", name, strings.Join(said, ", "))
	return nil
}

// findAbove is the first of names in dir, else in the folder above it, up
// to levels folders up ("" when none is there).
func findAbove(fsys fs.FS, dir string, levels int, names ...string) string {
	for up, d := 0, dir; up <= levels; up, d = up+1, path.Dir(d) {
		for _, n := range names {
			if p := path.Join(d, n); fileExists(fsys, p) {
				return p
			}
		}
		if d == "." {
			break
		}
	}
	return ""
}

// importFile imports one file of fsys as format.
func importFile(fsys fs.FS, name, format string) (*Run, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Import(f, name, format)
}

func fileExists(fsys fs.FS, name string) bool {
	st, err := fs.Stat(fsys, name)
	return err == nil && !st.IsDir()
}
