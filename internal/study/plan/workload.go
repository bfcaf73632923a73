package plan

import (
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/workload"
)

// The workload a plan sizes for.
//
//   - A rate profile is sized at its peak: the candidates are searched on
//     constant arrivals at the peak rate (of the profile's arrival shape),
//     with workload.requests requests, or 5 minutes of the peak (at least
//     1,000, at most 50,000); the profile is then played through the
//     recommendation (day.go).
//   - engine.max_model_len, when the scenario leaves it to the model's
//     maximum, becomes what the workload needs: its longest request,
//     prompt and output, rounded up to the KV block. vLLM refuses to
//     start where one request of max_model_len does not fit the KV cache,
//     so a 128k default would prune GPUs that serve 2k-token requests.

// Bounds of the sample a rate profile is sized on.
const (
	profileSampleS       = 300
	profileSampleMin     = 1000
	profileSampleMax     = 50_000
	DefaultWindowS       = 900.0
	maxPlanProfileWindow = workload.MaxProfilePoints
)

// Workloads returns the scenario a plan searches its candidates on, the
// rate-profile scenario it plays through the recommendation (nil without
// a profile), and notes on what it chose, as Plan will (a server checks
// them before it queues a plan).
func (r *Runner) Workloads(spec PlanSpec) (base scenario.Scenario, profile *scenario.Scenario, notes []string, err error) {
	if err := spec.defaults(r); err != nil {
		return base, nil, nil, err
	}
	return r.planWorkload(&spec)
}

// planWorkload is Workloads of a spec with its defaults.
func (r *Runner) planWorkload(spec *PlanSpec) (base scenario.Scenario, profile *scenario.Scenario, notes []string, err error) {
	base = spec.Scenario
	base.Autoscale = nil // candidates are fixed replica counts; the day runs the autoscaler
	notes = []string{}
	if w := base.Workload; len(w.RateProfile) > 0 {
		p := spec.Scenario
		p.Workload.RateProfile = windowed(w.RateProfile, w.ProfileEndS(), spec.WindowS)
		if n := len(p.Workload.RateProfile); n > maxPlanProfileWindow {
			return base, nil, nil, &scenario.FieldError{Field: "window_s", Reason: fmt.Sprintf("splits the profile into %d windows, more than %d (each is reported with its own latency histograms): use longer windows", n, maxPlanProfileWindow)}
		}
		p.Workload.RateProfileEndS = w.ProfileEndS()
		p.Workload.Requests = 0
		profile = &p
		peak, at := w.PeakRateRPS(), 0.0
		for _, pt := range w.RateProfile {
			if pt.RateRPS == peak {
				at = pt.AtS
				break
			}
		}
		n := w.Requests
		how := "workload.requests"
		if n == 0 {
			n = min(max(int(math.Ceil(peak*profileSampleS)), profileSampleMin), profileSampleMax)
			how = fmt.Sprintf("%d minutes of it", profileSampleS/60)
		}
		base.Workload.RateProfile, base.Workload.RateProfileEndS = nil, 0
		base.Workload.Requests = n
		base.Workload.Arrival.RateRPS = peak
		if base.Workload.Arrival.Type == "" {
			base.Workload.Arrival.Type = workload.ArrivalPoisson
		}
		notes = append(notes, fmt.Sprintf("sized for the rate profile's peak, %.4g req/s (from %s), on %d requests (%s); the whole profile then runs through the recommendation",
			peak, clock(at), n, how))
	}
	if a := spec.Scenario.Autoscale; a != nil {
		switch {
		case profile == nil:
			notes = append(notes, "the scenario's autoscale section is not used: plan plays an autoscaler through a workload.rate_profile only")
		case a.Target == 0 && a.Metric == sim.ScaleOnInFlight:
			return base, nil, nil, &ScenarioError{&scenario.FieldError{Field: "autoscale.target", Reason: "an in_flight policy needs its target (requests per replica); request_rate and kv_cache_usage targets follow target_utilization"}}
		}
	}
	if base.Engine.MaxModelLen == 0 {
		note, mml, err := r.neededModelLen(base, profile)
		if err != nil {
			return base, nil, nil, &ScenarioError{err}
		}
		if mml > 0 {
			base.Engine.MaxModelLen = mml
			if profile != nil {
				profile.Engine.MaxModelLen = mml
			}
		}
		notes = append(notes, note)
	}
	return base, profile, notes, nil
}

// neededModelLen is the max_model_len the workload needs (0: keep the
// model's, when the workload needs more) and a note saying so.
func (r *Runner) neededModelLen(base scenario.Scenario, profile *scenario.Scenario) (string, int, error) {
	m, err := r.env().Catalog.Model(base.Model)
	if err != nil {
		return "", 0, fmt.Errorf("model: %w", err)
	}
	longest, err := base.LongestRequest(r.env())
	if err != nil {
		return "", 0, err
	}
	if profile != nil {
		l, err := profile.LongestRequest(r.env())
		if err != nil {
			return "", 0, err
		}
		longest = max(longest, l)
	}
	bs := base.Engine.BlockSize
	if bs == 0 {
		bs = engine.DefaultBlockSize(m)
	}
	mml := (longest + bs - 1) / bs * bs
	if mml > m.MaxPositions {
		return fmt.Sprintf("engine.max_model_len stays at %s's %d: the workload's longest request (prompt + output) is %d tokens, longer; such requests are rejected",
			m.ID, m.MaxPositions, longest), 0, nil
	}
	return fmt.Sprintf("engine.max_model_len defaults to %d tokens, what the workload needs: its longest request (prompt + output) is %d tokens, rounded up to the %d-token KV block (set engine.max_model_len to plan for longer ones)",
		mml, longest, bs), mml, nil
}

// windowed splits a profile's steps into windows of at most windowS.
func windowed(pts []workload.RatePoint, end, windowS float64) []workload.RatePoint {
	spec := workload.Spec{RateProfile: pts, RateProfileEndS: end}
	var out []workload.RatePoint
	at := 0.0
	for _, st := range spec.LoadStages(windowS) {
		out = append(out, workload.RatePoint{AtS: at, RateRPS: st.RateRPS})
		at += st.DurationS
	}
	return out
}

// clock writes seconds as h:mm (days as d+h:mm).
func clock(s float64) string {
	m := int(math.Round(s / 60))
	h, m := m/60, m%60
	if h >= 24 {
		return fmt.Sprintf("day %d %d:%02d", h/24+1, h%24, m)
	}
	return fmt.Sprintf("%d:%02d", h, m)
}
