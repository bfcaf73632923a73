package kernels

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Stat is one measured time's summary over repetitions, in milliseconds, as
// Vidur writes it (time_stats.<op>.{min,max,mean,median,std}).
type Stat struct {
	Min, Max, Mean, Median, Std float64
}

// Seconds is the median in seconds: every comparison uses the median.
func (s Stat) Seconds() float64 { return s.Median * 1e-3 }

// readStat reads the five columns of time_stats.<op>; ok is false when the
// median cell is empty (the op was not run for this row).
func (t *table) readStat(i int, op string) (Stat, bool, error) {
	var s Stat
	dst := []*float64{&s.Min, &s.Max, &s.Mean, &s.Median, &s.Std}
	var seen bool
	for k, f := range []string{"min", "max", "mean", "median", "std"} {
		col := "time_stats." + op + "." + f
		if !t.has(col) {
			continue
		}
		v, ok, err := t.float(i, col)
		if err != nil {
			return s, false, err
		}
		if ok {
			*dst[k] = v
			if f == "median" {
				seen = true
			}
		}
	}
	return s, seen, nil
}

// statOps lists the op names of the time_stats.<op>.median columns, in
// column order.
func (t *table) statOps() []string {
	type oc struct {
		op  string
		col int
	}
	var ops []oc
	for name, j := range t.col {
		if strings.HasPrefix(name, "time_stats.") && strings.HasSuffix(name, ".median") {
			ops = append(ops, oc{strings.TrimSuffix(strings.TrimPrefix(name, "time_stats."), ".median"), j})
		}
	}
	sort.Slice(ops, func(a, b int) bool { return ops[a].col < ops[b].col })
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = o.op
	}
	return out
}

// Shape is the transformer-layer shape of a Vidur profile row (the model's
// full, unsharded dimensions).
type Shape struct {
	Heads, KVHeads int
	Hidden         int // n_embd
	Intermediate   int // n_expanded_embd
	Vocab          int
	GatedMLP       bool
}

// HeadDim is hidden / heads.
func (s Shape) HeadDim() int { return s.Hidden / max(s.Heads, 1) }

// MLPRow is one row of Vidur's mlp.csv: the measured times of one layer's
// token-level operations for a token count and tensor-parallel degree.
type MLPRow struct {
	Shape
	Tokens int
	TP     int
	// Ops maps Vidur's op name (attn_pre_proj, mlp_up_proj, …) to its time.
	Ops map[string]Stat
}

// ReadMLP parses a Vidur mlp.csv.
func ReadMLP(name string, r io.Reader) ([]MLPRow, error) {
	t, err := readTable(name, r)
	if err != nil {
		return nil, err
	}
	if err := t.require("n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size",
		"use_gated_mlp", "num_tokens", "num_tensor_parallel_workers"); err != nil {
		return nil, err
	}
	ops := t.statOps()
	if len(ops) == 0 {
		return nil, fmt.Errorf("%s: no time_stats.<op>.median columns", name)
	}
	out := make([]MLPRow, 0, len(t.rows))
	for i := range t.rows {
		var row MLPRow
		ints := []struct {
			col string
			dst *int
		}{
			{"n_head", &row.Heads}, {"n_kv_head", &row.KVHeads}, {"n_embd", &row.Hidden},
			{"n_expanded_embd", &row.Intermediate}, {"vocab_size", &row.Vocab},
			{"num_tokens", &row.Tokens}, {"num_tensor_parallel_workers", &row.TP},
		}
		for _, c := range ints {
			if *c.dst, err = t.int(i, c.col); err != nil {
				return nil, err
			}
			if *c.dst <= 0 {
				return nil, t.rowError(i, c.col, fmt.Errorf("%d is not positive", *c.dst))
			}
		}
		if row.GatedMLP, err = t.bool(i, "use_gated_mlp"); err != nil {
			return nil, err
		}
		if row.Heads%row.KVHeads != 0 || row.Hidden%row.Heads != 0 {
			return nil, t.rowError(i, "n_head", fmt.Errorf("heads %d, kv heads %d, hidden %d are inconsistent", row.Heads, row.KVHeads, row.Hidden))
		}
		row.Ops = make(map[string]Stat, len(ops))
		for _, op := range ops {
			s, ok, err := t.readStat(i, op)
			if err != nil {
				return nil, err
			}
			if ok {
				row.Ops[op] = s
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// AttentionRow is one row of Vidur's attention.csv: one layer's attention
// kernel for a batch of prefill chunks or decodes.
type AttentionRow struct {
	Hidden, Heads, KVHeads int // full model
	BlockSize, TP          int
	BatchSize              int
	// PrefillChunk is the new tokens of each prefill (0 for decode);
	// KVCache is the tokens already cached per sequence.
	PrefillChunk, KVCache int
	IsPrefill             bool
	Backend               string
	// Time is attn_prefill or attn_decode.
	Time Stat
	// Reshape is attn_input_reshape + attn_output_reshape (medians, ms).
	ReshapeMS float64
}

// ReadAttention parses a Vidur attention.csv.
func ReadAttention(name string, r io.Reader) ([]AttentionRow, error) {
	t, err := readTable(name, r)
	if err != nil {
		return nil, err
	}
	if err := t.require("n_embd", "n_q_head", "n_kv_head", "block_size", "num_tensor_parallel_workers",
		"batch_size", "prefill_chunk_size", "kv_cache_size", "is_prefill"); err != nil {
		return nil, err
	}
	out := make([]AttentionRow, 0, len(t.rows))
	for i := range t.rows {
		var a AttentionRow
		ints := []struct {
			col string
			dst *int
		}{
			{"n_embd", &a.Hidden}, {"n_q_head", &a.Heads}, {"n_kv_head", &a.KVHeads},
			{"block_size", &a.BlockSize}, {"num_tensor_parallel_workers", &a.TP},
			{"batch_size", &a.BatchSize}, {"prefill_chunk_size", &a.PrefillChunk}, {"kv_cache_size", &a.KVCache},
		}
		for _, c := range ints {
			if *c.dst, err = t.int(i, c.col); err != nil {
				return nil, err
			}
			if *c.dst < 0 {
				return nil, t.rowError(i, c.col, fmt.Errorf("%d is negative", *c.dst))
			}
		}
		if a.Heads <= 0 || a.KVHeads <= 0 || a.Heads%a.KVHeads != 0 || a.TP <= 0 || a.BatchSize <= 0 {
			return nil, t.rowError(i, "n_q_head", fmt.Errorf("heads %d, kv heads %d, tp %d, batch %d are inconsistent", a.Heads, a.KVHeads, a.TP, a.BatchSize))
		}
		if a.IsPrefill, err = t.bool(i, "is_prefill"); err != nil {
			return nil, err
		}
		a.Backend = t.str(i, "attention_backend")
		op := "attn_decode"
		if a.IsPrefill {
			op = "attn_prefill"
		}
		s, ok, err := t.readStat(i, op)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, t.rowError(i, "time_stats."+op+".median", fmt.Errorf("empty"))
		}
		a.Time = s
		for _, op := range []string{"attn_input_reshape", "attn_output_reshape"} {
			s, ok, err := t.readStat(i, op)
			if err != nil {
				return nil, err
			}
			if ok {
				a.ReshapeMS += s.Median
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// CollectiveRow is one row of Vidur's all_reduce.csv (or send_recv.csv).
type CollectiveRow struct {
	Collective string
	Workers    int
	// SizeBytes is the message size. Vidur's profiler allocates the
	// buffer in bytes; reading it as fp16 elements would put the 8-GPU H100
	// bus bandwidth above NVLink4's 450 GB/s, so bytes it is.
	SizeBytes         int64
	Rank              int
	DevicesPerNode    int
	MaxDevicesPerNode int
	Time              Stat
}

// IntraNode says whether all workers sit in one node (one NVLink domain).
func (c CollectiveRow) IntraNode() bool { return c.DevicesPerNode >= c.Workers }

// ReadCollective parses a Vidur network all_reduce.csv or send_recv.csv.
func ReadCollective(name string, r io.Reader) ([]CollectiveRow, error) {
	t, err := readTable(name, r)
	if err != nil {
		return nil, err
	}
	if err := t.require("num_workers", "size", "collective", "devices_per_node"); err != nil {
		return nil, err
	}
	out := make([]CollectiveRow, 0, len(t.rows))
	for i := range t.rows {
		c := CollectiveRow{Collective: t.str(i, "collective")}
		if c.Workers, err = t.int(i, "num_workers"); err != nil {
			return nil, err
		}
		sz, err := t.mustFloat(i, "size")
		if err != nil {
			return nil, err
		}
		c.SizeBytes = int64(sz)
		if c.DevicesPerNode, err = t.int(i, "devices_per_node"); err != nil {
			return nil, err
		}
		if t.has("max_devices_per_node") {
			if c.MaxDevicesPerNode, err = t.int(i, "max_devices_per_node"); err != nil {
				return nil, err
			}
		}
		if t.has("rank") {
			if c.Rank, err = t.int(i, "rank"); err != nil {
				return nil, err
			}
		}
		if c.Workers <= 0 || c.SizeBytes <= 0 || c.DevicesPerNode <= 0 {
			return nil, t.rowError(i, "num_workers", fmt.Errorf("workers %d, size %d, devices per node %d must be positive", c.Workers, c.SizeBytes, c.DevicesPerNode))
		}
		s, ok, err := t.readStat(i, c.Collective)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, t.rowError(i, "time_stats."+c.Collective+".median", fmt.Errorf("empty"))
		}
		c.Time = s
		out = append(out, c)
	}
	return out, nil
}

// SplitwiseRow is one row of Splitwise's perf_model.csv: a static batch of
// BatchSize identical requests of PromptTokens prompt tokens generating up
// to OutputTokens tokens on TP GPUs.
type SplitwiseRow struct {
	Model, Hardware string
	PromptTokens    int
	BatchSize       int
	OutputTokens    int // token_size
	TP              int
	// PromptMS is the prefill time, TokenMS the mean time per decode step,
	// E2EMS the whole batch's time.
	PromptMS, TokenMS, E2EMS float64
}

// DecodedTokens is how many decode steps the row's e2e time implies:
// (e2e − prompt)/token, rounded. Where it falls short of OutputTokens − 1
// the generation stopped early.
func (s SplitwiseRow) DecodedTokens() float64 {
	if s.TokenMS <= 0 {
		return 0
	}
	return (s.E2EMS - s.PromptMS) / s.TokenMS
}

// ReadSplitwise parses Splitwise's perf_model.csv.
func ReadSplitwise(name string, r io.Reader) ([]SplitwiseRow, error) {
	t, err := readTable(name, r)
	if err != nil {
		return nil, err
	}
	if err := t.require("model", "hardware", "prompt_size", "batch_size", "token_size",
		"prompt_time", "token_time", "e2e_time", "tensor_parallel"); err != nil {
		return nil, err
	}
	out := make([]SplitwiseRow, 0, len(t.rows))
	for i := range t.rows {
		s := SplitwiseRow{Model: t.str(i, "model"), Hardware: t.str(i, "hardware")}
		ints := []struct {
			col string
			dst *int
		}{
			{"prompt_size", &s.PromptTokens}, {"batch_size", &s.BatchSize},
			{"token_size", &s.OutputTokens}, {"tensor_parallel", &s.TP},
		}
		for _, c := range ints {
			if *c.dst, err = t.int(i, c.col); err != nil {
				return nil, err
			}
			if *c.dst <= 0 {
				return nil, t.rowError(i, c.col, fmt.Errorf("%d is not positive", *c.dst))
			}
		}
		fl := []struct {
			col string
			dst *float64
		}{{"prompt_time", &s.PromptMS}, {"token_time", &s.TokenMS}, {"e2e_time", &s.E2EMS}}
		for _, c := range fl {
			if *c.dst, err = t.mustFloat(i, c.col); err != nil {
				return nil, err
			}
			if !(*c.dst > 0) {
				return nil, t.rowError(i, c.col, fmt.Errorf("%g is not positive", *c.dst))
			}
		}
		out = append(out, s)
	}
	return out, nil
}
