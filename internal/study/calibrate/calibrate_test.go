package calibrate

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// syntheticRun simulates a scenario with a known profile and records it
// as a measured run, so a fit has a ground truth to recover.
func syntheticRun(t *testing.T, truth steptime.Profile, requests int) *measured.Run {
	t.Helper()
	cat, _ := catalogs.Builtin()
	s := scenario.Default()
	s.Workload.Requests = requests
	s.Workload.Arrival.RateRPS = 8
	res, err := s.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	res.Config.Profile = truth
	run := &measured.Run{Name: "synthetic", Model: "llama-3.1-8b", GPU: "h100-sxm", TP: 1, DP: 1, ServerSide: true}
	_, err = sim.Run(context.Background(), res.Config, sim.WithRequestSink(func(q sim.RequestSample) {
		run.Requests = append(run.Requests, measured.Request{
			SendS: q.SentS, InputTokens: q.InputTokens, OutputTokens: q.OutputTokens,
			TTFTS: q.TTFTMS / 1e3, E2ES: q.E2EMS / 1e3,
		})
	}))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestFitRecoversASlowerGPU(t *testing.T) {
	cat, _ := catalogs.Builtin()
	g, _ := cat.GPU("h100-sxm")
	truth := steptime.DefaultProfile(g)
	truth.Scale.Memory = 0.8   // the "real" GPU streams weights 20% slower
	truth.Scale.Overhead = 1.5 // and its host is slower
	run := syntheticRun(t, truth, 150)
	res, err := Fit(context.Background(), run, cat, Options{MaxEvaluations: 120})
	if err != nil {
		t.Fatal(err)
	}
	if !(res.After.Loss < res.Before.Loss/4) {
		t.Fatalf("loss %.5f → %.5f: the fit did not explain the slower GPU", res.Before.Loss, res.After.Loss)
	}
	if m := res.After.MedianAPE["tpot_ms"]; m > 3 {
		t.Errorf("TPOT median APE after the fit %.1f%%", m)
	}
	if m := res.Profile.Scale.Memory; !(m > 0 && m < 0.95) {
		t.Errorf("memory speed ×%.3f did not move down towards 0.8", m)
	}
	if err := res.Profile.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestFitRefusesTinyRuns(t *testing.T) {
	cat, _ := catalogs.Builtin()
	g, _ := cat.GPU("h100-sxm")
	run := syntheticRun(t, steptime.DefaultProfile(g), 10)
	if _, err := Fit(context.Background(), run, cat, Options{}); !errors.Is(err, ErrTooFewRequests) {
		t.Fatalf("err %v, want ErrTooFewRequests", err)
	}
}

func TestEvaluateOnAStage(t *testing.T) {
	cat, _ := catalogs.Builtin()
	g, _ := cat.GPU("h100-sxm")
	run := syntheticRun(t, steptime.DefaultProfile(g), 100)
	run.SplitByTime(2)
	e, err := Evaluate(context.Background(), run, cat, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The run was produced by the default profile: the replay reproduces it.
	for _, f := range e.Figures {
		if f.APE > 1 {
			t.Errorf("%s %s: %.2f%% off on a run the defaults produced", f.Metric, f.Quantile, f.APE)
		}
	}
	if !strings.Contains(e.Run, "stage 1") {
		t.Errorf("run name %q", e.Run)
	}
	_ = replay.Quantiles
}

func TestFileRoundTripAndErrors(t *testing.T) {
	cat, _ := catalogs.Builtin()
	g, _ := cat.GPU("a100-80gb")
	f := &File{SchemaVersion: FileSchemaVersion, Kind: FileKind, GPU: g.ID, Model: "llama-3.1-8b", TP: 1, Profile: steptime.DefaultProfile(g)}
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&b, "p.json")
	if err != nil {
		t.Fatal(err)
	}
	if got.GPU != f.GPU || !reflect.DeepEqual(got.Profile, f.Profile) {
		t.Fatalf("round trip changed the file: %+v", got)
	}
	for _, c := range []struct{ name, body, want string }{
		{"not json", "nope", "not a headroom calibration file"},
		{"bad coefficient", `{"kind":"headroom.calibration","schema_version":1,"profile":{"schema_version":3,"gemm":{"bf16":{"efficiency":3}}}}`, "gemm.bf16.efficiency"},
		{"old profile", `{"kind":"headroom.calibration","schema_version":1,"profile":{"schema_version":1,"gemm_efficiency":0.5}}`, "run headroom calibrate again"},
		{"newer schema", `{"kind":"headroom.calibration","schema_version":99,"profile":{"gemm_efficiency":0.5}}`, "newer"},
	} {
		if _, err := Read(strings.NewReader(c.body), "x.json"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want it to mention %q", c.name, err, c.want)
		}
	}
}
