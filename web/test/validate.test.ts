import { describe, expect, test } from "vitest";
import { decode, defaults } from "../src/lib/query";
import { calibrateCLI, calibrationForm, curlForm, form, latencyRows, runName, validateCLI, validateFields, worst, type Upload, type ValidationReport } from "../src/lib/validate";

const blob = (s: string) => new Blob([s]);
const folder: Upload[] = [
  { path: "results/stage_0_lifecycle_metrics.json", file: blob("{}") },
  { path: "results/stage_1_lifecycle_metrics.json", file: blob("{}") },
];

describe("the Validate view's uploads", () => {
  test("a folder's files keep their paths as the parts' file names; only set fields are sent", async () => {
    const s = decode("?model=llama-3.1-8b&gpu=h100-sxm&max_num_seqs=128&enable_prefix_caching=false", validateFields);
    const fd = form(s, folder);
    expect([...fd.keys()]).toEqual(["model", "gpu", "max_num_seqs", "enable_prefix_caching", "file", "file"]);
    expect((fd.getAll("file") as File[]).map((f) => f.name)).toEqual(folder.map((f) => f.path));
    // Calibrations take the run's fields, not validate's switches.
    expect([...calibrationForm(s, folder).keys()]).toEqual(["model", "gpu", "max_num_seqs", "file", "file"]);
  });

  test("the CLI reads the file or the folder the files share", () => {
    expect(runName([])).toBe("RESULT_FILE");
    expect(runName([{ path: "requests.jsonl", file: blob("") }])).toBe("requests.jsonl");
    expect(runName(folder)).toBe("results");
    expect(runName([{ path: "a/x", file: blob("") }, { path: "b/y", file: blob("") }])).toBe(".");
    const s = decode("?model=llama-3.1-8b&gpu=h100-sxm&max_num_seqs=128&max_model_len=512&enable_chunked_prefill=false&calibration=abc", validateFields);
    expect(validateCLI(s, folder)).toBe(
      "headroom validate --run results --model llama-3.1-8b --gpu h100-sxm --max-num-seqs 128 --max-model-len 512 --enable-chunked-prefill=false --calibration calibration-abc.json",
    );
    expect(calibrateCLI(s, folder)).toBe("headroom calibrate --trace results --model llama-3.1-8b --gpu h100-sxm --max-num-seqs 128 --max-model-len 512 --out calibration.json");
  });

  test("curl names each file with its path, and says how many it left out", () => {
    const s = defaults(validateFields);
    expect(curlForm(s, folder, ["format"])).toEqual([
      ["file", "@results/stage_0_lifecycle_metrics.json;filename=results/stage_0_lifecycle_metrics.json"],
      ["file", "@results/stage_1_lifecycle_metrics.json;filename=results/stage_1_lifecycle_metrics.json"],
    ]);
    const many = Array.from({ length: 5 }, (_, i) => ({ path: `d/f${i}`, file: blob("") }));
    expect(curlForm(s, many, [], 2).at(-1)).toEqual(["file", "@… (3 more files)"]);
    expect(curlForm(s, [], [])).toEqual([["file", "@RESULT_FILE"]]);
  });
});

describe("predicted against measured", () => {
  const r: ValidationReport = {
    run: "results",
    format: "inference-perf-report",
    comparisons: [
      {
        run: "stage 0", stage: 0, basis: "aggregate", model: "m", gpu: "g", engine_version: "", requests: 60, logged_blocks: 0, predicted_blocks: 1,
        metrics: [
          { name: "ttft_ms.p50", measured: 37, predicted: 9, error_pct: -75.7 },
          { name: "e2e_ms.p99", measured: 562, predicted: 411, error_pct: -26.9 },
          { name: "throughput.requests_per_s", measured: 1.03, predicted: 1.01, error_pct: -2.3 },
          { name: "tpot_ms.p50", measured: 0, predicted: 7, error_pct: 0 },
        ],
      },
      { run: "row 2", basis: "aggregate", model: "m", gpu: "g", engine_version: "", requests: 0, logged_blocks: 0, predicted_blocks: 0, metrics: null, error: "does not fit" },
    ],
  };
  test("the chart's points are the latencies both sides measured, by kind", () => {
    expect(latencyRows(r).map((p) => [p.part, p.metric, p.kind])).toEqual([
      ["stage 0", "ttft_ms.p50", "TTFT"],
      ["stage 0", "e2e_ms.p99", "E2E"],
    ]);
  });
  test("worst is the largest latency error of a part", () => {
    expect(worst(r.comparisons[0])).toBeCloseTo(75.7);
    expect(worst(r.comparisons[1])).toBeUndefined();
  });
});
