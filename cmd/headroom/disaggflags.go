package main

import (
	"flag"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/plan"
)

// disaggFlags ask `headroom plan` for disaggregated prefill/decode
// candidates beside the aggregated ones.
type disaggFlags struct {
	on                      bool
	prefillGPUs, decodeGPUs string
	prefillTPs, decodeTPs   string
	maxReplicas             int
}

func (d *disaggFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&d.on, "disagg", false, "also search disaggregated clusters: a prefill and a decode pool, each over --gpus and --tps (the scenario's disaggregation section gives the KV link and the pools' engine settings)")
	fs.StringVar(&d.prefillGPUs, "prefill-gpus", "", "the prefill pool's candidate GPUs (implies --disagg; default --gpus)")
	fs.StringVar(&d.decodeGPUs, "decode-gpus", "", "the decode pool's candidate GPUs (implies --disagg; default --gpus)")
	fs.StringVar(&d.prefillTPs, "prefill-tps", "", "the prefill pool's tensor-parallel degrees (implies --disagg; default --tps)")
	fs.StringVar(&d.decodeTPs, "decode-tps", "", "the decode pool's tensor-parallel degrees (implies --disagg; default --tps)")
	fs.IntVar(&d.maxReplicas, "disagg-max-replicas", 0, "most replicas to try per pool (default --max-replicas)")
}

// search is the disaggregated search the flags ask for (nil for none).
func (d *disaggFlags) search(cat *catalogs.Catalog) (*plan.DisaggSearch, error) {
	if !d.on && d.prefillGPUs == "" && d.decodeGPUs == "" && d.prefillTPs == "" && d.decodeTPs == "" && d.maxReplicas == 0 {
		return nil, nil
	}
	if d.maxReplicas < 0 {
		return nil, usagef("--disagg-max-replicas: %d is not a positive integer", d.maxReplicas)
	}
	s := &plan.DisaggSearch{MaxReplicas: d.maxReplicas}
	var err error
	if s.PrefillGPUs, err = parseGPUs(cat, "prefill-gpus", d.prefillGPUs); err != nil {
		return nil, err
	}
	if s.DecodeGPUs, err = parseGPUs(cat, "decode-gpus", d.decodeGPUs); err != nil {
		return nil, err
	}
	if d.prefillTPs != "" {
		if s.PrefillTPs, err = parseInts("prefill-tps", d.prefillTPs); err != nil {
			return nil, err
		}
	}
	if d.decodeTPs != "" {
		if s.DecodeTPs, err = parseInts("decode-tps", d.decodeTPs); err != nil {
			return nil, err
		}
	}
	return s, nil
}
