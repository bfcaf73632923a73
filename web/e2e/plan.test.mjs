// The Plan page as a person uses it: docs/planning.md's example, a bad input,
// the keyboard, a rate profile from a trace, a model import, a cancel.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { openPage, repo, shots, useServer } from "./harness.mjs";

const ctx = useServer();

// docs/planning.md's plan example answers this sentence (`headroom plan --model
// llama-3.1-70b --rate-rps 4 --set sla.ttft_ms.p99=2000 --set
// sla.tpot_ms.p99=60 --gpus h100-sxm,h200,a100-80gb,l40s,b200`).
const readmeSentence = "1 × NVIDIA B200 SXM 180GB as 1 replica of TP1: $5.50/h";

test("docs/planning.md's plan example shows its recommendation within seconds", async () => {
  const { page, context, errors, httpErrors } = await openPage(ctx.browser);
  const t0 = Date.now();
  await page.goto(ctx.server.url + "/");
  await page.getByRole("checkbox", { name: /^b200 ·/ }).waitFor();
  await page.getByRole("button", { name: "Plan", exact: true }).click();
  const rec = page.locator("#recommendation");
  await rec.waitFor({ timeout: 60000 });
  const firstAnswerS = (Date.now() - t0) / 1000;
  assert.match(await rec.innerText(), new RegExp("^" + readmeSentence.replace(/[$.()×]/g, "\\$&")));
  console.log(`# first plan answer ${firstAnswerS.toFixed(2)} s after opening the page`);
  // 2.2 s measured on two shared cores (the first answer includes the
  // page load and the plan job); machines differ 3x in speed.
  assert.ok(firstAnswerS < 10, `the first answer took ${firstAnswerS} s, want a few seconds`);
  // The Pareto chart: a point per simulated candidate, the recommendation ringed.
  const dots = await page.locator("#pareto svg circle").count();
  assert.ok(dots >= 10, `${dots} circles in the Pareto chart`);
  assert.match(await page.locator("#runners-up").innerText(), /h200 TP2×1[\s\S]*cost/);
  assert.match(await page.locator("#pruned").innerText(), /h100-sxm TP1.*does not fit/);
  // The same question as a command: docs/planning.md's flags.
  await page.getByRole("button", { name: "Show as CLI / curl" }).click();
  const cli = await page.getByLabel("the CLI command").innerText();
  assert.equal(cli, "headroom plan --model llama-3.1-70b --rate-rps 4 --set sla.ttft_ms.p99=2000 --set sla.tpot_ms.p99=60 --gpus h100-sxm,h200,a100-80gb,l40s,b200");
  assert.match(await page.getByLabel("the curl calls").innerText(), /curl -H 'Content-Type: application\/json' -d '\{"kind":"plan"/);
  await page.getByRole("button", { name: "Hide CLI / curl" }).click();
  await page.screenshot({ path: join(shots, "web-plan.png") });
  assert.deepEqual(errors, []);
  assert.deepEqual(httpErrors, []);
  await context.close();
});

test("a bad input shows the API's problem next to its field", async () => {
  const { page, context, errors, httpErrors } = await openPage(ctx.browser);
  await page.goto(ctx.server.url + "/plan");
  const rate = page.getByLabel("Arrival rate (req/s)");
  await rate.fill("-4");
  await page.getByRole("button", { name: "Plan", exact: true }).click();
  const msg = page.locator("#rate_rps-error");
  await msg.waitFor();
  assert.equal(await msg.innerText(), "must be a finite number > 0, got -4");
  assert.equal(await rate.getAttribute("aria-invalid"), "true");
  assert.equal(await rate.getAttribute("aria-describedby"), "rate_rps-hint rate_rps-error");
  // The URL keeps the bad value: a shared link shows the same problem.
  assert.match(page.url(), /rate_rps=-4/);
  assert.deepEqual(httpErrors, [400]);
  assert.deepEqual(errors, []);
  await context.close();
});

test("the plan runs from the keyboard alone", async () => {
  const { page, context, errors } = await openPage(ctx.browser);
  await page.goto(ctx.server.url + "/plan?gpus=b200&tps=1&max_replicas=2");
  await page.getByRole("checkbox", { name: /^b200 ·/ }).waitFor();
  await page.getByLabel("Model").focus();
  // Tab through the form to the Plan button (every control on the way is reachable).
  let reached = false;
  for (let i = 0; i < 80 && !reached; i++) {
    await page.keyboard.press("Tab");
    reached = await page.evaluate(() => document.activeElement?.textContent === "Plan");
  }
  assert.ok(reached, "Tab never reached the Plan button");
  await page.keyboard.press("Enter");
  await page.locator("#recommendation").waitFor({ timeout: 60000 });
  assert.match(await page.locator("#recommendation").innerText(), /B200/);
  assert.deepEqual(errors, []);
  await context.close();
});

test("an uploaded trace plans a day: the day chart shows load, replicas and SLA attainment", async () => {
  const { page, context, errors, httpErrors } = await openPage(ctx.browser);
  // docs/planning.md's day example (azure-conv-head.csv stretched 200× into a
  // day), on one GPU type at a third of its rates to keep the test short.
  await page.goto(ctx.server.url + "/plan?load=profile&gpus=l40s&tps=1&ttft_p99_ms=1500&tpot_p99_ms=80&model=llama-3.1-8b");
  await page.getByText("Make it from a file…").click();
  await page.getByLabel("The file is").selectOption("trace");
  await page.getByLabel("File", { exact: true }).setInputFiles(join(repo, "examples/azure-conv-head.csv"));
  await page.getByLabel("Window of the profile (s)").fill("3600");
  await page.getByLabel("Stretch time by (×)").fill("200");
  await page.getByLabel("Scale the rates by (×)").fill("0.3");
  await page.getByRole("button", { name: "Use this file" }).click();
  await page.waitForURL(/profile=0:/);
  assert.match(await page.locator("#profile-hint").innerText(), /points over 2\d\.\d h.*Lengths: the trace's/);
  await page.getByRole("button", { name: "Plan", exact: true }).click();
  await page.locator("#day svg").first().waitFor({ timeout: 120000 });
  assert.equal(await page.locator("#day svg[class^='plot']").count(), 3);
  assert.match(await page.locator("#recommendation").innerText(), /L40S/);
  await page.locator("#day").scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(shots, "web-plan-day.png") });
  assert.deepEqual(httpErrors, []);
  assert.deepEqual(errors, []);
  await context.close();
});

test("a Hugging Face config.json imported by upload becomes the plan's model", async () => {
  const { page, context, errors, httpErrors } = await openPage(ctx.browser);
  await page.goto(ctx.server.url + "/plan");
  await page.getByRole("button", { name: "Import a Hugging Face config.json…" }).click();
  await page.getByLabel("config.json").setInputFiles(join(repo, "api/testdata/hf-config.json"));
  await page.getByLabel("New model id").fill("e2e-imported");
  await page.getByRole("button", { name: "Import", exact: true }).click();
  await page.getByText("added e2e-imported to the server's catalog").waitFor({ timeout: 30000 });
  assert.equal(await page.getByLabel("Model", { exact: true }).inputValue(), "e2e-imported");
  await page.waitForURL(/model=e2e-imported/);
  // The same id again is the server's 409, shown under the id.
  await page.getByRole("button", { name: "Import", exact: true }).click();
  await page.locator("#model-config-error, #model-import-id-error").first().waitFor({ timeout: 30000 });
  assert.match(await page.locator("#model-config-error, #model-import-id-error").first().innerText(), /e2e-imported/);
  assert.deepEqual(httpErrors, [409]);
  assert.deepEqual(errors, []);
  await context.close();
});

test("a running plan is cancelled on the server", async () => {
  const { page, context, errors, httpErrors } = await openPage(ctx.browser);
  // The whole catalog at every TP: minutes of simulations.
  await page.goto(ctx.server.url + "/plan?gpus=&rate_rps=40");
  await page.getByRole("checkbox", { name: /^b200 ·/ }).waitFor();
  await page.getByRole("button", { name: "Plan", exact: true }).click();
  await page.getByRole("button", { name: "Cancel" }).click();
  await page.getByText("Cancelled").waitFor();
  // The server stops the job promptly: it ends cancelled.
  const state = await page.evaluate(async () => {
    for (let i = 0; i < 100; i++) {
      const jobs = (await (await fetch("/v1/jobs")).json()).jobs;
      const last = jobs[jobs.length - 1];
      if (last.kind === "plan" && last.state !== "running" && last.state !== "queued") return last.state;
      await new Promise((r) => setTimeout(r, 100));
    }
    return "still running after 10 s";
  });
  assert.equal(state, "cancelled");
  assert.equal(await page.locator("#recommendation").count(), 0);
  assert.deepEqual(httpErrors, []);
  assert.deepEqual(errors, []);
  await context.close();
});
