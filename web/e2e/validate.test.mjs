// The Validate page: a real run from testdata/ shows what was read, then
// the predicted-against-measured chart per stage; a calibration is fitted,
// stored and downloadable.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { openPage, repo, shots, startServer, useServer } from "./harness.mjs";

const ctx = useServer();

test("the inference-perf results folder gives the predicted-vs-measured chart per stage", async () => {
  const { page, context, errors, httpErrors } = await openPage(ctx.browser);
  // As headroom validate --run testdata/inference-perf/vllm+v0_engine/results --model llama-3.1-8b --gpu h100-sxm --max-num-seqs 128 --max-model-len 512
  await page.goto(ctx.server.url + "/validate?model=llama-3.1-8b&gpu=h100-sxm&max_num_seqs=128&max_model_len=512");
  await page.locator("#pick-folder").setInputFiles(join(repo, "testdata/inference-perf/vllm+v0_engine/results"));
  await page.locator("#inspection").waitFor({ timeout: 30000 });
  assert.match(await page.locator("#inspection").innerText(), /inference-perf-report/);
  assert.equal(await page.locator("#stages tbody tr").count(), 7);
  assert.match(await page.locator("#inspection").innerText(), /Hint: the run does not name its GPU: give the gpu field/);
  await page.getByRole("button", { name: "Validate", exact: true }).click();
  await page.locator("#pvm-chart svg[class^='plot']").waitFor({ timeout: 60000 });
  // Every stage's latency figures are points: 7 stages × (TTFT, E2E) × (mean, p50, p90, p99).
  const points = await page.locator("#pvm-chart svg g[aria-label='dot'] path").count();
  assert.equal(points, 7 * 2 * 4);
  const table = await page.locator("#comparisons").innerText();
  assert.match(table, /inference-perf stage 6/);
  assert.match(table, /TTFT p99/);
  await page.locator("#pvm-chart").scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(shots, "web-validate.png") });
  assert.deepEqual(httpErrors, []);
  assert.deepEqual(errors, []);
  await context.close();
});

test("a run that does not name its model says so next to the field", async () => {
  const { page, context, errors, httpErrors } = await openPage(ctx.browser);
  await page.goto(ctx.server.url + "/validate");
  await page.locator("#pick-file").setInputFiles(join(repo, "testdata/llmservingsim/RTX4090/Llama-3.1-8B/vllm/requests.jsonl"));
  await page.locator("#inspection").waitFor({ timeout: 30000 });
  await page.getByRole("button", { name: "Validate", exact: true }).click();
  const msg = page.locator("#model-error");
  await msg.waitFor({ timeout: 30000 });
  assert.match(await msg.innerText(), /the run does not name its model/);
  assert.equal(await page.getByLabel("Model", { exact: true }).getAttribute("aria-invalid"), "true");
  assert.deepEqual(httpErrors, [400]);
  assert.deepEqual(errors, []);
  await context.close();
});

test("a calibration is fitted on the LLMServingSim folder, stored and downloadable", async () => {
  const { page, context, errors, httpErrors } = await openPage(ctx.browser);
  await page.goto(ctx.server.url + "/validate");
  await page.locator("#pick-folder").setInputFiles(join(repo, "testdata/llmservingsim/RTX4090/Llama-3.1-8B"));
  await page.locator("#inspection").waitFor({ timeout: 30000 });
  assert.match(await page.locator("#inspection").innerText(), /rtx-4090/);
  await page.getByRole("button", { name: "Calibrate on this run" }).click();
  await page.locator("#calibration-result").waitFor({ timeout: 240000 });
  const link = page.getByRole("link", { name: "Download the calibration file" });
  await link.waitFor();
  const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
  const path = await download.path();
  const { readFileSync } = await import("node:fs");
  const file = JSON.parse(readFileSync(path, "utf8"));
  assert.equal(file.kind, "headroom.calibration");
  assert.equal(file.gpu, "rtx-4090");
  // Validate again with it.
  await page.getByRole("button", { name: "Validate with this calibration" }).click();
  await page.waitForURL(/calibration=/);
  await page.getByRole("button", { name: "Validate", exact: true }).click();
  await page.locator("#pvm-chart svg[class^='plot']").waitFor({ timeout: 60000 });
  assert.deepEqual(httpErrors, []);
  assert.deepEqual(errors, []);
  await context.close();
});

test("a file dropped on the page is read", async () => {
  const { page, context, errors } = await openPage(ctx.browser);
  await page.goto(ctx.server.url + "/validate");
  const { readFileSync } = await import("node:fs");
  const text = readFileSync(join(repo, "testdata/llmservingsim/RTX4090/Llama-3.1-8B/vllm/requests.jsonl"), "utf8");
  await page.evaluate((body) => {
    const dt = new DataTransfer();
    dt.items.add(new File([body], "requests.jsonl"));
    const zone = document.getElementById("file");
    zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: dt, bubbles: true, cancelable: true }));
    zone.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, text);
  await page.locator("#inspection").waitFor({ timeout: 30000 });
  assert.match(await page.locator("#files-status").innerText(), /^requests\.jsonl \(\d+\.\d KiB\)$/);
  assert.match(await page.locator("#inspection").innerText(), /llmservingsim/);
  assert.deepEqual(errors, []);
  await context.close();
});

test("a run over the synchronous limits replays as a job", async () => {
  const small = await startServer(["--sync-max-requests", "5000"]);
  try {
    const { page, context, errors, httpErrors } = await openPage(ctx.browser);
    await page.goto(small.url + "/validate?model=llama-3.1-8b&gpu=h100-sxm&max_num_seqs=128&max_model_len=512");
    await page.locator("#pick-folder").setInputFiles(join(repo, "testdata/inference-perf/vllm+v0_engine/results"));
    await page.locator("#inspection").waitFor({ timeout: 30000 });
    await page.getByRole("button", { name: "Validate", exact: true }).click();
    await page.locator("#pvm-chart svg[class^='plot']").waitFor({ timeout: 120000 });
    const jobs = await page.evaluate(async () => (await (await fetch("/v1/jobs")).json()).jobs);
    assert.deepEqual(jobs.map((j) => [j.kind, j.state]), [["validate", "succeeded"]]);
    // The synchronous try answered 422 (over the limit) before the job.
    assert.deepEqual(httpErrors, [422]);
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await small.stop();
  }
});
