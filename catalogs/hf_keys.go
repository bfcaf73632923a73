package catalogs

// hfUsedKeys are the config.json keys the importer reads.
var hfUsedKeys = setOf(
	"architectures", "model_type", "torch_dtype", "dtype", "text_config",
	"num_hidden_layers", "hidden_size", "intermediate_size",
	"num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
	"max_position_embeddings", "tie_word_embeddings", "attention_bias",
	"partial_rotary_factor", "rope_parameters",
	"sliding_window", "use_sliding_window", "max_window_layers", "layer_types",
	"sliding_window_pattern",
	"num_local_experts", "num_experts", "n_routed_experts",
	"num_experts_per_tok", "experts_per_token", "moe_intermediate_size",
	"n_shared_experts", "shared_expert_intermediate_size", "first_k_dense_replace",
	"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
	"quantization_config",
	// MiniMax-M2: rotated dims per head, per-layer attention kind (1 =
	// softmax, 0 = lightning/linear), shared-expert width (0: none).
	"rotary_dim", "attn_type_list", "shared_intermediate_size",
	// DeepSeek-V3 and others: multi-token-prediction layers (the mtp
	// method of speculative decoding runs them).
	"num_nextn_predict_layers",
)

// hfIgnoredKeys are config.json keys known not to change the shape, memory
// or FLOPs the simulator derives: token ids, initialisation, dropout, norm
// epsilons, rope frequencies and scaling, router losses and scoring,
// logit soft-capping, generation defaults and bookkeeping, and the vision
// and audio towers of multimodal wrappers. Collected from the configs of
// Llama 2/3/3.1/3.3, Code Llama, Mistral, Mixtral, Mistral NeMo, Qwen2/2.5,
// Qwen2-MoE, Qwen3, Qwen3-MoE, Yi, Gemma 2/3, Phi-3/3.5/4, DeepSeek-V2/V3/R1,
// gpt-oss, MiniMax-M2, Kimi-K2, Mistral Small 3 and the PretrainedConfig
// defaults transformers writes.
var hfIgnoredKeys = setOf(
	// bookkeeping
	"_name_or_path", "name_or_path", "_attn_implementation", "_commit_hash",
	"transformers_version", "auto_map", "tokenizer_class", "unsloth_version",
	"unsloth_fixed", "use_cache", "return_dict", "output_hidden_states",
	"output_attentions", "torchscript", "use_bfloat16", "tf_legacy_loss",
	"pruned_heads", "tie_encoder_decoder", "is_encoder_decoder", "is_decoder",
	"cross_attention_hidden_size", "add_cross_attention", "chunk_size_feed_forward",
	"finetuning_task", "id2label", "label2id", "prefix", "task_specific_params",
	"problem_type", "cache_implementation", "use_return_dict",
	// token ids
	"bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id",
	"decoder_start_token_id", "image_token_id", "image_token_index",
	"video_token_id", "vision_start_token_id", "vision_end_token_id",
	"vision_token_id", "boi_token_index", "eoi_token_index", "audio_token_id",
	"ignore_index",
	// generation defaults
	"max_length", "min_length", "do_sample", "early_stopping", "num_beams",
	"num_beam_groups", "diversity_penalty", "temperature", "top_k", "top_p",
	"typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
	"encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences",
	"output_scores", "return_dict_in_generate", "forced_bos_token_id",
	"forced_eos_token_id", "remove_invalid_values",
	"exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens",
	// training: initialisation, dropout, losses
	"initializer_range", "attention_dropout", "hidden_dropout", "hidden_dropout_prob",
	"attention_probs_dropout_prob", "embd_pdrop", "resid_pdrop", "attn_pdrop",
	"dropout", "classifier_dropout", "pretraining_tp", "router_aux_loss_coef",
	"output_router_logits", "aux_loss_alpha", "seq_aux", "router_jitter_noise",
	"input_jitter_noise", "router_z_loss_coef",
	// activations, norms, rope
	"hidden_act", "hidden_activation", "rms_norm_eps", "layer_norm_eps",
	"layer_norm_epsilon", "rope_theta", "rope_scaling", "rope_local_base_freq",
	"rope_interleave", "original_max_position_embeddings", "initial_context_length",
	"swiglu_limit", "mlp_bias", "lm_head_bias", "use_mrope", "full_attn_mod",
	"interpolate_factor",
	// attention details that do not change sizes
	"attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar",
	"sliding_window_size",
	// routing details (sizes come from the expert counts)
	"norm_topk_prob", "decoder_sparse_step", "mlp_only_layers", "scoring_func",
	"topk_method", "n_group", "topk_group", "routed_scaling_factor", "ep_size",
	"moe_layer_freq",
	// multi-token prediction modules that engines do not load by default
	// (MiniMax-M2 use_mtp/num_mtp_modules; DeepSeek's num_nextn_predict_layers
	// is read)
	"use_mtp", "mtp_transformer_layers", "num_mtp_modules",
	// q/k RMS norms (a few thousand weights per layer) and the routing bias
	// of MiniMax-M2 (e_score_correction_bias, one value per expert)
	"use_qk_norm", "qk_norm_type", "use_routing_bias",
	// Granite scaling multipliers
	"embedding_multiplier", "logits_scaling", "residual_multiplier", "attention_multiplier",
	// multimodal towers and projectors
	"vision_config", "audio_config", "projector_hidden_act", "vision_feature_layer",
	"vision_feature_select_strategy", "multimodal_projector_bias",
	"spatial_merge_size", "image_seq_length", "mm_tokens_per_image",
)

func setOf(keys ...string) map[string]bool {
	s := make(map[string]bool, len(keys))
	for _, k := range keys {
		s[k] = true
	}
	return s
}
