import { describe, expect, test } from "vitest";
import { command, curl, shellQuote } from "../src/lib/cli";

describe("shell quoting", () => {
  test.each([
    ["plain-word_1.2", "plain-word_1.2"],
    ["h100-sxm,h200", "h100-sxm,h200"],
    ["sla.ttft_ms.p99=2000", "sla.ttft_ms.p99=2000"],
    ["", "''"],
    ["two words", "'two words'"],
    ["it's", `'it'\\''s'`],
    ["$HOME", "'$HOME'"],
    ["[{at_s: 0, rate_rps: 2}]", "'[{at_s: 0, rate_rps: 2}]'"],
    ["a;rm -rf /", "'a;rm -rf /'"],
  ])("%j → %s", (word, want) => {
    expect(shellQuote(word)).toBe(want);
  });

  test("command quotes each word", () => {
    expect(command(["headroom", "simulate", "--set", "engine.max_num_seqs=64", "--model", "my model"])).toBe("headroom simulate --set engine.max_num_seqs=64 --model 'my model'");
  });
});

describe("curl", () => {
  test("a JSON POST", () => {
    expect(curl({ method: "POST", origin: "http://127.0.0.1:8080", path: "/v1/simulate", body: { model: "llama-3.1-8b", tp: 2 }, auth: false })).toBe(
      `curl -H 'Content-Type: application/json' -d '{"model":"llama-3.1-8b","tp":2}' http://127.0.0.1:8080/v1/simulate`,
    );
  });

  test("a body with a quote survives the shell", () => {
    expect(curl({ method: "POST", origin: "http://h", path: "/v1/x", body: { name: "it's" }, auth: false })).toBe(
      `curl -H 'Content-Type: application/json' -d '{"name":"it'\\''s"}' http://h/v1/x`,
    );
  });

  test("with a token the call reads it from the environment, never shows it", () => {
    const c = curl({ method: "GET", origin: "http://h:1", path: "/v1/jobs/JOB_ID", auth: true });
    expect(c).toBe(`curl -H "Authorization: Bearer $HEADROOM_AUTH_TOKEN" http://h:1/v1/jobs/JOB_ID`);
  });

  test("DELETE names its method; a form upload names its files", () => {
    expect(curl({ method: "DELETE", origin: "http://h", path: "/v1/jobs/ID", auth: false })).toBe("curl -X DELETE http://h/v1/jobs/ID");
    expect(curl({ method: "POST", origin: "http://h", path: "/v1/validate", form: [["file", "@requests.jsonl"], ["gpu", "h100-sxm"]], auth: false })).toBe(
      "curl -F file=@requests.jsonl -F gpu=h100-sxm http://h/v1/validate",
    );
  });
});
