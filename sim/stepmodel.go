package sim

import (
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// StepModel builds the step-time model of one engine rank of c, as a run
// uses it: the profile and kernel database, CUDA graphs up to vLLM's
// capture size (steptime.CUDAGraphTokens of the engine's limits), the
// experts' split over the instance's GPUs and the MoE routing. Callers that
// explain a step (headroom steptime, POST /v1/steptime) get the model the
// simulator would run.
func (c *Config) StepModel() (*steptime.Model, error) {
	return c.stepModelOf(c.Model, c.Precision)
}

// stepModelOf is StepModel for model m at precision p on c's GPUs (the
// target's, or a speculative drafter's).
func (c *Config) stepModelOf(m *models.Model, p models.Precision) (*steptime.Model, error) {
	sm, err := steptime.New(m, c.GPU, p, c.TP, c.Profile, c.Engine.AsyncScheduling)
	if err != nil {
		return nil, err
	}
	sm.WithCUDAGraphs(c.CUDAGraphTokens()).WithKernelDB(c.KernelDB)
	if m.MoE != nil {
		moeTP, moeEP := c.moeSplit()
		sm.WithMoESplit(moeTP, moeEP, max(c.DP, 1))
	}
	if c.MoERouting != "" {
		sm.WithMoERouting(c.MoERouting)
	}
	if c.Engine.Scheduler == engine.SchedulerV0 {
		sm.WithEngineV0()
	}
	return sm, nil
}

// CUDAGraphTokens is the largest step the engine replays as a CUDA graph:
// vLLM's capture size, sized with speculative decoding by the 1 + K query
// tokens of a decoding request (decodeQueryLen). The drafter's passes
// replay graphs of the same sizes (vLLM 0.11's EagleProposer pads to the
// target's cudagraph_capture_sizes).
func (c *Config) CUDAGraphTokens() int {
	return steptime.CUDAGraphTokens(c.Engine.MaxNumSeqs*c.decodeQueryLen(), c.Engine.MaxNumBatchedTokens)
}

// MoESplit is the (moe_tp, moe_ep) split of an instance's routed experts
// over its tp × dp GPUs.
func (c *Config) MoESplit() (moeTP, moeEP int) { return c.moeSplit() }
