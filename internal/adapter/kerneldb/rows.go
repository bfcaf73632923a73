package kerneldb

// Row types of AIConfigurator's perf-database tables, one per Parquet
// file kind; latency is in milliseconds per kernel call.

type gemmRow struct {
	GEMMDType string  `parquet:"gemm_dtype"`
	M         int64   `parquet:"m"`
	N         int64   `parquet:"n"`
	K         int64   `parquet:"k"`
	Latency   float64 `parquet:"latency"`
}

type attentionRow struct {
	BatchSize    int64   `parquet:"batch_size"`
	ISL          int64   `parquet:"isl"`
	NumHeads     int64   `parquet:"num_heads"`
	NumKVHeads   int64   `parquet:"num_key_value_heads"`
	HeadDim      int64   `parquet:"head_dim"`
	KVCacheDType string  `parquet:"kv_cache_dtype"`
	Step         int64   `parquet:"step"`
	WindowSize   int64   `parquet:"window_size,optional"`
	Latency      float64 `parquet:"latency"`
}

type moeRow struct {
	MoEDType     string  `parquet:"moe_dtype"`
	NumTokens    int64   `parquet:"num_tokens"`
	HiddenSize   int64   `parquet:"hidden_size"`
	InterSize    int64   `parquet:"inter_size"`
	TopK         int64   `parquet:"topk"`
	NumExperts   int64   `parquet:"num_experts"`
	MoETPSize    int64   `parquet:"moe_tp_size"`
	MoEEPSize    int64   `parquet:"moe_ep_size"`
	Distribution string  `parquet:"distribution"`
	Latency      float64 `parquet:"latency"`
}

type allReduceRow struct {
	DType       string  `parquet:"allreduce_dtype"`
	NumGPUs     int64   `parquet:"num_gpus"`
	MessageSize int64   `parquet:"message_size"`
	Latency     float64 `parquet:"latency"`
	Backend     string  `parquet:"backend"`
}

type ncclRow struct {
	OpName      string  `parquet:"op_name"`
	DType       string  `parquet:"nccl_dtype"`
	NumGPUs     int64   `parquet:"num_gpus"`
	MessageSize int64   `parquet:"message_size"`
	Latency     float64 `parquet:"latency"`
}

type mlaRow struct {
	Model        string  `parquet:"model,optional"`
	KVCacheDType string  `parquet:"kv_cache_dtype"`
	GEMMType     string  `parquet:"gemm_type"`
	NumHeads     int64   `parquet:"num_heads"`
	BatchSize    int64   `parquet:"batch_size"`
	ISL          int64   `parquet:"isl"`
	TPSize       int64   `parquet:"tp_size,optional"`
	Step         int64   `parquet:"step"`
	Latency      float64 `parquet:"latency"`
}
