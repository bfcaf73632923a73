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
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// FormatSilicon is AIConfigurator's table of measured closed-loop runs
// (silicon_sample.csv as the tool ships it, silicon_vllm_agg.csv in the
// reference data): one run per row, each a fixed-length benchmark (random
// prompts of isl tokens, osl output tokens forced, a fixed number of
// requests in flight) with the client's mean TTFT and mean TPOT. A row is
// aggregated (mode agg: one engine) or disaggregated (mode disagg: pools
// of prefill and decode engines, their prefill_* and decode_* columns);
// see siliconRow.
const FormatSilicon = "aiconfigurator-silicon"

// SiliconRequestsPerUser and SiliconWarmupPerUser are the benchmark's
// request counts per concurrent user, as AIConfigurator's collector runs
// aiperf (--num-requests 20·C --warmup-request-count 2·C); the table
// records neither, so the replay uses these.
const (
	SiliconRequestsPerUser = 20
	SiliconWarmupPerUser   = 2
)

// siliconColumns are the columns the table must have.
var siliconColumns = []string{"id", "model_path", "system", "precision", "isl", "osl", "batch_size", "tp_size",
	"attention_dp_size", "moe_tp_size", "moe_ep_size", "silicon_ttft_ms", "silicon_tpot_ms"}

// siliconUsed are the other columns a row's reader uses.
var siliconUsed = keys("silicon_data_source", "backend", "backend_version", "mode", "pp_size",
	"prefill_batch_size", "prefill_num_workers", "prefill_tp_size", "prefill_pp_size", "prefill_attention_dp_size", "prefill_moe_tp_size", "prefill_moe_ep_size",
	"decode_batch_size", "decode_num_workers", "decode_tp_size", "decode_pp_size", "decode_attention_dp_size", "decode_moe_tp_size", "decode_moe_ep_size")

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

// SiliconTable is the table read: a run per usable row, and a note per row
// that is not (its line, id and why).
type SiliconTable struct {
	Runs    []*Run
	Skipped []string
	// Ignored are the columns no row's reader uses.
	Ignored []string
}

// ReadSilicon reads every row of the silicon table as a measured run (see
// siliconRow). A row that cannot be read, or describes a run the replay
// cannot serve (pipeline parallelism, an unknown mode), is skipped with a
// note naming it and the reason: one such row never refuses the file, but
// a file without a usable row is an error.
func ReadSilicon(r io.Reader, name string) (*SiliconTable, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	col := map[string]int{}
	t := &SiliconTable{}
	for i, h := range header {
		c := strings.ToLower(strings.TrimSpace(h))
		col[c] = i
		if !slices.Contains(siliconColumns, c) && !siliconUsed(c) {
			t.Ignored = append(t.Ignored, "column "+c)
		}
	}
	for _, c := range siliconColumns {
		if _, ok := col[c]; !ok {
			return nil, &ImportError{Format: FormatSilicon, Name: name, Record: 1, Field: c, Reason: "missing column"}
		}
	}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(t.Runs)+len(t.Skipped) >= maxSiliconRows {
			return nil, &ImportError{Format: FormatSilicon, Name: name, Record: line, Reason: fmt.Sprintf("more than %d rows", maxSiliconRows)}
		}
		run, err := siliconRow(rec, col, name, line)
		if err != nil {
			id := ""
			if i, ok := col["id"]; ok && i < len(rec) {
				id = strings.TrimSpace(rec[i])
			}
			t.Skipped = append(t.Skipped, fmt.Sprintf("row %d (%s) skipped: %v", line, firstNonEmpty(id, "no id"), err))
			continue
		}
		run.Ignored = t.Ignored
		t.Runs = append(t.Runs, run)
	}
	if len(t.Runs) == 0 {
		reason := "no rows"
		if len(t.Skipped) > 0 {
			reason = fmt.Sprintf("no usable row (%d skipped; the first: %s)", len(t.Skipped), t.Skipped[0])
		}
		return nil, &ImportError{Format: FormatSilicon, Name: name, Record: 2, Reason: reason}
	}
	return t, nil
}

// siliconLayout is one engine's layout in a row: tp × dp GPUs, dp
// attention ranks of tp (pp stages of them), the experts split
// moe_tp × moe_ep over them, batch requests in flight per attention-DP
// rank, workers engines.
type siliconLayout struct {
	tp, pp, dp, moeTP, moeEP, batch, workers int
	// note says how a row with attention data parallelism was read.
	note string
}

// siliconWorldLayout reads a row that states attention data parallelism
// as the harness that measured the shared rows launched it: tp_size is
// the engine's GPUs (the world size, as SGLang's --tp counts it with
// --enable-dp-attention and as the rows' ids name it, "tp4_ep4"), split
// into dp attention ranks of tp/dp GPUs each, with the routed experts
// spread over the same tp_size GPUs. The table's moe_tp × moe_ep counts
// tp × dp GPUs, dp times more than the engine has; the split is scaled
// back to tp_size GPUs. The measurements decide it: every such row of
// the shared table measured the TTFT and TPOT (within 1–4%) of the
// same GPU's tp_size-GPU expert-parallel row at the same concurrency
// (batch_size × dp), not those of tp × dp GPUs (docs/steptime.md, "The
// attention-DP rows of the silicon table").
func siliconWorldLayout(world, dp, moeTP, moeEP int) (tp, mtp, mep int, reason string) {
	if world%dp != 0 {
		return 0, 0, 0, fmt.Sprintf("%d ranks do not divide tp_size %d, the engine's GPUs", dp, world)
	}
	tp = world / dp
	switch {
	case moeTP*moeEP == world:
		return tp, moeTP, moeEP, ""
	case moeTP*moeEP != world*dp:
		return 0, 0, 0, fmt.Sprintf("moe_tp %d × moe_ep %d is neither tp_size %d nor tp_size × attention_dp_size %d GPUs", moeTP, moeEP, world, world*dp)
	case moeEP%dp == 0:
		return tp, moeTP, moeEP / dp, ""
	case moeTP%dp == 0:
		return tp, moeTP / dp, moeEP, ""
	}
	return 0, 0, 0, fmt.Sprintf("moe_tp %d × moe_ep %d does not split over tp_size %d GPUs", moeTP, moeEP, world)
}

// siliconReason is why a row is not read: the field and what is wrong
// (the line and file are the skip note's).
type siliconReason struct{ field, reason string }

func (e *siliconReason) Error() string {
	if e.field == "" {
		return e.reason
	}
	return "field " + e.field + ": " + e.reason
}

// siliconRow reads one row. An aggregated row (mode agg, or none) is one
// engine: tp_size GPUs, in attention_dp_size data-parallel ranks of
// tp_size / attention_dp_size GPUs (siliconWorldLayout; a row without
// attention_dp_size has moe_tp_size × moe_ep_size GPUs, tp_size per
// rank), the experts split moe_tp_size × moe_ep_size, batch_size requests
// in flight per attention-DP rank. A disaggregated row (mode disagg) is prefill_num_workers prefill
// engines and decode_num_workers decode engines, each with its own
// prefill_* and decode_* layout (Run.Disagg); its users are the
// silicon_concurrency the row's silicon_data_source states, else
// decode_batch_size × decode_attention_dp_size × decode_num_workers. A
// field a row's mode does not use may be left empty or 0 (the tool's
// placeholders), and so may moe_tp_size, moe_ep_size and
// attention_dp_size of a dense model (1).
func siliconRow(rec []string, col map[string]int, name string, line int) (*Run, error) {
	get := func(c string) string {
		if i, ok := col[c]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	// count reads a whole number in [1, hi]; empty or 0 is unset (0).
	count := func(c string, hi float64, required bool) (int, error) {
		s := get(c)
		if s == "" {
			if required {
				return 0, &siliconReason{c, "missing"}
			}
			return 0, nil
		}
		v, err := strconv.ParseFloat(s, 64)
		switch {
		case err != nil || math.IsNaN(v) || v < 0 || v > hi:
			return 0, &siliconReason{c, fmt.Sprintf("%q is not a number in [0, %g]", s, hi)}
		case v != math.Trunc(v):
			return 0, &siliconReason{c, fmt.Sprintf("%g is not a whole number", v)}
		case v == 0 && required:
			return 0, &siliconReason{c, "0: the row's mode needs it"}
		}
		return int(v), nil
	}
	ms := func(c string) (float64, error) {
		s := get(c)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > 1e9 {
			return 0, &siliconReason{c, fmt.Sprintf("%q is not a number in [0, 1e9] ms", s)}
		}
		return v, nil
	}
	layout := func(prefix string, workers bool) (siliconLayout, error) {
		var l siliconLayout
		var err error
		for _, f := range []struct {
			col      string
			dst      *int
			hi       float64
			required bool
		}{
			{"batch_size", &l.batch, 1 << 20, true}, {"tp_size", &l.tp, 4096, true}, {"pp_size", &l.pp, 4096, false},
			{"attention_dp_size", &l.dp, 4096, false}, {"moe_tp_size", &l.moeTP, 4096, false}, {"moe_ep_size", &l.moeEP, 4096, false},
			{"num_workers", &l.workers, 4096, workers},
		} {
			if f.col == "num_workers" && !workers {
				continue
			}
			if *f.dst, err = count(prefix+f.col, f.hi, f.required); err != nil {
				return l, err
			}
		}
		l.pp, l.workers = max(l.pp, 1), max(l.workers, 1)
		if l.pp > 1 {
			return l, &siliconReason{prefix + "pp_size", fmt.Sprintf("%d pipeline stages: the simulator serves no pipeline parallelism", l.pp)}
		}
		moeTP, moeEP := max(l.moeTP, 1), max(l.moeEP, 1)
		if l.dp == 0 {
			// Older rows leave the attention data parallelism out: the
			// expert split covers every GPU, tp × dp of them.
			l.dp = max(moeTP*moeEP/l.tp, 1)
		} else if l.dp > 1 {
			world, tmp, tep := l.tp, moeTP, moeEP
			var reason string
			if l.tp, moeTP, moeEP, reason = siliconWorldLayout(l.tp, l.dp, moeTP, moeEP); reason != "" {
				return l, &siliconReason{prefix + "attention_dp_size", reason}
			}
			l.note = fmt.Sprintf("%stp_size %d with %sattention_dp_size %d read as %d GPUs: %d attention ranks of %d, the experts split %d×%d over them (the table's moe_tp × moe_ep, %d×%d, counts tp × dp GPUs; docs/steptime.md)",
				prefix, world, prefix, l.dp, world, l.dp, l.tp, moeTP, moeEP, tmp, tep)
		}
		if moeTP*moeEP != l.tp*l.dp && moeTP*moeEP != 1 {
			return l, &siliconReason{prefix + "moe_tp_size", fmt.Sprintf("moe_tp %d × moe_ep %d is not tp %d × attention_dp %d GPUs", moeTP, moeEP, l.tp, l.dp)}
		}
		l.moeTP, l.moeEP = moeTP, moeEP
		return l, nil
	}
	var vals = map[string]float64{}
	for _, c := range []string{"isl", "osl"} {
		n, err := count(c, 1<<24, true)
		if err != nil {
			return nil, err
		}
		vals[c] = float64(n)
	}
	for _, c := range []string{"silicon_ttft_ms", "silicon_tpot_ms"} {
		v, err := ms(c)
		if err != nil {
			return nil, err
		}
		vals[c] = v
	}
	run := &Run{
		Name:          get("id"),
		Format:        FormatSilicon,
		Model:         get("model_path"),
		GPU:           get("system"),
		GPUNote:       "the row's system",
		EngineVersion: get("backend_version"),
		Quantization:  get("precision"),
	}
	if b := strings.ToLower(get("backend")); b != "" && b != "vllm" {
		return nil, &siliconReason{"backend", fmt.Sprintf("%q: the simulator models vLLM", get("backend"))}
	}
	users := 0
	switch mode := strings.ToLower(get("mode")); mode {
	case "", "agg":
		l, err := layout("", false)
		if err != nil {
			return nil, err
		}
		run.TP, run.DP, run.MoETP, run.MoEEP = l.tp, l.dp, l.moeTP, l.moeEP
		if l.note != "" {
			run.note("%s", l.note)
		}
		// batch_size is per attention-DP rank: the benchmark kept
		// batch_size × attention_dp_size requests in flight (every row
		// whose silicon_data_source states silicon_concurrency agrees). A
		// row that leaves attention_dp_size out states the whole
		// concurrency.
		n, _ := count("attention_dp_size", 4096, false)
		users = l.batch * max(n, 1)
	case "disagg":
		pre, err := layout("prefill_", true)
		if err != nil {
			return nil, err
		}
		dec, err := layout("decode_", true)
		if err != nil {
			return nil, err
		}
		run.TP, run.DP, run.MoETP, run.MoEEP = dec.tp, dec.dp, dec.moeTP, dec.moeEP
		for _, n := range []string{pre.note, dec.note} {
			if n != "" {
				run.note("%s", n)
			}
		}
		run.Disagg = &Disagg{
			Prefill: Pool{Workers: pre.workers, TP: pre.tp, DP: pre.dp, MoETP: pre.moeTP, MoEEP: pre.moeEP, BatchSize: pre.batch},
			Decode:  Pool{Workers: dec.workers, TP: dec.tp, DP: dec.dp, MoETP: dec.moeTP, MoEEP: dec.moeEP, BatchSize: dec.batch},
		}
		if c := siliconConcurrency(get("silicon_data_source")); c > 0 {
			users = c
		} else {
			users = dec.batch * dec.dp * dec.workers
			run.note("users: decode_batch_size %d × decode_attention_dp_size %d × decode_num_workers %d (the row states no silicon_concurrency)", dec.batch, dec.dp, dec.workers)
		}
	default:
		return nil, &siliconReason{"mode", fmt.Sprintf("%q is not agg or disagg", get("mode"))}
	}
	if users > 1<<20 {
		return nil, &siliconReason{"batch_size", fmt.Sprintf("%d users is more than %d", users, 1<<20)}
	}
	run.ExpertParallel = run.MoEEP > 1 || (run.Disagg != nil && run.Disagg.Prefill.MoEEP > 1)
	run.Warmup = SiliconWarmupPerUser * users
	run.Aggregate = &Aggregate{
		TTFTMS:           map[string]float64{"mean": vals["silicon_ttft_ms"]},
		TPOTMS:           map[string]float64{"mean": vals["silicon_tpot_ms"]},
		Completed:        SiliconRequestsPerUser * users,
		Concurrency:      users,
		MeanInputTokens:  vals["isl"],
		MeanOutputTokens: vals["osl"],
	}
	// The table does not record the server's max_model_len; the model's
	// own limit does not fit every row's layout (MiniMax-M2.5's 196,608
	// tokens on one B300), so the replay serves what the benchmark needs:
	// its lengths, with room for the spread of output lengths a closed loop
	// is replayed with (replay.ClosedLoopOutputSpreadTokens, 3; 16 here).
	run.Engine.MaxModelLen = int(vals["isl"] + vals["osl"] + 16)
	if run.Name == "" {
		run.Name = fmt.Sprintf("%s:%d", name, line)
	}
	if src := get("silicon_data_source"); src != "" {
		run.Engine.Extra = append(run.Engine.Extra, src)
	}
	return run, nil
}

// reSiliconConcurrency is the users a row's silicon_data_source states.
var reSiliconConcurrency = regexp.MustCompile(`(?:^|[;\s])silicon_concurrency=([0-9]{1,7})(?:$|[;\s])`)

func siliconConcurrency(src string) int {
	m := reSiliconConcurrency.FindStringSubmatch(src)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
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
