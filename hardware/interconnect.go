package hardware

import (
	"fmt"
	"math"
)

// Interconnect scopes: a link inside one server (its GPUs' scale-up
// fabric or PCIe) or between servers (a NIC per GPU on a fabric).
const (
	ScopeNode    = "node"
	ScopeCluster = "cluster"
)

// Interconnect is a link a KV cache travels over from the GPU that
// computed it to the GPU that decodes with it (disaggregated serving):
// each GPU of a tensor-parallel group sends or receives its own shard of
// the cache over its own link, so the figures are per GPU and per
// direction.
type Interconnect struct {
	ID      string   `yaml:"id" json:"id"`
	Name    string   `yaml:"name" json:"name"`
	Aliases []string `yaml:"aliases,omitempty" json:"aliases,omitempty"`
	// Scope is node (both GPUs in one server) or cluster (any two).
	Scope string `yaml:"scope" json:"scope"`
	// GPULink, for node links, is the scale_up.kind the GPUs must have
	// (nvlink4, pcie5 …): a node link is the GPUs' own scale-up fabric.
	GPULink string `yaml:"gpu_link,omitempty" json:"gpu_link,omitempty"`
	// LineRateGBps is the signalling rate per GPU and direction, in GB/s
	// (bytes: a 400 Gb/s NIC is 50).
	LineRateGBps float64 `yaml:"line_rate_gbps" json:"line_rate_gbps"`
	// AchievedFraction is the share of the line rate large point-to-point
	// transfers reach (measured where a measurement exists).
	AchievedFraction float64 `yaml:"achieved_fraction" json:"achieved_fraction"`
	// LatencyUS is the fixed cost of one transfer, in microseconds.
	LatencyUS float64 `yaml:"latency_us" json:"latency_us"`
	Notes     string  `yaml:"notes,omitempty" json:"notes,omitempty"`
}

// BandwidthGBps is what a large transfer achieves per GPU and direction,
// in GB/s.
func (l *Interconnect) BandwidthGBps() float64 { return l.LineRateGBps * l.AchievedFraction }

// Joins reports why the link cannot join two GPUs of type g ("" when
// it can): a node link needs GPUs whose scale-up link it is.
func (l *Interconnect) Joins(g *GPU) string {
	if l.Scope != ScopeNode || l.GPULink == "" {
		return ""
	}
	if g.ScaleUp.Kind == l.GPULink {
		return ""
	}
	return fmt.Sprintf("%s joins GPUs whose link is %s; %s has %s", l.ID, l.GPULink, g.ID, g.ScaleUp.Kind)
}

// Validate checks the fields a transfer time relies on.
func (l *Interconnect) Validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case l.ID == "":
		return &FieldError{Field: "id", Reason: "is required"}
	case l.Scope != ScopeNode && l.Scope != ScopeCluster:
		return &FieldError{Field: "scope", Reason: fmt.Sprintf("%q is not node or cluster", l.Scope)}
	case !(l.LineRateGBps > 0) || !finite(l.LineRateGBps) || l.LineRateGBps > 1e5:
		return &FieldError{Field: "line_rate_gbps", Reason: fmt.Sprintf("%g is not in (0, 100000] GB/s", l.LineRateGBps)}
	case !(l.AchievedFraction > 0 && l.AchievedFraction <= 1):
		return &FieldError{Field: "achieved_fraction", Reason: fmt.Sprintf("%g is not in (0, 1]", l.AchievedFraction)}
	case !(l.LatencyUS >= 0) || l.LatencyUS > 1e6:
		return &FieldError{Field: "latency_us", Reason: fmt.Sprintf("%g is not in [0, 1e6] µs", l.LatencyUS)}
	}
	return nil
}
