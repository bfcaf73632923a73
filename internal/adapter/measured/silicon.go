package measured

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
)

// FormatSilicon is AIConfigurator's table of measured closed-loop vLLM
// runs (silicon_vllm_agg.csv): one run per row, each a fixed-length
// benchmark (random prompts of isl tokens, osl output tokens forced,
// batch_size requests in flight per attention data-parallel rank) with the
// client's mean TTFT and mean TPOT.
const FormatSilicon = "aiconfigurator-silicon"

// SiliconRequestsPerUser and SiliconWarmupPerUser are the benchmark's
// request counts per concurrent user, as AIConfigurator's collector runs
// aiperf (--num-requests 20·C --warmup-request-count 2·C); the table
// records neither, so the replay uses these.
const (
	SiliconRequestsPerUser = 20
	SiliconWarmupPerUser   = 2
)

// siliconColumns are the columns a row must have.
var siliconColumns = []string{"id", "model_path", "system", "precision", "isl", "osl", "batch_size", "tp_size",
	"attention_dp_size", "moe_tp_size", "moe_ep_size", "silicon_ttft_ms", "silicon_tpot_ms"}

// IsSiliconHeader reports whether a CSV header is the silicon table's.
func IsSiliconHeader(header []string) bool {
	have := map[string]bool{}
	for _, h := range header {
		have[strings.ToLower(strings.TrimSpace(h))] = true
	}
	for _, c := range siliconColumns {
		if !have[c] {
			return false
		}
	}
	return true
}

// maxSiliconRows bounds the rows read from one file.
const maxSiliconRows = 100_000

// ReadSilicon reads every row of the silicon table as a measured run. The
// run's model is the row's model_path (a Hugging Face id), its GPU the
// system (h100_sxm …, catalog aliases), its layout tp_size × attention_dp_size
// GPUs with the experts split moe_tp_size × moe_ep_size; Aggregate holds
// the concurrency, lengths and the measured means.
func ReadSilicon(r io.Reader, name string) ([]*Run, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, c := range siliconColumns {
		if _, ok := col[c]; !ok {
			return nil, &ImportError{Format: FormatSilicon, Name: name, Record: 1, Field: c, Reason: "missing column"}
		}
	}
	var runs []*Run
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(runs) >= maxSiliconRows {
			return nil, &ImportError{Format: FormatSilicon, Name: name, Record: line, Reason: fmt.Sprintf("more than %d rows", maxSiliconRows)}
		}
		run, err := siliconRow(rec, col, name, line)
		if err != nil {
			return nil, err
		}
		runs = append(runs, run)
	}
	if len(runs) == 0 {
		return nil, &ImportError{Format: FormatSilicon, Name: name, Record: 2, Reason: "no rows"}
	}
	return runs, nil
}

func siliconRow(rec []string, col map[string]int, name string, line int) (*Run, error) {
	get := func(c string) string {
		if i, ok := col[c]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	num := func(c string, min, max float64, optional bool) (float64, error) {
		s := get(c)
		if s == "" && optional {
			return 0, nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || v < min || v > max {
			return 0, &ImportError{Format: FormatSilicon, Name: name, Record: line, Field: c, Reason: fmt.Sprintf("%q is not a number in [%g, %g]", s, min, max)}
		}
		return v, nil
	}
	var vals = map[string]float64{}
	for _, c := range []struct {
		name     string
		min, max float64
		optional bool
	}{
		{"isl", 1, 1 << 24, false}, {"osl", 1, 1 << 24, false}, {"batch_size", 1, 1 << 20, false},
		{"tp_size", 1, 4096, false}, {"attention_dp_size", 1, 4096, true}, {"moe_tp_size", 1, 4096, true},
		{"moe_ep_size", 1, 4096, true}, {"silicon_ttft_ms", 0, 1e9, false}, {"silicon_tpot_ms", 0, 1e9, false},
	} {
		v, err := num(c.name, c.min, c.max, c.optional)
		if err != nil {
			return nil, err
		}
		if v != math.Trunc(v) && c.name != "silicon_ttft_ms" && c.name != "silicon_tpot_ms" {
			return nil, &ImportError{Format: FormatSilicon, Name: name, Record: line, Field: c.name, Reason: fmt.Sprintf("%g is not a whole number", v)}
		}
		vals[c.name] = v
	}
	tp := int(vals["tp_size"])
	moeTP, moeEP := int(max(vals["moe_tp_size"], 1)), int(max(vals["moe_ep_size"], 1))
	dp := int(vals["attention_dp_size"])
	if dp == 0 {
		// Older rows leave the attention data parallelism out: the expert
		// split covers every GPU, tp × dp of them.
		dp = max(moeTP*moeEP/tp, 1)
	}
	if moeTP*moeEP != tp*dp && moeTP*moeEP != 1 {
		return nil, &ImportError{Format: FormatSilicon, Name: name, Record: line, Field: "moe_tp_size", Reason: fmt.Sprintf("moe_tp %d × moe_ep %d is not tp %d × attention_dp %d GPUs", moeTP, moeEP, tp, dp)}
	}
	// batch_size is per attention-DP rank: the benchmark kept batch_size ×
	// attention_dp_size requests in flight (every row whose
	// silicon_data_source states silicon_concurrency agrees). A row that
	// leaves attention_dp_size out states the whole concurrency.
	c := int(vals["batch_size"]) * max(int(vals["attention_dp_size"]), 1)
	if c > 1<<20 {
		return nil, &ImportError{Format: FormatSilicon, Name: name, Record: line, Field: "batch_size", Reason: fmt.Sprintf("batch_size × attention_dp_size = %d users is more than %d", c, 1<<20)}
	}
	run := &Run{
		Name:          get("id"),
		Format:        FormatSilicon,
		Model:         get("model_path"),
		GPU:           get("system"),
		GPUNote:       "the row's system",
		TP:            tp,
		DP:            dp,
		MoETP:         moeTP,
		MoEEP:         moeEP,
		EngineVersion: get("backend_version"),
		Quantization:  get("precision"),
		Warmup:        SiliconWarmupPerUser * c,
		Aggregate: &Aggregate{
			TTFTMS:           map[string]float64{"mean": vals["silicon_ttft_ms"]},
			TPOTMS:           map[string]float64{"mean": vals["silicon_tpot_ms"]},
			Completed:        SiliconRequestsPerUser * c,
			Concurrency:      c,
			MeanInputTokens:  vals["isl"],
			MeanOutputTokens: vals["osl"],
		},
	}
	run.ExpertParallel = moeEP > 1
	// The table does not record the server's max_model_len; the model's
	// own limit does not fit every row's layout (MiniMax-M2.5's 196,608
	// tokens on one B300), so the replay serves what the benchmark needs.
	run.Engine.MaxModelLen = int(vals["isl"] + vals["osl"])
	if run.Name == "" {
		run.Name = fmt.Sprintf("%s:%d", name, line)
	}
	if src := get("silicon_data_source"); src != "" {
		run.Engine.Extra = append(run.Engine.Extra, src)
	}
	return run, nil
}

// siliconHeadBytes bounds what IsSiliconFile reads to find the header.
const siliconHeadBytes = 64 << 10

// IsSiliconFile reports whether name in fsys is a silicon table: a .csv
// file whose header has the table's columns.
func IsSiliconFile(fsys fs.FS, name string) bool {
	if !strings.EqualFold(path.Ext(name), ".csv") {
		return false
	}
	f, err := fsys.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	head, err := io.ReadAll(io.LimitReader(f, siliconHeadBytes))
	if err != nil {
		return false
	}
	line, _, _ := bytes.Cut(trimBOM(head), []byte("\n"))
	rec, err := csv.NewReader(bytes.NewReader(line)).Read()
	return err == nil && IsSiliconHeader(rec)
}

// FindSiliconFiles lists the silicon tables at or below root in fsys,
// sorted; run folders (FindRunDirs) are not searched.
func FindSiliconFiles(fsys fs.FS, root string) ([]string, error) {
	var out []string
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && IsRunDir(fsys, p):
			return fs.SkipDir
		case d.Type().IsRegular() && IsSiliconFile(fsys, p):
			out = append(out, p)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}
