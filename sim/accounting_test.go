package sim

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/sim/engine"
)

// checkConservation checks that no request disappeared, with counts kept
// apart from the report's: the requests the onIssue hook saw, those the
// onEnd hook saw end (completed or rejected), and those the test finds
// itself in the replicas' queues and at the client. Every issued request
// must be in exactly one of those places, and the report must give the
// same three counts.
func checkConservation(t *testing.T, s *Simulator, issued []int64, ended map[int64]bool, rep *Report) {
	t.Helper()
	left := map[int64]int{}
	for _, rp := range s.ranks {
		for i := 0; i < rp.waiting.len(); i++ {
			left[rp.waiting.at(i).serial]++
		}
		for _, r := range rp.running {
			left[r.serial]++
		}
	}
	for i := 0; i < s.d.held.len(); i++ {
		left[s.d.held.at(i).serial]++
	}
	completed, rejected := 0, 0
	for _, ok := range ended {
		if ok {
			completed++
		} else {
			rejected++
		}
	}
	seen := map[int64]bool{}
	for _, serial := range issued {
		if seen[serial] {
			t.Fatalf("request %d issued twice", serial)
		}
		seen[serial] = true
		_, done := ended[serial]
		if n := left[serial]; (n > 0) == done || n > 1 {
			t.Fatalf("request %d: ended %v, found %d times in the queues", serial, done, n)
		}
	}
	if len(ended)+len(left) != len(issued) {
		t.Fatalf("%d issued, %d ended, %d still queued: requests appeared from nowhere", len(issued), len(ended), len(left))
	}
	rc := rep.Requests
	if rc.Total != len(issued) || rc.Completed != completed || rc.Rejected != rejected || rc.Unfinished != len(left) {
		t.Fatalf("report counts %+v; the hooks saw %d issued, %d completed, %d rejected, and %d are still queued",
			rc, len(issued), completed, rejected, len(left))
	}
}

// TestUnfinishedRequestsAreCounted: an engine that can never schedule
// (max_num_seqs forced to 0 past validation) leaves every request
// unfinished, and the report says so instead of a total of 0.
func TestUnfinishedRequestsAreCounted(t *testing.T) {
	cfg := handConfig(t, []handReq{{at: 0, in: 16, out: 2}, {at: 1, in: 16, out: 2}, {at: 2, in: 300, out: 2}}, handSetup{})
	s, log := newHandSim(t, cfg)
	s.cfg.Engine.MaxNumSeqs = 0
	if err := s.loop(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep := s.report()
	ended := map[int64]bool{}
	for serial, e := range log.ends {
		ended[serial] = e.ok
	}
	checkConservation(t, s, log.issued, ended, rep)
	if rc := rep.Requests; rc.Total != 3 || rc.Unfinished != 2 || rc.Rejected != 1 {
		t.Errorf("requests %+v, want 3 issued: 1 rejected (longer than max_model_len), 2 unfinished", rc)
	}
	if err := checkAccounting(rep.Requests); err != nil {
		t.Error(err)
	}
	if err := checkAccounting(RequestCounts{Total: 3, Completed: 1, Rejected: 1}); err == nil {
		t.Error("a lost request passed checkAccounting")
	}
}

// TestMaxNumSeqsZeroIsRefused is the case: sim.Run with
// max_num_seqs 0 returned a report with requests.total 0.
func TestMaxNumSeqsZeroIsRefused(t *testing.T) {
	cfg := handConfig(t, []handReq{{in: 16, out: 2}}, handSetup{})
	cfg.Engine.MaxNumSeqs = 0
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "engine.max_num_seqs") {
		t.Fatalf("err %v, want one naming engine.max_num_seqs", err)
	}
}

// TestRunWarnsOfUnfinishedRequests: Run logs unfinished requests.
func TestRunWarnsOfUnfinishedRequests(t *testing.T) {
	var buf bytes.Buffer
	cfg := handConfig(t, []handReq{{in: 16, out: 2}}, handSetup{})
	cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	s, err := newSimulator(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.cfg.Engine.MaxNumSeqs = 0
	rep, err := s.run(context.Background())
	if err != nil || rep.Requests.Unfinished != 1 || !strings.Contains(buf.String(), "unfinished=1") {
		t.Fatalf("err %v, requests %+v, log %q", err, rep.Requests, buf.String())
	}
}

// TestV0WatermarkRejects: V0 admits a prompt only if the blocks left
// after it stay above a 1% watermark, so a request that needs more than
// 99% of the cache could never start. vLLM V0 ignores such a request
// (AllocStatus.NEVER); before, the simulator kept it waiting forever and
// the report lost it.
func TestV0WatermarkRejects(t *testing.T) {
	v0 := func(e *engine.Config) {
		e.Scheduler, e.EnableChunkedPrefill = engine.SchedulerV0, false
		e.MaxModelLen, e.MaxNumBatchedTokens = 2048, 2048
	}
	// 100 blocks, watermark 1: 1600 tokens = 100 blocks cannot start,
	// 1584 = 99 blocks can.
	cfg := handConfig(t, []handReq{{at: 0, in: 1590, out: 10}, {at: 1, in: 1574, out: 10}}, handSetup{engine: v0, blocks: 100})
	s, log, rep := handRun(t, cfg)
	ended := map[int64]bool{}
	for serial, e := range log.ends {
		ended[serial] = e.ok
	}
	checkConservation(t, s, log.issued, ended, rep)
	if rc := rep.Requests; rc.Rejected != 1 || rc.RejectedReasons["exceeds_kv_cache"] != 1 || rc.Completed != 1 {
		t.Errorf("requests %+v, want request 0 rejected as exceeding the KV cache and 1 completed", rc)
	}
	// V1 has no watermark: the same requests both complete.
	cfg = handConfig(t, []handReq{{at: 0, in: 1590, out: 10}, {at: 1, in: 1574, out: 10}}, handSetup{blocks: 100, engine: func(e *engine.Config) {
		e.MaxModelLen = 2048
	}})
	if _, _, rep := handRun(t, cfg); rep.Requests.Completed != 2 {
		t.Errorf("v1: requests %+v", rep.Requests)
	}
}
