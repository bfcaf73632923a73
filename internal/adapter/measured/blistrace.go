package measured

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FormatBlisTrace is inference-sim's request trace, version 3, as `blis
// observe` writes it against a real server (inference-sim/inference-sim,
// its observe command; the reference data's
// residency-vllm-h100-qwen3-14b runs are in it): a folder of
//
//   - trace.yaml, the header: trace_version (3), time_unit (us),
//     created_at, mode (real), warm_up_requests, workload_seed,
//     workload_spec, server {type, model}, network;
//   - trace.csv, one row a request: request_id, client_id, tenant_id,
//     slo_class, session_id, round_index, prefix_group, prefix_length,
//     streaming, input_tokens (asked), output_tokens, text_tokens,
//     image_tokens, audio_tokens, video_tokens, reason_ratio, model,
//     deadline_us, server_input_tokens (the server's count), arrival_time_us
//     (when the workload scheduled the request, from the trace's start),
//     send_time_us, first_chunk_time_us, last_chunk_time_us (epoch µs at
//     the client), num_chunks, status (ok …), error_message,
//     finish_reason, x_request_id;
//   - optionally trace.itl.csv, one row a streamed chunk: request_id,
//     chunk_index (0 = the first chunk), timestamp_us.
//
// Read as a measured run, at the client: the send is send_time_us; TTFT is
// first_chunk − send, E2E last_chunk − send; the chunks after the first
// (trace.itl.csv) give the chunk times, hence ITL; TPOT is vLLM's,
// (E2E − TTFT) / (output tokens − 1). Input tokens are
// server_input_tokens (the prompt as the server tokenized it), else
// input_tokens. Each tenant is a stage (label "tenant <id>"), so figures
// come per tenant. The client's delay, send − arrival, is kept per request
// (Request.DelayS, from the least-delayed request: the trace does not say
// when its clock started) and summarised in a note; a client-side cap on
// requests in flight shows there. A request whose status is not ok is
// failed, with its error_message.
//
// The server's settings are not in the trace: a server_config.json in the
// folder or up to three levels above it (the residency runs keep one at
// their root: vllm_version, model, max_seq_len, tensor_parallel_size,
// enable_chunked_prefill, max_num_batched_tokens, enable_prefix_caching,
// block_size) gives them. Nothing names the GPU.
//
// trace.csv alone (Import) reads the same, without the header, the chunk
// times and the server's settings. Columns not used are listed in
// Run.Ignored; a known column that cannot be used (multimodal tokens, a
// shared prefix, unstreamed requests) is also said in a note.
const FormatBlisTrace = "blis-trace"

// blisColumns are the trace.csv columns the reader needs.
var blisColumns = []string{"send_time_us", "first_chunk_time_us", "last_chunk_time_us", "output_tokens"}

// blisUsed are the trace.csv columns the reader uses (besides blisColumns).
var blisUsed = keys("request_id", "tenant_id", "input_tokens", "server_input_tokens", "arrival_time_us", "status", "error_message",
	"streaming", "num_chunks", "prefix_group", "prefix_length", "image_tokens", "audio_tokens", "video_tokens", "model")

func sniffBlisTrace(s *shape) bool {
	return s.hasColumns(blisColumns...)
}

func parseBlisTrace(p *parser) (*Run, error) {
	run, _, err := readBlisCSV(p, 1e-6)
	return run, err
}

// blisRows are the request ids of trace.csv's rows, in request order, and
// their send times in the trace's unit (epoch microseconds: differences
// are taken before scaling, which keeps them exact).
type blisRows struct {
	ids   []string
	sends []float64
}

// readBlisCSV reads trace.csv with times in units of scale seconds.
func readBlisCSV(p *parser, scale float64) (*Run, *blisRows, error) {
	t, err := p.readCSV()
	if err != nil {
		return nil, nil, err
	}
	for _, c := range blisColumns {
		if _, ok := t.col[c]; !ok {
			return nil, nil, p.errf(0, c, "missing column")
		}
	}
	run := &Run{}
	for c := range t.col {
		if !blisUsed(c) && !slices.Contains(blisColumns, c) {
			run.ignore("column ", c)
		}
	}
	inCol := t.first("server_input_tokens", "input_tokens")
	tenants := map[string]int{}
	var tenantOrder []string
	rows := &blisRows{}
	var raw []float64 // send − arrival, in the trace's unit
	var multimodal, prefixed, unstreamed, fallbackIn int
	model := ""
	for i, row := range t.rows {
		rec := i + 1
		v := map[string]float64{}
		for _, c := range []string{"send_time_us", "first_chunk_time_us", "last_chunk_time_us", "arrival_time_us", "output_tokens", inCol, "input_tokens", "prefix_length", "image_tokens", "audio_tokens", "video_tokens"} {
			if c == "" {
				continue
			}
			if v[c], err = p.cellNum(rec, c, t.get(row, c)); err != nil {
				return nil, nil, err
			}
		}
		q := Request{TTFTS: math.NaN(), E2ES: math.NaN()}
		if math.IsNaN(v["send_time_us"]) {
			return nil, nil, p.errf(rec, "send_time_us", "missing")
		}
		send := v["send_time_us"]
		if _, err = p.instant(rec, "send_time_us", send*scale); err != nil {
			return nil, nil, err
		}
		if i > 0 {
			q.SendS = (send - rows.sends[0]) * scale
		}
		in := v[inCol]
		if math.IsNaN(in) && inCol == "server_input_tokens" {
			in = v["input_tokens"]
			fallbackIn++
		}
		if q.InputTokens, err = p.tokenValue(rec, inCol, in); err != nil {
			return nil, nil, err
		}
		if q.OutputTokens, err = p.tokenValue(rec, "output_tokens", v["output_tokens"]); err != nil {
			return nil, nil, err
		}
		if status := strings.ToLower(t.get(row, "status")); status != "" && status != "ok" {
			q.Error = firstNonEmpty(t.get(row, "error_message"), status)
		}
		if q.Error == "" {
			if q.TTFTS, err = p.duration(rec, "first_chunk_time_us", (v["first_chunk_time_us"]-v["send_time_us"])*scale); err != nil {
				return nil, nil, err
			}
			if q.E2ES, err = p.duration(rec, "last_chunk_time_us", (v["last_chunk_time_us"]-v["send_time_us"])*scale); err != nil {
				return nil, nil, err
			}
			if q.E2ES < q.TTFTS {
				return nil, nil, p.errf(rec, "last_chunk_time_us", "before first_chunk_time_us")
			}
		}
		if a := v["arrival_time_us"]; !math.IsNaN(a) {
			if _, err := p.instant(rec, "arrival_time_us", a*scale); err != nil {
				return nil, nil, err
			}
			raw = append(raw, send-a)
		}
		tenant := t.get(row, "tenant_id")
		k, ok := tenants[tenant]
		if !ok {
			k = len(tenants)
			tenants[tenant] = k
			tenantOrder = append(tenantOrder, tenant)
		}
		q.Stage = k
		if zeroNaN(v["image_tokens"])+zeroNaN(v["audio_tokens"])+zeroNaN(v["video_tokens"]) > 0 {
			multimodal++
		}
		if t.get(row, "prefix_group") != "" && zeroNaN(v["prefix_length"]) > 0 {
			prefixed++
		}
		if s := strings.ToLower(t.get(row, "streaming")); s == "false" || s == "0" {
			unstreamed++
		}
		if m := t.get(row, "model"); m != "" && model == "" {
			model = m
		}
		rows.ids, rows.sends = append(rows.ids, t.get(row, "request_id")), append(rows.sends, send)
		run.Requests = append(run.Requests, q)
	}
	if len(run.Requests) == 0 {
		return nil, nil, p.errf(0, "", "no rows")
	}
	run.Model = model
	if len(raw) == len(run.Requests) {
		base := slices.Min(raw)
		for i := range run.Requests {
			run.Requests[i].DelayS = (raw[i] - base) * scale
		}
		d := make([]float64, len(raw))
		for i, x := range raw {
			d[i] = (x - base) * scale * 1e3
		}
		slices.Sort(d)
		run.note("the client's delay, send_time − arrival_time, from the least-delayed request: median %.3f ms, p99 %.3f ms, max %.3f ms",
			d[len(d)/2], d[min(len(d)-1, len(d)*99/100)], d[len(d)-1])
	} else if _, ok := t.col["arrival_time_us"]; ok {
		run.note("arrival_time_us is missing on some rows: the client's delay is not known")
	}
	if len(tenants) > 1 || (len(tenants) == 1 && tenantOrder[0] != "") {
		for k, name := range tenantOrder {
			run.Stages = append(run.Stages, StageInfo{Index: k, Label: "tenant " + firstNonEmpty(name, "(none)")})
		}
	}
	if fallbackIn > 0 {
		run.note("%d rows without server_input_tokens: their input_tokens (as asked) are used", fallbackIn)
	}
	if multimodal > 0 {
		run.note("%d requests carry image, audio or video tokens: not modelled (only their token counts are replayed)", multimodal)
	}
	if prefixed > 0 {
		run.note("%d requests name a prefix_group with a prefix_length: the shared prefix is not replayed", prefixed)
	}
	if unstreamed > 0 {
		run.note("%d requests were not streamed: their TTFT is the whole response", unstreamed)
	}
	return run, rows, nil
}

// blisHeader is trace.yaml.
type blisHeader struct {
	Version  int    `yaml:"trace_version"`
	TimeUnit string `yaml:"time_unit"`
	Created  string `yaml:"created_at"`
	Mode     string `yaml:"mode"`
	Warmup   int    `yaml:"warm_up_requests"`
	Seed     *int64 `yaml:"workload_seed"`
	Spec     string `yaml:"workload_spec"`
	Server   struct {
		Type  string `yaml:"type"`
		Model string `yaml:"model"`
	} `yaml:"server"`
}

func isBlisTraceDir(fsys fs.FS, dir string) bool {
	return fileExists(fsys, path.Join(dir, "trace.yaml")) && fileExists(fsys, path.Join(dir, "trace.csv"))
}

// LoadBlisTrace reads a `blis observe` trace folder (see FormatBlisTrace).
func LoadBlisTrace(fsys fs.FS, dir string) (*Run, error) {
	name := func(f string) string { return path.Join(dir, f) }
	b, err := fs.ReadFile(fsys, name("trace.yaml"))
	if err != nil {
		return nil, err
	}
	if len(b) > 1<<20 {
		return nil, fmt.Errorf("%s: larger than 1 MiB", name("trace.yaml"))
	}
	var h blisHeader
	if err := yaml.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("%s: %v", name("trace.yaml"), err)
	}
	if h.Version != 3 {
		return nil, fmt.Errorf("%s: trace_version %d: this reader knows version 3", name("trace.yaml"), h.Version)
	}
	scale := 1e-6
	if h.TimeUnit != "" {
		var ok bool
		if scale, ok = unitSeconds(h.TimeUnit); !ok {
			return nil, fmt.Errorf("%s: time_unit %q is not a time unit", name("trace.yaml"), h.TimeUnit)
		}
	}
	data, err := readLimited(fsys, name("trace.csv"))
	if err != nil {
		return nil, err
	}
	p := &parser{format: FormatBlisTrace, name: name("trace.csv"), data: data, maxLine: MaxLineBytes}
	run, rows, err := readBlisCSV(p, scale)
	if err != nil {
		return nil, err
	}
	run.Name, run.Format = path.Base(dir), FormatBlisTrace
	if run.Name == "vanilla" || run.Name == "patched" || run.Name == "." {
		run.Name = path.Join(path.Base(path.Dir(dir)), run.Name) // <run>/vanilla in the residency layout
	}
	if h.Server.Model != "" {
		if run.Model != "" && !strings.EqualFold(run.Model, h.Server.Model) {
			run.note("trace.csv's model column names %s; trace.yaml's server.model %s is used", run.Model, h.Server.Model)
		}
		run.Model, run.ModelNote = h.Server.Model, name("trace.yaml")+": server.model"
	}
	var said []string
	for _, kv := range [][2]string{{"mode", h.Mode}, {"server", h.Server.Type}, {"created_at", h.Created}, {"workload_spec", h.Spec}} {
		if kv[1] != "" {
			said = append(said, kv[0]+" "+kv[1])
		}
	}
	if h.Seed != nil {
		said = append(said, fmt.Sprintf("workload_seed %d", *h.Seed))
	}
	if h.Warmup > 0 {
		said = append(said, fmt.Sprintf("%d warm-up requests (not in trace.csv)", h.Warmup))
		run.Warmup = h.Warmup
	}
	run.note("%s: trace v3, %s", name("trace.yaml"), strings.Join(said, ", "))
	run.ignoreYAML(name("trace.yaml")+": ", b, keys("trace_version", "time_unit", "created_at", "mode", "warm_up_requests", "workload_seed", "workload_spec", "server"))
	if fileExists(fsys, name("trace.itl.csv")) {
		if err := attachBlisChunks(fsys, name("trace.itl.csv"), scale, run, rows); err != nil {
			return nil, err
		}
	} else {
		run.note("no trace.itl.csv: the chunk times, hence ITL, are not known")
	}
	if err := applyServerConfig(fsys, dir, run); err != nil {
		return nil, err
	}
	if run.GPU == "" {
		run.note("neither the trace nor server_config.json names the GPU: give --gpu")
	}
	run.ServerSide = false
	run.normalise()
	return run, nil
}

// readLimited reads a file of fsys up to MaxImportBytes.
func readLimited(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxImportBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxImportBytes {
		return nil, &ImportError{Name: name, Reason: fmt.Sprintf("larger than %d MiB", MaxImportBytes>>20), Err: ErrTooLarge}
	}
	return b, nil
}

// attachBlisChunks gives each request the times of its chunks after the
// first, from trace.itl.csv, relative to its send.
func attachBlisChunks(fsys fs.FS, name string, scale float64, run *Run, rows *blisRows) error {
	data, err := readLimited(fsys, name)
	if err != nil {
		return err
	}
	ids := rows.ids
	byID := make(map[string]int, len(ids))
	for i, id := range ids {
		byID[id] = i
	}
	cr := csv.NewReader(bytes.NewReader(trimBOM(data)))
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s: header: %v", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, c := range []string{"request_id", "chunk_index", "timestamp_us"} {
		if _, ok := col[c]; !ok {
			return fmt.Errorf("%s: field %s: missing column", name, c)
		}
	}
	type chunk struct {
		idx int
		t   float64
	}
	chunks := make([][]chunk, len(ids))
	unknown := 0
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %v", name, line, err)
		}
		get := func(c string) string {
			if i := col[c]; i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		i, ok := byID[get("request_id")]
		if !ok {
			unknown++
			continue
		}
		idx, err := strconv.Atoi(get("chunk_index"))
		if err != nil || idx < 0 || idx > maxTokens {
			return fmt.Errorf("%s:%d: field chunk_index: %q is not a chunk index", name, line, get("chunk_index"))
		}
		ts, err := strconv.ParseFloat(get("timestamp_us"), 64)
		if err != nil || math.IsNaN(ts) || math.IsInf(ts, 0) || math.Abs(ts*scale) > 1e13 {
			return fmt.Errorf("%s:%d: field timestamp_us: %q is not a time", name, line, get("timestamp_us"))
		}
		if math.Abs(ts-rows.sends[i])*scale > 1e7 {
			return fmt.Errorf("%s:%d: field timestamp_us: %v is not within a run of its request's send", name, line, ts)
		}
		chunks[i] = append(chunks[i], chunk{idx, (ts - rows.sends[i]) * scale})
	}
	with := 0
	for i, cs := range chunks {
		q := &run.Requests[i]
		if len(cs) == 0 || q.Error != "" {
			continue
		}
		slices.SortFunc(cs, func(a, b chunk) int { return a.idx - b.idx })
		q.ChunkTimesS = make([]float64, 0, len(cs)-1)
		for _, c := range cs[1:] {
			q.ChunkTimesS = append(q.ChunkTimesS, max(c.t, q.TTFTS))
		}
		with++
	}
	run.note("%s: the chunk times of %d of %d requests", name, with, len(run.Requests))
	if unknown > 0 {
		run.note("%s: %d chunks of requests not in trace.csv are not used", name, unknown)
	}
	return nil
}

// applyServerConfig reads the server_config.json in dir or up to three
// levels above it, the server's settings as the residency runs record
// them.
func applyServerConfig(fsys fs.FS, dir string, run *Run) error {
	name := findAbove(fsys, dir, 3, "server_config.json")
	if name == "" {
		run.note("no server_config.json beside the trace or above it: the server's settings are unknown (vLLM's defaults)")
		return nil
	}
	b, err := readLimited(fsys, name)
	if err != nil {
		return err
	}
	var obj map[string]json.RawMessage
	p := &parser{format: "server_config", name: name, data: b}
	if err := p.unmarshal(0, "", pyJSON(trimBOM(b)), &obj); err != nil {
		return err
	}
	used := map[string]bool{}
	var version, model string
	for _, k := range []string{"vllm_version", "model"} {
		if raw, ok := obj[k]; ok {
			var s string
			if err := p.unmarshal(0, k, raw, &s); err != nil {
				return err
			}
			used[k] = true
			if k == "model" {
				model = s
			} else {
				version = s
			}
		}
	}
	params := maps.Clone(obj)
	if raw, ok := params["max_seq_len"]; ok {
		params["max_model_len"] = raw // the engine's max_model_len, as vLLM logs it
		delete(params, "max_seq_len")
	}
	s, err := serveParams(p, 0, params, used)
	if err != nil {
		return err
	}
	used["max_seq_len"] = used["max_model_len"]
	for k := range obj {
		if !used[k] {
			run.ignore(name+": ", k)
		}
	}
	run.Engine.merge(&s.engine)
	if s.tp > 0 {
		run.TP = s.tp
	}
	if s.dp > 0 {
		run.DP = s.dp
	}
	if version != "" {
		run.EngineVersion = version
	}
	if model != "" {
		if run.Model == "" {
			run.Model, run.ModelNote = model, name+": model"
		} else if !strings.EqualFold(model, run.Model) {
			run.note("%s names the model %s; the trace's %s is used", name, model, run.Model)
		}
	}
	run.note("%s: vLLM %s, %s", name, firstNonEmpty(version, "(version not stated)"), firstNonEmpty(s.label, "no engine settings"))
	return nil
}

// ignoreYAML records the top-level keys of a YAML mapping that used does
// not accept, each with prefix.
func (r *Run) ignoreYAML(prefix string, b []byte, used func(string) bool) {
	var m map[string]any
	if yaml.Unmarshal(b, &m) != nil {
		return
	}
	for k := range m {
		if !used(k) {
			r.Ignored = append(r.Ignored, prefix+k)
		}
	}
}
