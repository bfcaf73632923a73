package measured

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInferencePerfRunFolder reads a run folder as the inference-perf
// demos publish it: the server's flags from manifests.yaml, the load's
// shape from config.yaml one level up, the reports from results/.
func TestInferencePerfRunFolder(t *testing.T) {
	root := os.DirFS(projectData + "/inference-perf")
	for _, dir := range []string{"vllm+v0_engine", "vllm+v0_engine/results"} {
		t.Run(dir, func(t *testing.T) {
			run, err := LoadDir(root, dir)
			if err != nil {
				t.Fatal(err)
			}
			e := run.Engine
			if run.Name != "vllm+v0_engine" || len(run.Stages) != 7 || e.MaxNumSeqs != 128 || e.MaxModelLen != 512 || e.GPUMemoryUtilization != 0.9 ||
				e.EnablePrefixCaching == nil || *e.EnablePrefixCaching || e.EnableChunkedPrefill == nil || *e.EnableChunkedPrefill || e.Scheduler != "v0" {
				t.Errorf("run %s, %d stages, engine %+v", run.Name, len(run.Stages), e)
			}
			if run.EngineVersion != "0.9.0" || run.GPU != "h100-sxm" || !strings.Contains(run.GPUNote, "nvidia-h100-80gb") || run.Model != "meta-llama/Llama-3.1-8B-Instruct" {
				t.Errorf("version %q, gpu %q (%s), model %q", run.EngineVersion, run.GPU, run.GPUNote, run.Model)
			}
			if ps := run.PromptShape; ps == nil || *ps != (PromptShape{SystemPrompts: 10, UsersPerPrompt: 10, SystemTokens: 128, QuestionTokens: 64, OutputTokens: 64}) {
				t.Errorf("prompt shape %+v", ps)
			}
			for _, st := range run.Stages {
				if st.DurationS != 60 || st.Concurrency != 440 || st.Strategy != "constant" {
					t.Errorf("stage %+v", st)
				}
			}
			if !hasNote(run, `server.model_name "meta-llama/Meta-Llama-3-8B-Instruct", the name the client sent`) || !hasNote(run, "VLLM_USE_V1=0") {
				t.Errorf("notes %q", run.Engine.Extra)
			}
			if !slices.Contains(run.Ignored, "file summary_lifecycle_metrics.json") || !slices.Contains(run.Ignored, "successes.latency.normalized_time_per_output_token") {
				t.Errorf("ignored %q", run.Ignored)
			}
		})
	}
	t.Run("speculative and quantization flags", func(t *testing.T) {
		m, err := os.ReadFile(projectData + "/inference-perf/vllm+v0_engine/manifests.yaml")
		if err != nil {
			t.Fatal(err)
		}
		doc := strings.Replace(string(m), `        - "--no-enable-prefix-caching"
        - "--no-enable-chunked-prefill"`, `        - "--enable-prefix-caching"
        - "--quantization bitsandbytes"
        - "--speculative_config"
        - '{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 4, "draft_tensor_parallel_size": 1}'
        - "--max-num-batched-tokens=4096"
        - "--disable-log-requests"`, 1)
		doc = strings.Replace(doc, "vllm/vllm-openai:v0.9.0", "vllm/vllm-openai:v0.11.0", 1)
		run := &Run{}
		if err := readManifests([]byte(doc), "manifests.yaml", run); err != nil {
			t.Fatal(err)
		}
		sp := run.Engine.Speculative
		if sp == nil || *sp != (Speculative{Method: "eagle3", NumSpeculativeTokens: 4, DraftModel: "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}) ||
			run.Quantization != "bitsandbytes" || run.Engine.MaxNumBatchedTokens != 4096 || !*run.Engine.EnablePrefixCaching || run.EngineVersion != "0.11.0" {
			t.Errorf("speculative %+v, quantization %q, engine %+v, version %q", sp, run.Quantization, run.Engine, run.EngineVersion)
		}
		if !slices.Contains(run.Ignored, "manifests.yaml: --disable-log-requests") {
			t.Errorf("ignored %q", run.Ignored)
		}
	})
	t.Run("bad manifests", func(t *testing.T) {
		for _, c := range []struct{ doc, want string }{
			{"kind: Deployment\nspec: [", "manifests.yaml: document 1"},
			{"kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - image: vllm/vllm-openai:v0.9.0\n        args: [\"--max-num-seqs=lots\"]\n", `field --max-num-seqs: "lots" is not a number`},
			{"kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - image: vllm/vllm-openai:v0.9.0\n        args: [\"--speculative-config\", \"{bad\"]\n", "--speculative-config"},
		} {
			err := readManifests([]byte(c.doc), "manifests.yaml", &Run{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: %v, want %q", c.doc, err, c.want)
			}
		}
	})
}

// TestInferencePerfStageAlone: a stage file read alone is its stage, at
// its requested rate.
func TestInferencePerfStageAlone(t *testing.T) {
	run := importFixture(t, projectData+"/inference-perf/vllm+v0_engine/results/stage_3_lifecycle_metrics.json")
	if len(run.Stages) != 1 || run.Stages[0].Index != 3 || run.Stages[0].RateRPS != 118.56 || !hasNote(run, "stage 3 read alone") {
		t.Errorf("stages %+v, notes %q", run.Stages, run.Engine.Extra)
	}
	s := run.Aggregate.Sent
	if s == nil || s.RequestedRPS != 118.56 || s.Scheduled != 7113 || !near(s.SendDurationS, 89.71173521806486, 1e-12) || !near(s.AchievedRPS, 79.28728591315539, 1e-12) ||
		!near(s.ScheduleDelayMS["mean"], 12970.01684534533, 1e-12) || s.ScheduleDelayMS["min"] >= 0 {
		t.Errorf("sent %+v", s)
	}
}

// TestInferencePerfStageCounting pins how inference-perf counts a stage,
// on every stage of the shared stepped runs (and the project's copy of
// one): count = requested_rate × stage_duration requests scheduled (cut
// to a whole number), achieved_rate = count / send_duration, the latest
// send is send_duration − stage_duration late (the cap on requests in
// flight held it back), and requests_per_sec = completions / (first send
// to last finish), which is at most count / send_duration and at least
// count / (send_duration + the slowest request).
func TestInferencePerfStageCounting(t *testing.T) {
	dirs := []string{projectData + "/inference-perf/vllm+v0_engine/results"}
	for _, v := range []string{"vllm+v0_engine", "vllm+quantization", "vllm+eagle"} {
		if d := sharedData + "/inference-perf-kubecon/" + v + "/results"; dirExists(d) {
			dirs = append(dirs, d)
		}
	}
	for _, dir := range dirs {
		for i := range 7 {
			name := filepath.Join(dir, "stage_"+string(rune('0'+i))+"_lifecycle_metrics.json")
			run := importFixture(t, name)
			a := run.Aggregate
			s := a.Sent
			if got := int(s.RequestedRPS * 60); got != s.Scheduled {
				t.Errorf("%s: %v req/s × 60 s = %d, scheduled %d", name, s.RequestedRPS, got, s.Scheduled)
			}
			if !near(s.AchievedRPS, float64(s.Scheduled)/s.SendDurationS, 1e-9) {
				t.Errorf("%s: achieved %v, count / send_duration %v", name, s.AchievedRPS, float64(s.Scheduled)/s.SendDurationS)
			}
			if late := s.SendDurationS - 60; late > 1 && math.Abs(s.ScheduleDelayMS["max"]/1e3-late) > 1 {
				t.Errorf("%s: latest send %v s late, send_duration − 60 s = %v", name, s.ScheduleDelayMS["max"]/1e3, late)
			}
			n := float64(a.Completed + a.Failed)
			lo, hi := n/(s.SendDurationS+a.E2EMS["max"]/1e3), n/s.SendDurationS
			if a.RequestsPerS < lo*0.99 || a.RequestsPerS > hi*1.01 {
				t.Errorf("%s: requests_per_sec %v outside [%v, %v]", name, a.RequestsPerS, lo, hi)
			}
		}
	}
}

func dirExists(d string) bool {
	st, err := os.Stat(d)
	return err == nil && st.IsDir()
}
