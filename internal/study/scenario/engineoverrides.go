package scenario

import (
	"reflect"
	"strings"
	"sync"

	"github.com/headroom-sim/headroom/sim/engine"
)

// EngineOverrides are the engine settings one pool of a disaggregated
// scenario changes from the scenario's engine: the fields of
// engine.Config, by the same names, each set only when given, but
// speculative (a disaggregated scenario refuses speculative decoding).
type EngineOverrides struct {
	GPUMemoryUtilization      *float64 `yaml:"gpu_memory_utilization" json:"gpu_memory_utilization,omitempty"`
	MaxNumSeqs                *int     `yaml:"max_num_seqs" json:"max_num_seqs,omitempty"`
	MaxNumBatchedTokens       *int     `yaml:"max_num_batched_tokens" json:"max_num_batched_tokens,omitempty"`
	MaxModelLen               *int     `yaml:"max_model_len" json:"max_model_len,omitempty"`
	BlockSize                 *int     `yaml:"block_size" json:"block_size,omitempty"`
	EnableChunkedPrefill      *bool    `yaml:"enable_chunked_prefill" json:"enable_chunked_prefill,omitempty"`
	EnablePrefixCaching       *bool    `yaml:"enable_prefix_caching" json:"enable_prefix_caching,omitempty"`
	LongPrefillTokenThreshold *int     `yaml:"long_prefill_token_threshold" json:"long_prefill_token_threshold,omitempty"`
	Scheduler                 *string  `yaml:"scheduler" json:"scheduler,omitempty"`
	PreemptionMode            *string  `yaml:"preemption_mode" json:"preemption_mode,omitempty"`
	SwapSpaceGiB              *float64 `yaml:"swap_space_gib" json:"swap_space_gib,omitempty"`
	AsyncScheduling           *bool    `yaml:"async_scheduling" json:"async_scheduling,omitempty"`
	NumGPUBlocksOverride      *int     `yaml:"num_gpu_blocks_override" json:"num_gpu_blocks_override,omitempty"`
}

// Apply returns base with the overrides that are set.
func (o EngineOverrides) Apply(base engine.Config) engine.Config {
	dst := reflect.ValueOf(&base).Elem()
	src := reflect.ValueOf(o)
	fields := engineFields()
	for i := 0; i < src.NumField(); i++ {
		if v := src.Field(i); !v.IsNil() {
			dst.Field(fields[yamlName(src.Type().Field(i))]).Set(v.Elem())
		}
	}
	return base
}

// engineFields maps engine.Config's yaml names to field indices, built
// once (Apply runs for each pool of every resolve a planner does).
var engineFields = sync.OnceValue(func() map[string]int {
	t := reflect.TypeOf(engine.Config{})
	out := make(map[string]int, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		out[yamlName(t.Field(i))] = i
	}
	return out
})

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}
