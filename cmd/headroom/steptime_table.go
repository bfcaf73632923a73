package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/headroom-sim/headroom/internal/study/stepreport"
)

// writeStepTable prints an explained step: what runs where, one row per
// kernel, the totals by op kind and by bound, and the step's times.
func writeStepTable(w io.Writer, r *stepreport.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	layout := fmt.Sprintf("tp %d", r.TP)
	if r.DP > 1 {
		layout += fmt.Sprintf(" × dp %d", r.DP)
	}
	fmt.Fprintf(tw, "Model\t%s on %d× %s, %s\n", r.Model, r.GPUs, r.GPU, layout)
	p := r.Precision
	prec := fmt.Sprintf("weights %s", p.Weights)
	if p.Experts != "" && p.Experts != p.Weights {
		prec += fmt.Sprintf(", experts %s", p.Experts)
	}
	if p.Attention != "" && p.Attention != p.Weights {
		prec += fmt.Sprintf(", attention %s", p.Attention)
	}
	fmt.Fprintf(tw, "Precision\t%s, KV %s, activations %s; kernel formats %s\n", prec, p.KV, p.Activations, strings.Join(r.KernelFormats, ", "))
	if x := r.Experts; x != nil {
		fmt.Fprintf(tw, "Experts\t%d routed, top %d, moe_tp %d × moe_ep %d (%d per GPU), %s, routing %s\n",
			x.Routed, x.TopK, x.MoETP, x.MoEEP, x.PerGPU, x.ExpertsFormat, x.Routing)
		if x.RoutedPairs > 0 {
			fmt.Fprintf(tw, "Active experts\t%.1f of %d per GPU serve %.0f token-expert pairs per layer (%s routing): %.1f MB of expert weights per layer, %.2f GB per pass\n",
				x.ActiveExperts, x.PerGPU, x.RoutedPairs, x.Routing, x.ActiveWeightBytes/1e6, x.ActiveWeightBytes*float64(x.Layers)/1e9)
		}
	}
	a := r.Attention
	att := fmt.Sprintf("%d/%d heads × %d per GPU; %d full layers", a.HeadsPerGPU, a.KVHeadsPerGPU, a.HeadDim, a.FullLayers)
	if a.SlidingLayers > 0 {
		att += fmt.Sprintf(", %d sliding-window layers of %d tokens", a.SlidingLayers, a.WindowTokens)
	}
	if a.MLA {
		att += " (multi-head latent attention)"
	}
	fmt.Fprintf(tw, "Attention\t%s\n", att)
	backend := r.Backend
	if db := r.KernelDB; db != nil {
		backend += ": " + db.Source
		if !strings.Contains(db.Source, db.System) {
			backend += fmt.Sprintf(" (system %s)", db.System)
		}
	}
	fmt.Fprintf(tw, "Backend\t%s\n", backend)
	fmt.Fprintf(tw, "Profile\t%s\n", r.ProfileSource)
	en := r.Engine
	graph := "this step replays one"
	if !en.CUDAGraph {
		graph = "this step is eager"
	}
	async := "async scheduling off"
	if en.AsyncScheduling {
		async = fmt.Sprintf("async scheduling on (hides up to %.0f%% of the CPU time)", 100*en.AsyncOverlapRatio)
	}
	fmt.Fprintf(tw, "Engine\tmax_num_seqs %d, max_num_batched_tokens %d, max_model_len %d; CUDA graphs up to %d tokens, %s; %s\n",
		en.MaxNumSeqs, en.MaxNumBatchedTokens, en.MaxModelLen, en.CUDAGraphMaxTokens, graph, async)
	fmt.Fprintf(tw, "Batch\t%s\n", batchLine(&r.Batch, en))
	tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Kernel\tOp\tCalls\tOne call\tµs/call\tTotal µs\tShare\tBound\tMeasured µs/call\tSource")
	for _, k := range r.Kernels {
		measured := "-"
		if k.MeasuredUS != nil {
			measured = fmt.Sprintf("%.1f", *k.MeasuredUS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.1f\t%.1f\t%s\t%s\t%s\t%s\n", k.Name, k.Op, k.Calls, k.Shape, k.PerCallUS, k.TimeUS,
			pct(k.ShareRatio), k.Bound, measured, k.Source)
	}
	tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Op kind\t      µs\t Share\tBound")
	for _, o := range r.Ops {
		fmt.Fprintf(tw, "%s\t%8.1f\t%6s\t%s\n", o.Op, o.TimeUS, pct(o.ShareRatio), o.Bound)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Bound\t      µs\t Share")
	for _, b := range r.Bounds {
		fmt.Fprintf(tw, "%s\t%8.1f\t%6s\n", b.Bound, b.TimeUS, pct(b.ShareRatio))
	}
	tw.Flush()
	if sp := r.Speculative; sp != nil {
		writeSpecStep(w, sp)
	}

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "GPU\t%.3f ms\n", r.GPUMS)
	cpu := fmt.Sprintf("%.3f ms", r.CPUMS)
	if r.CPUHiddenMS > 0 {
		cpu += fmt.Sprintf(", %.3f ms of it hidden under async scheduling", r.CPUHiddenMS)
	}
	fmt.Fprintf(tw, "CPU\t%s\n", cpu)
	if sp := r.Speculative; sp != nil {
		fmt.Fprintf(tw, "Speculative\t%.3f ms (rejection sampler and proposer, above)\n", sp.AddedUS/1e3)
	}
	fmt.Fprintf(tw, "Step\t%.3f ms\n", r.StepMS)
	fmt.Fprintf(tw, "API server\t%.3f ms to stream the step's %g output tokens (its own thread)\n", r.FrontendMS, r.OutputTokens)
	tput := fmt.Sprintf("%.0f tokens/s, %.0f output tokens/s", r.TokensPerS, r.OutputTokensPerS)
	if r.DP > 1 {
		tput += fmt.Sprintf(" per rank; the replica: %.0f tokens/s, %.0f output tokens/s", r.ReplicaTokensPerS, r.ReplicaOutputTokensPerS)
	}
	fmt.Fprintf(tw, "Throughput\t%s\n", tput)
	if r.TPOTMS != nil {
		fmt.Fprintf(tw, "TPOT\t%.3f ms\n", *r.TPOTMS)
	}
	tw.Flush()
	if len(r.Notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
}

// writeSpecStep prints a speculative step's terms beyond the target's
// verification.
func writeSpecStep(w io.Writer, sp *stepreport.Speculative) {
	fmt.Fprintf(w, "\nSpeculative decoding: %s, %d drafts per sequence; %d draft positions verified, %d sequences drafting\n",
		sp.Method, sp.NumSpeculativeTokens, sp.DraftPositions, sp.DraftingSeqs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Term\t      µs\tWhat")
	fmt.Fprintf(tw, "rejection sampler\t%8.1f\ttarget probabilities at every draft position (temperature, top-p), accepted prefix, recovered token\n", sp.RejectionSamplerUS)
	if sp.NgramUS > 0 || sp.DraftGPUUS == 0 {
		fmt.Fprintf(tw, "n-gram proposer\t%8.1f\tprompt lookup on the host CPU\n", sp.NgramUS)
	} else {
		fmt.Fprintf(tw, "draft passes (GPU)\t%8.1f\t%d passes; the first over %d token rows (%.1f µs)\n", sp.DraftGPUUS, sp.NumSpeculativeTokens, sp.FirstPassTokens, sp.FirstPassUS)
		fmt.Fprintf(tw, "proposer host, set-up\t%8.1f\tthe drafter's inputs and attention metadata\n", sp.ProposerHostSetupUS)
		fmt.Fprintf(tw, "proposer host, passes\t%8.1f\tmetadata, launches, logits and argmax of the %d passes\n", sp.ProposerHostPassesUS, sp.NumSpeculativeTokens)
		fmt.Fprintf(tw, "proposer\t%8.1f\tset-up + the longer of the passes' host and GPU times (%s-bound)\n", sp.ProposerUS, sp.ProposerBound)
	}
	fmt.Fprintf(tw, "added to the step\t%8.1f\t\n", sp.AddedUS)
	tw.Flush()
	fmt.Fprintf(w, "Acceptance: %.2f tokens per verification (%s)\n", sp.MeanAcceptanceLength, sp.AcceptanceSource)
}

// batchLine describes the batch in words.
func batchLine(b *stepreport.BatchInfo, en stepreport.Engine) string {
	var parts []string
	if b.DecodeSeqs > 0 {
		parts = append(parts, fmt.Sprintf("%d decoding × %d KV tokens", b.DecodeSeqs, b.KVLen))
	}
	if b.PrefillChunks > 0 {
		chunk := "chunk"
		if b.PrefillChunks > 1 {
			chunk = "chunks"
		}
		s := fmt.Sprintf("%d prefill %s of %d tokens after %d cached", b.PrefillChunks, chunk, b.PrefillTokens, b.PrefillContextTokens)
		if !b.PrefillCompletes {
			s += " (not completing their prompts)"
		}
		parts = append(parts, s)
	}
	line := strings.Join(parts, " + ") + fmt.Sprintf(": %d tokens, %d sampled", b.Tokens, b.Sampled)
	if b.MoEGroupTokens > 0 && b.MoEGroupTokens != b.Tokens {
		line += fmt.Sprintf(", %d in the MoE layers", b.MoEGroupTokens)
	}
	return line + fmt.Sprintf("; %d of %d KV blocks of %d tokens", b.KVBlocks, en.NumGPUBlocks, en.BlockSize)
}

func pct(r float64) string { return fmt.Sprintf("%.1f%%", 100*r) }
