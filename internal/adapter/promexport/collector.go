package promexport

import (
	"math"
	"sort"

	"github.com/headroom-sim/headroom/sim"
)

// Collector gathers the histogram observations of a run, per simulated
// second: bucket counts and sums for each vLLM histogram, so its memory
// grows with the simulated duration (under 1 KiB a simulated second), not
// with the requests.
//
//	c := promexport.NewCollector()
//	rep, err := sim.Run(ctx, cfg, c.Options()...)   // with report.timeseries: true
//	err = promexport.Write(w, rep, c, promexport.Options{})
type Collector struct {
	hists      [numHists]perSecond
	maxTokens  int
	anyRequest bool
}

// perSecond holds one histogram's observations by the simulated second
// they fell in: counts[s*(len(bounds)+1)+b] counts bucket b (the last one
// is above every bound) and sums[s] adds the values.
type perSecond struct {
	bounds []float64
	counts []uint32
	sums   []float64
}

// NewCollector returns an empty collector.
func NewCollector() *Collector {
	c := &Collector{}
	for i := range c.hists {
		c.hists[i].bounds = histFamilies[i].buckets
	}
	return c
}

// Options feeds the collector from a run. To feed other sinks from the
// same run too, use sim.WithSinks.
func (c *Collector) Options() []sim.Option {
	return []sim.Option{sim.WithRequestSink(c.Request), sim.WithTokenSink(c.Token)}
}

// second is the index of the simulated second holding time tS: (s, s+1]
// is second s, so a sample stamped s+1 counts it.
func second(tS float64) int {
	return max(int(math.Ceil(tS))-1, 0)
}

func (h *perSecond) observe(tS, v float64) {
	if math.IsNaN(v) {
		return
	}
	s := second(tS)
	n := len(h.bounds) + 1
	for len(h.sums) <= s {
		h.sums = append(h.sums, 0)
		h.counts = append(h.counts, make([]uint32, n)...)
	}
	h.counts[s*n+sort.SearchFloat64s(h.bounds, v)]++
	h.sums[s] += v
}

// Request records one completed request: its TTFT at the first token, the
// rest at completion.
func (c *Collector) Request(r sim.RequestSample) {
	c.anyRequest = true
	c.hists[hTTFT].observe(r.FirstTokenS, r.TTFTMS/1000)
	c.hists[hE2E].observe(r.FinishS, r.E2EMS/1000)
	c.hists[hDecode].observe(r.FinishS, max(r.FinishS-r.FirstTokenS, 0))
	if r.OutputTokens > 1 {
		c.hists[hRequestTPOT].observe(r.FinishS, r.TPOTMS/1000)
	}
	c.hists[hPromptTokens].observe(r.FinishS, float64(r.InputTokens))
	c.hists[hGenerationTokens].observe(r.FinishS, float64(r.OutputTokens))
	c.maxTokens = max(c.maxTokens, r.InputTokens, r.OutputTokens)
}

// Token records one inter-token gap, at the later token's time.
func (c *Collector) Token(tS, gapMS float64) {
	c.hists[hITL].observe(tS, gapMS/1000)
	c.hists[hTPOT].observe(tS, gapMS/1000)
}
