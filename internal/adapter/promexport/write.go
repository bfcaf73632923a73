package promexport

import (
	"bufio"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/headroom-sim/headroom/sim"
)

// DefaultStart is the wall-clock time of simulated second 0 unless the
// caller gives one: 2023-11-14 22:13:20 UTC (Unix 1,700,000,000 s), fixed
// so the same run always exports the same bytes.
var DefaultStart = time.Unix(1_700_000_000, 0).UTC()

// ContentType is the media type of what Write produces.
const ContentType = "application/openmetrics-text; version=1.0.0; charset=utf-8"

// ErrNoTimeseries is returned for a report without a time series.
var ErrNoTimeseries = errors.New("the report has no time series: run with report.timeseries: true")

// Options shapes the export.
type Options struct {
	// Start is the wall-clock time of simulated second 0 (zero value:
	// DefaultStart). A CLI may pass time.Now() to see the run as live.
	Start time.Time
	// ModelName is the model_name label (default: the report's model).
	ModelName string
	// Engine is the engine label (default "0"). The report sums the
	// replicas, so a run shows as one engine.
	Engine string
	// MaxModelLen bounds the token-count histograms' buckets as vLLM's
	// max_model_len does (0: up to the longest request seen).
	MaxModelLen int
}

// Write writes rep as OpenMetrics text: every family in Names() order,
// one sample (or, for a histogram, one set of buckets, count and sum) per
// point of rep.Timeseries, stamped opts.Start + the point's simulated time
// to the millisecond, then "# EOF". Histograms need c, the collector fed
// by the same run; with c nil they are left out. Latencies are those of
// the report (ttft_ms and e2e_ms as the client sees them, network_rtt_ms
// included). Observations after the last point count in the last one.
func Write(w io.Writer, rep *sim.Report, c *Collector, opts Options) error {
	if rep == nil || len(rep.Timeseries) == 0 {
		return ErrNoTimeseries
	}
	start := opts.Start
	if start.IsZero() {
		start = DefaultStart
	}
	model := opts.ModelName
	if model == "" {
		model = rep.Model
	}
	engine := opts.Engine
	if engine == "" {
		engine = "0"
	}
	e := &encoder{w: bufio.NewWriter(w), startMS: start.UnixMilli(),
		labels: `model_name="` + escape(model) + `",engine="` + escape(engine) + `"`}
	ts := rep.Timeseries

	gauge := func(f family, get func(*sim.TimePoint) float64) {
		e.meta(f)
		for i := range ts {
			e.sample(f.name, "", formatFloat(get(&ts[i])), ts[i].TS)
		}
	}
	gauge(famRunning, func(p *sim.TimePoint) float64 { return float64(p.Running) })
	gauge(famWaiting, func(p *sim.TimePoint) float64 { return float64(p.Waiting) })
	gauge(famKVUsage, func(p *sim.TimePoint) float64 { return p.KVUsageRatio })
	gauge(famGPUKVUsage, func(p *sim.TimePoint) float64 { return p.KVUsageRatio })

	counter := func(f family, extra string, inc func(*sim.TimePoint) float64, cumulative bool) {
		e.meta(f)
		total := 0.0
		for i := range ts {
			v := inc(&ts[i])
			if cumulative {
				total += v
				v = total
			}
			e.sample(f.name+"_total", extra, formatFloat(v), ts[i].TS)
		}
	}
	counter(famPreemptions, "", func(p *sim.TimePoint) float64 { return float64(p.PreemptionsTotal) }, false)
	counter(famPrompt, "", func(p *sim.TimePoint) float64 { return p.PromptTokensPerS }, true)
	counter(famGeneration, "", func(p *sim.TimePoint) float64 { return p.OutputTokensPerS }, true)
	counter(famSuccess, `,finished_reason="`+FinishedReason+`"`, func(p *sim.TimePoint) float64 { return float64(p.CompletedTotal) }, false)

	if c != nil {
		for i := range c.hists {
			f := histFamilies[i].family
			bounds := c.hists[i].bounds
			if i == hPromptTokens || i == hGenerationTokens {
				bounds = tokenBounds(bounds, opts.MaxModelLen, c.maxTokens)
			}
			e.histogram(f, &c.hists[i], len(bounds), ts)
		}
	}
	e.line("# EOF")
	if e.err != nil {
		return e.err
	}
	return e.w.Flush()
}

// tokenBounds cuts 1-2-5 token bounds at maxModelLen, or past the longest
// request when that is unknown.
func tokenBounds(bounds []float64, maxModelLen, longest int) []float64 {
	for i, b := range bounds {
		if maxModelLen > 0 && b > float64(maxModelLen) {
			return bounds[:i]
		}
		if maxModelLen <= 0 && b >= float64(longest) {
			return bounds[:i+1]
		}
	}
	return bounds
}

// encoder writes OpenMetrics lines, keeping the first write error.
type encoder struct {
	w       *bufio.Writer
	err     error
	startMS int64
	labels  string
	buf     []byte
}

func (e *encoder) line(s string) {
	if e.err != nil {
		return
	}
	if _, err := e.w.WriteString(s); err != nil {
		e.err = err
		return
	}
	e.err = e.w.WriteByte('\n')
}

func (e *encoder) meta(f family) {
	e.line("# TYPE " + f.name + " " + f.typ)
	if f.unit != "" {
		e.line("# UNIT " + f.name + " " + f.unit)
	}
	e.line("# HELP " + f.name + " " + f.help)
}

// sample writes name{labels extra} value timestamp, the timestamp being
// the start plus tS in seconds with millisecond precision.
func (e *encoder) sample(name, extra, value string, tS float64) {
	ms := e.startMS + int64(math.Round(tS*1000))
	b := e.buf[:0]
	b = append(b, name...)
	b = append(b, '{')
	b = append(b, e.labels...)
	b = append(b, extra...)
	b = append(b, "} "...)
	b = append(b, value...)
	b = append(b, ' ')
	if ms < 0 {
		b = append(b, '-')
		ms = -ms
	}
	b = strconv.AppendInt(b, ms/1000, 10)
	b = append(b, '.')
	frac := ms % 1000
	b = append(b, byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	e.buf = b
	e.line(string(b))
}

// histogram writes one histogram family: at each point, the cumulative
// buckets up to bounds[:nBounds] and +Inf, then count and sum, over every
// second up to the point's time.
func (e *encoder) histogram(f family, h *perSecond, nBounds int, ts []sim.TimePoint) {
	e.meta(f)
	n := len(h.bounds) + 1
	acc := make([]uint64, n)
	sum := 0.0
	next := 0 // the next second to fold in
	les := make([]string, nBounds)
	for j := range les {
		les[j] = `,le="` + goFloat(h.bounds[j]) + `"`
	}
	for i := range ts {
		upto := int(math.Round(ts[i].TS)) // seconds [0, upto) are in
		if i == len(ts)-1 {
			upto = len(h.sums)
		}
		for ; next < upto && next < len(h.sums); next++ {
			for b := range n {
				acc[b] += uint64(h.counts[next*n+b])
			}
			sum += h.sums[next]
		}
		var cum uint64
		for b := range nBounds {
			cum += acc[b]
			e.sample(f.name+"_bucket", les[b], strconv.FormatUint(cum, 10), ts[i].TS)
		}
		for b := nBounds; b < n; b++ {
			cum += acc[b]
		}
		e.sample(f.name+"_bucket", `,le="+Inf"`, strconv.FormatUint(cum, 10), ts[i].TS)
		e.sample(f.name+"_count", "", strconv.FormatUint(cum, 10), ts[i].TS)
		e.sample(f.name+"_sum", "", formatFloat(sum), ts[i].TS)
	}
}

// formatFloat writes a sample value: shortest round-trip form.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// goFloat formats a bucket bound as the Prometheus Python client does
// (floatToGoString): "0.001", "1.0", "1e+06", so le labels match a real
// vLLM's.
func goFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// escape escapes a label value.
func escape(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
