package measured

import (
	"encoding/csv"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	reVersion  = regexp.MustCompile(`vLLM API server version (\S+)`)
	reBlocks   = regexp.MustCompile(`num_gpu_blocks is: (\d+)`)
	reDType    = regexp.MustCompile(`dtype=torch\.(\w+)`)
	rePrefix   = regexp.MustCompile(`enable_prefix_caching=(\w+)`)
	reChunked  = regexp.MustCompile(`chunked_prefill_enabled=(\w+)`)
	reKVDType  = regexp.MustCompile(`kv_cache_dtype=(\w+)`)
	reSeqLen   = regexp.MustCompile(`max_seq_len=(\d+)`)
	reTP       = regexp.MustCompile(`tensor_parallel_size=(\d+)`)
	reBatchTok = regexp.MustCompile(`'max_num_batched_tokens': (\d+)`)
	reMaxSeqs  = regexp.MustCompile(`'max_num_seqs': (\d+)`)
)

// LoadInferenceSim reads an inference-sim ground-truth run directory:
// exp-config.yaml (model and server flags), vllm.log (version, dtype,
// prefix caching, logged block count; the last start-up in the log wins),
// profile.yaml (the guidellm data profile: a shared prefix of
// prefix_tokens) and otel_requests.csv (per-request server spans: start,
// TTFT, end-to-end). Times are server-side.
func LoadInferenceSim(fsys fs.FS, dir string) (*Run, error) {
	name := func(f string) string { return path.Join(dir, f) }
	var exp struct {
		Model               string `yaml:"model"`
		TP                  int    `yaml:"tensor_parallelism"`
		MaxModelLen         int    `yaml:"max_model_len"`
		MaxNumBatchedTokens int    `yaml:"max_num_batched_tokens"`
		MaxNumSeqs          int    `yaml:"max_num_seqs"`
	}
	b, err := fs.ReadFile(fsys, name("exp-config.yaml"))
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(b, &exp); err != nil {
		return nil, fmt.Errorf("%s: %w", name("exp-config.yaml"), err)
	}
	run := &Run{
		Name: path.Base(dir), Format: "inference-sim", Model: exp.Model, TP: max(exp.TP, 1), DP: 1,
		GPU: "h100-sxm", GPUNote: "80 GB-class GPU, not named in the logs; assumed H100 SXM", ServerSide: true,
	}
	run.ignoreYAML("exp-config.yaml: ", b, keys("model", "tensor_parallelism", "max_model_len", "max_num_batched_tokens", "max_num_seqs"))
	e := &run.Engine
	e.MaxModelLen, e.MaxNumBatchedTokens, e.MaxNumSeqs = exp.MaxModelLen, exp.MaxNumBatchedTokens, exp.MaxNumSeqs
	e.AsyncScheduling = boolp(false)
	if log, err := fs.ReadFile(fsys, name("vllm.log")); err == nil {
		parseVLLMLog(string(log), run)
	}
	var prof struct {
		Data struct {
			PrefixTokens int `yaml:"prefix_tokens"`
		} `yaml:"data"`
	}
	if pb, err := fs.ReadFile(fsys, name("profile.yaml")); err == nil {
		if err := yaml.Unmarshal(pb, &prof); err != nil {
			return nil, fmt.Errorf("%s: %w", name("profile.yaml"), err)
		}
	}
	f, err := fsys.Open(name("otel_requests.csv"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ids []string
	if run.Requests, ids, err = readOtelCSV(f, name("otel_requests.csv"), run); err != nil {
		return nil, err
	}
	if gf, err := fsys.Open(name("guidellm_requests.csv")); err == nil {
		err = attachGuidellmStages(gf, name("guidellm_requests.csv"), run, ids)
		gf.Close()
		if err != nil {
			return nil, err
		}
	}
	if p := prof.Data.PrefixTokens; p > 0 {
		// guidellm puts the same prefix_tokens-token prefix in front of every
		// prompt of the run.
		run.HashTokens = p
		for i := range run.Requests {
			if run.Requests[i].InputTokens > p {
				run.Requests[i].HashIDs = []int64{1}
			}
		}
	}
	run.normalise()
	return run, nil
}

// parseVLLMLog takes settings from the last engine start-up in a vLLM log.
func parseVLLMLog(log string, run *Run) {
	if i := strings.LastIndex(log, "vLLM API server version"); i > 0 {
		log = log[strings.LastIndex(log[:i], "\n")+1:]
	}
	last := func(re *regexp.Regexp) string {
		m := re.FindAllStringSubmatch(log, -1)
		if len(m) == 0 {
			return ""
		}
		return m[len(m)-1][1]
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	e := &run.Engine
	if v := last(reVersion); v != "" {
		run.EngineVersion = v
	}
	if v := last(reBlocks); v != "" {
		run.LoggedBlocks = atoi(v)
	}
	if v := last(reDType); v != "" {
		e.DType = v
	}
	if v := last(rePrefix); v != "" {
		e.EnablePrefixCaching = boolp(v == "True")
	}
	if v := last(reChunked); v != "" {
		e.EnableChunkedPrefill = boolp(v == "True")
	}
	if v := last(reKVDType); v != "" {
		e.KVCacheDType = v
	}
	if v := last(reSeqLen); v != "" {
		e.MaxModelLen = atoi(v)
	}
	if v := last(reTP); v != "" {
		run.TP = atoi(v)
	}
	if v := last(reBatchTok); v != "" {
		e.MaxNumBatchedTokens = atoi(v)
	}
	if v := last(reMaxSeqs); v != "" {
		e.MaxNumSeqs = atoi(v)
	}
}

// readOtelCSV reads the compact per-request span table (start_ns,
// prompt_tokens, completion_tokens, ttft_s, e2e_s …); the columns it does
// not use are listed in run.Ignored.
func readOtelCSV(r io.Reader, name string, run *Run) ([]Request, []string, error) {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, k := range []string{"start_ns", "prompt_tokens", "completion_tokens", "ttft_s", "e2e_s"} {
		if _, ok := col[k]; !ok {
			return nil, nil, fmt.Errorf("%s: missing column %s", name, k)
		}
	}
	for c := range col {
		switch c {
		case "start_ns", "prompt_tokens", "completion_tokens", "ttft_s", "e2e_s", "request_id":
		default:
			run.ignore("otel_requests.csv: column ", c)
		}
	}
	var out []Request
	var ids []string
	line := 1
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		num := func(k string) (float64, error) {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[col[k]]), 64)
			if err != nil {
				return 0, fmt.Errorf("%s:%d: field %s: %q is not a number", name, line, k, rec[col[k]])
			}
			return v, nil
		}
		var vals [5]float64
		for i, k := range []string{"start_ns", "prompt_tokens", "completion_tokens", "ttft_s", "e2e_s"} {
			if vals[i], err = num(k); err != nil {
				return nil, nil, err
			}
		}
		q := Request{SendS: vals[0] / 1e9, InputTokens: int(vals[1]), OutputTokens: int(vals[2]), TTFTS: vals[3], E2ES: vals[4]}
		if q.OutputTokens < 1 || math.IsNaN(q.TTFTS) {
			q.Error = "no output"
		}
		out = append(out, q)
		id := ""
		if i, ok := col["request_id"]; ok {
			id = strings.TrimSpace(rec[i])
		}
		ids = append(ids, id)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s: no requests", name)
	}
	return out, ids, nil
}

// attachGuidellmStages labels each server span with the guidellm benchmark
// that sent it, joining the client's response_id with the span's
// request_id (vLLM appends "-0" for the first choice).
func attachGuidellmStages(r io.Reader, name string, run *Run, ids []string) error {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, k := range []string{"benchmark_index", "strategy", "response_id"} {
		if _, ok := col[k]; !ok {
			return nil // not the layout this join understands
		}
	}
	byID := map[string]int{}
	seen := map[int]StageInfo{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		idx, err := strconv.Atoi(rec[col["benchmark_index"]])
		if err != nil {
			return fmt.Errorf("%s:%d: field benchmark_index: %q is not an integer", name, line, rec[col["benchmark_index"]])
		}
		byID[rec[col["response_id"]]] = idx
		if _, ok := seen[idx]; !ok {
			st := StageInfo{Index: idx, Strategy: rec[col["strategy"]]}
			if i, ok := col["rate"]; ok {
				st.RateRPS, _ = strconv.ParseFloat(rec[i], 64)
			}
			seen[idx] = st
		}
	}
	matched := 0
	for i := range run.Requests {
		if st, ok := byID[strings.TrimSuffix(ids[i], "-0")]; ok {
			run.Requests[i].Stage = st
			matched++
		}
	}
	if matched == 0 {
		return nil
	}
	for i := 0; i < len(seen)+1000 && len(run.Stages) < len(seen); i++ {
		if st, ok := seen[i]; ok {
			run.Stages = append(run.Stages, st)
		}
	}
	return nil
}
