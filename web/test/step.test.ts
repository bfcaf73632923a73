import { describe, expect, test } from "vitest";
import { decode, defaults } from "../src/lib/query";
import { kernelRows, stepBody, stepCLI, stepFields, type StepReport } from "../src/lib/step";

describe("the Step view's question", () => {
  test("the defaults: Llama-3.1-8B on one H100, 64 sequences decoding at 2,048 tokens", () => {
    const s = defaults(stepFields);
    expect(stepBody(s)).toEqual({ model: "llama-3.1-8b", gpu: "h100-sxm", tp: 1, dp: 1, steptime: { backend: "table" }, batch: { decode_seqs: 64, kv_len: 2048, prefill_tokens: 0, prefill_context_tokens: 0 } });
    expect(stepCLI(s)).toBe("headroom steptime --model llama-3.1-8b --gpu h100-sxm --steptime table --batch-decode 64 --kv-len 2048");
  });
  test("a mixed batch of a MoE model with expert parallelism", () => {
    const s = decode("?model=qwen3-30b-a3b&gpu=h200&dp=8&expert_parallel=1&prefill_tokens=512&prefill_context_tokens=1024&prefill_chunks=2&backend=formula", stepFields);
    expect(stepBody(s)).toMatchObject({ dp: 8, expert_parallel: true, steptime: { backend: "formula" }, batch: { prefill_tokens: 512, prefill_context_tokens: 1024, prefill_chunks: 2 } });
    expect(stepCLI(s)).toBe(
      "headroom steptime --model qwen3-30b-a3b --gpu h200 --dp 8 --expert-parallel --steptime formula --batch-decode 64 --kv-len 2048 --prefill-tokens 512 --prefill-context 1024 --prefill-chunks 2",
    );
  });
});

describe("the stacked bar", () => {
  test("kernels sit in op order, each segment starting where the one before ends", () => {
    const k = (op: string, name: string, t: number) => ({ op, name, calls: 1, shape: "", time_us: t, per_call_us: t, share_ratio: 0, bound: "memory", source: "formula" });
    const r = {
      ops: [{ op: "qkv_proj" }, { op: "attention_decode" }, { op: "mlp" }],
      kernels: [k("mlp", "gate_up", 30), k("qkv_proj", "qkv", 10), k("mlp", "down", 20), k("attention_decode", "attn", 5)],
    } as unknown as StepReport;
    expect(kernelRows(r).map((x) => [x.name, x.start_us, x.end_us])).toEqual([
      ["qkv", 0, 10],
      ["attn", 10, 15],
      ["gate_up", 15, 45],
      ["down", 45, 65],
    ]);
  });
});
