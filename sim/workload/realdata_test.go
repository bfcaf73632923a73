package workload

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/headroom-sim/headroom/internal/testkit/refdata"
)

// sharedData is the workspace's reference data (see shared/data/README.md),
// present on developer machines and in CI but not part of the project.
var sharedData = refdata.Location()

// The full real traces parse, with the row counts their README gives.
func TestParseTraceRealFiles(t *testing.T) {
	tests := []struct {
		path, format string
		rows         int
	}{
		{"traces/azure2023/AzureLLMInferenceTrace_conv.csv", FormatAzure, 19366},
		{"traces/azure2023/AzureLLMInferenceTrace_code.csv", FormatAzure, 8819},
		{"traces/mooncake/conversation_trace.jsonl", FormatMooncake, 12031},
		{"traces/mooncake/synthetic_trace.jsonl", FormatMooncake, 3993},
		{"measured/llmservingsim/workloads/sharegpt-llama-3.1-8b-300-sps10.jsonl", FormatLLMServingSim, 300},
		{"measured/llmservingsim/workloads/sharegpt-qwen3-32b-300-sps10.jsonl", FormatLLMServingSim, 300},
		{"measured/llmservingsim/RTX4090_Llama-3.1-8B/requests.jsonl", FormatLLMServingSim, 300},
		{"measured/llmservingsim/RTX4090_Llama-3.1-8B/requests.jsonl", FormatJSONL, 300},
	}
	for _, tt := range tests {
		t.Run(tt.format+"/"+filepath.Base(tt.path), func(t *testing.T) {
			f, err := os.Open(filepath.Join(sharedData, tt.path))
			if os.IsNotExist(err) {
				t.Skipf("%s not present", tt.path)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			recs, err := ParseTrace(f, tt.format, filepath.Base(tt.path))
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != tt.rows {
				t.Errorf("%d records, want %d", len(recs), tt.rows)
			}
			checkRecords(t, recs)
		})
	}
}

// The etalon length traces give their prompt and decode columns.
func TestParseLengthColumnRealFiles(t *testing.T) {
	tests := []struct {
		path, column string
		rows         int
	}{
		{"traces/etalon-length-traces/sharegpt_8k_filtered_stats_llama2_tokenizer.csv", "num_prefill_tokens", 30731},
		{"traces/etalon-length-traces/bwb_stats_llama2_tokenizer_filtered_v2.csv", "NUM_DECODE_TOKENS", 33768},
		{"traces/etalon-length-traces/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv", "num_decode_tokens", 28257},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			f, err := os.Open(filepath.Join(sharedData, tt.path))
			if os.IsNotExist(err) {
				t.Skipf("%s not present", tt.path)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			vals, err := ParseLengthColumn(f, tt.column, filepath.Base(tt.path))
			if err != nil {
				t.Fatal(err)
			}
			if len(vals) != tt.rows {
				t.Errorf("%d values, want %d", len(vals), tt.rows)
			}
		})
	}
}
