package memory_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/headroom-sim/headroom/internal/testkit/refdata"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/memory"
)

// loggedStartup is one vLLM start-up whose KV block count was logged.
type loggedStartup struct {
	name       string
	source     string // file under ../shared/data/measured that logs it
	model, gpu string
	tp         int
	mbt, seqs  int
	maxLen     int
	want       int // num_gpu_blocks per GPU as vLLM logged it
}

// loggedStartups are every vLLM-logged block count in ../shared/data.
var loggedStartups = []loggedStartup{
	{"codellama-34b h100 mbt64", "inference-sim-eval-ground-truth/jan20-codellama-prefill-1/vllm.log", "codellama/CodeLlama-34b-Instruct-hf", "h100-sxm", 1, 64, 32, 8192, 2790},
	{"codellama-34b h100 mbt4096", "inference-sim-eval-ground-truth/jan20-codellama-train-1/vllm.log", "codellama/CodeLlama-34b-Instruct-hf", "h100-sxm", 1, 4096, 256, 8192, 2537},
	{"codellama-34b h100 mbt4096 len4096", "inference-sim-eval-ground-truth/jan20-prefill-llama7b-tp1-1/vllm.log", "codellama/CodeLlama-34b-Instruct-hf", "h100-sxm", 1, 4096, 256, 4096, 2537},
	{"llama-2-7b h100 mbt4096", "inference-sim-eval-ground-truth/jan21-llama7b-train-1/vllm.log", "meta-llama/Llama-2-7b-hf", "h100-sxm", 1, 4096, 256, 4096, 7438},
	{"llama-3.1-8b rtx4090", "llmservingsim/RTX4090_Llama-3.1-8B/meta.json", "meta-llama/Llama-3.1-8B", "rtx-4090", 1, 2048, 256, 32768, 2588},
}

func TestLoggedBlockCounts(t *testing.T) {
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range loggedStartups {
		t.Run(c.name, func(t *testing.T) {
			m, err := cat.Model(c.model)
			if err != nil {
				t.Fatal(err)
			}
			g, err := cat.GPU(c.gpu)
			if err != nil {
				t.Fatal(err)
			}
			e := engine.Defaults()
			e.MaxNumBatchedTokens, e.MaxNumSeqs, e.MaxModelLen = c.mbt, c.seqs, c.maxLen
			e, err = e.Resolve(m, g)
			if err != nil {
				t.Fatal(err)
			}
			p, err := memory.Compute(memory.Setup{Model: m, GPU: g, Precision: m.ResolvePrecision("", ""), TP: c.tp, Engine: e})
			if err != nil {
				t.Fatal(err)
			}
			rel := float64(p.NumGPUBlocks-c.want) / float64(c.want)
			t.Logf("%s: predicted %d blocks, logged %d (%+.2f%%)", c.name, p.NumGPUBlocks, c.want, 100*rel)
			if rel > 0.02 || rel < -0.02 {
				t.Errorf("predicted %d blocks, vLLM logged %d: %+.2f%% is outside ±2%%", p.NumGPUBlocks, c.want, 100*rel)
			}
		})
	}
}

var loggedBlocksRE = regexp.MustCompile(`num_gpu_blocks is: (\d+)`)

// TestLoggedTableMatchesData re-reads each logged count from the data
// directory, when it is present, so the table cannot drift from it.
func TestLoggedTableMatchesData(t *testing.T) {
	root := filepath.Join(refdata.Location(), "measured")
	if _, err := os.Stat(root); err != nil {
		t.Skip("../shared/data not present")
	}
	for _, c := range loggedStartups {
		b, err := os.ReadFile(filepath.Join(root, c.source))
		if err != nil {
			t.Errorf("%s: %v", c.source, err)
			continue
		}
		got := 0
		if filepath.Ext(c.source) == ".json" {
			var meta struct {
				KV struct {
					Blocks int `json:"num_gpu_blocks"`
				} `json:"kv_cache"`
			}
			if err := json.Unmarshal(b, &meta); err != nil {
				t.Fatal(err)
			}
			got = meta.KV.Blocks
		} else if m := loggedBlocksRE.FindAllSubmatch(b, -1); len(m) > 0 {
			got, _ = strconv.Atoi(string(m[len(m)-1][1]))
		}
		if got != c.want {
			t.Errorf("%s logs %d blocks, the table says %d", c.source, got, c.want)
		}
	}
}
