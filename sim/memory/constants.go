package memory

import "github.com/headroom-sim/headroom/hardware"

// Constants of the memory model. Symbols: N = max_num_batched_tokens (the
// profiling forward pass runs that many tokens), S = min(max_num_seqs, N)
// (the dummy sampler runs one row per request), H = hidden size,
// I = intermediate size per rank, V = vocabulary.
const (
	// hiddenVectorsAtPeak is how many H-wide activation vectors per token are
	// alive at the forward pass's peak besides the MLP intermediates
	// (gate_up output 2·I and its SiluAndMul output I): the residual stream,
	// the normalised input, the layer input and the down-projection output.
	// Fitted: the two CodeLlama-34B start-ups on the same H100 with
	// max_num_batched_tokens 64 and 4096 differ by 0.75 GiB of KV memory
	// (8.18 vs 7.43 GiB), which is 4032 tokens × 2 B × (3·22016 + k·8192)
	// for k = 4.0; the Llama-2-7B start-up is then consistent to 0.01 GiB.
	hiddenVectorsAtPeak = 4

	// samplerBytesPerLogit is the peak memory of vLLM's dummy sampler run
	// per logit (S × V of them): the bf16 logits, their fp32 copy, and the
	// top-k/top-p temporaries (sorted values and indices, probabilities).
	// Fitted to the RTX 4090 Llama-3.1-8B start-up (vLLM 0.19, 2588 blocks,
	// max_num_seqs 256, V 128256), where the sampler, not the 2048-token
	// forward pass, sets the peak.
	samplerBytesPerLogit = 15.4

	// nonTorchBytesTP1 is the memory outside PyTorch's allocator that vLLM's
	// profile counts for a single-GPU engine: loaded kernel images
	// (cuBLAS/cuBLASLt, FlashAttention, Triton/Inductor), cuBLAS workspaces
	// and attention-backend buffers. Fitted to the three H100 start-ups of
	// vLLM 0.11 (CodeLlama-34B at max_num_batched_tokens 64 and 4096,
	// Llama-2-7B at 4096): total × 0.9 − weights − peak activation − KV
	// leaves 0.635 GiB in each, to ±0.006 GiB, with the catalog's H100
	// total of 81,559 MiB.
	nonTorchBytesTP1 = 0.635 * hardware.GiB

	// nonTorchBytesPerPeerNVLink and nonTorchBytesPerPeerPCIe are the extra
	// non-torch memory per additional tensor-parallel rank: NCCL
	// communicator buffers (about 4 MiB per channel per protocol and peer,
	// times 16–32 channels over NVLink, fewer over PCIe) for both vLLM's
	// PyNccl group and torch.distributed's, plus the custom all-reduce IPC
	// buffers (8 MiB each). Estimated from those sizes, not fitted: no
	// multi-GPU start-up with a logged block count was available.
	nonTorchBytesPerPeerNVLink = 0.25 * hardware.GiB
	nonTorchBytesPerPeerPCIe   = 0.10 * hardware.GiB
	// nonTorchBytesTPBase is the fixed cost of creating the communicators
	// at all (TP > 1).
	nonTorchBytesTPBase = 0.25 * hardware.GiB

	// fusedMoEChunkTokens is VLLM_FUSED_MOE_CHUNK_SIZE: the fused-MoE
	// kernel's workspace is sized for at most this many tokens.
	fusedMoEChunkTokens = 32768
)
