import { describe, expect, test } from "vitest";
import { ApiProblem } from "../src/lib/api";
import { controlFor, placeProblem } from "../src/lib/problems";
import { planFieldMap } from "../src/lib/plan";

describe("placing the server's problems on the Plan page", () => {
  test.each([
    ["params.scenario.workload.arrival.rate_rps", "rate_rps"],
    ["params.scenario.workload.arrival.type", "load"],
    ["params.scenario.workload.input_tokens.value", "input_tokens"],
    ["params.scenario.sla.ttft_ms.p99", "ttft_p99_ms"],
    ["params.scenario.sla", "ttft_p99_ms"],
    ["params.gpus[1]", "gpus"],
    ["gpus[1]", "gpus"],
    ["params.tps[0]", "tps"],
    ["params.scenario.engine.max_num_seqs", "max_num_seqs"],
    ["params.scenario.workload.rate_profile[3].rate_rps", "profile"],
    ["params.scenario.workload.rate_profile_end_s", "profile_end_s"],
    ["params.scenario.gpus_extra", ""],
    ["params.headroomx", ""],
  ])("%s → %j", (field, control) => {
    expect(controlFor(field, planFieldMap)).toBe(control);
  });

  test("a validation problem's fields go to their controls", () => {
    const p = new ApiProblem(400, {
      title: "Invalid request",
      detail: "params.scenario.workload.arrival.rate_rps: must be a finite number > 0, got -4",
      errors: [{ field: "params.scenario.workload.arrival.rate_rps", reason: "must be a finite number > 0, got -4" }],
    });
    expect(placeProblem(p, planFieldMap)).toEqual({ byControl: { rate_rps: "must be a finite number > 0, got -4" }, general: [] });
  });

  test("a 404 names its field at the head of the detail", () => {
    const p = new ApiProblem(404, { title: "Not found", detail: 'gpus[1]: unknown GPU "zz" (did you mean l4, a10, h20?)' });
    expect(placeProblem(p, planFieldMap).byControl).toEqual({ gpus: 'unknown GPU "zz" (did you mean l4, a10, h20?)' });
  });

  test("what names no control is shown whole at the top of the form", () => {
    const p = new ApiProblem(422, { title: "Infeasible configuration", detail: "no candidate configuration fits: every GPU and TP was pruned" });
    expect(placeProblem(p, planFieldMap)).toEqual({
      byControl: {},
      general: ["Infeasible configuration (HTTP 422): no candidate configuration fits: every GPU and TP was pruned"],
    });
  });

  test("a field no control sets keeps the whole problem visible", () => {
    const p = new ApiProblem(400, { title: "Invalid request", detail: "x", errors: [{ field: "params.nope", reason: "unknown key" }] });
    expect(placeProblem(p, planFieldMap).general).toHaveLength(1);
  });
});
