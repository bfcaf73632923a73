// The Step page: the step explanation as a stacked bar with each kernel's source.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { msOf, openPage, shots, useServer } from "./harness.mjs";

const ctx = useServer();

test("docs/steptime.md's steptime example shows its kernels and sources", async () => {
  const { page, context, errors, httpErrors } = await openPage(ctx.browser);
  // docs/steptime.md: headroom steptime --model qwen3-30b-a3b --gpu h200 --dp 8 --expert-parallel --batch-decode 64 --kv-len 2048 --steptime table
  await page.goto(ctx.server.url + "/step?model=qwen3-30b-a3b&gpu=h200&dp=8&expert_parallel=1");
  await page.locator("#kernels tbody tr").first().waitFor({ timeout: 60000 });
  const step = msOf(await page.locator("#step-ms .v").innerText());
  assert.ok(step > 0.5 && step < 100, `step ${step} ms`);
  const rows = await page.locator("#kernels tbody tr").count();
  const segments = await page.locator("#step-chart svg g[aria-label='bar'] rect").count();
  assert.ok(segments >= rows, `${segments} bar segments for ${rows} kernels`);
  assert.match(await page.locator("#kernels").innerText(), /table h200_sxm/);
  await page.getByRole("button", { name: "Show as CLI / curl" }).click();
  assert.equal(await page.getByLabel("the CLI command").innerText(), "headroom steptime --model qwen3-30b-a3b --gpu h200 --dp 8 --expert-parallel --steptime table --batch-decode 64 --kv-len 2048");
  await page.getByRole("button", { name: "Hide CLI / curl" }).click();
  await page.screenshot({ path: join(shots, "web-step.png") });
  // A batch the engine cannot run names its field.
  await page.getByLabel("Decoding sequences (sequences)").fill("0");
  await page.getByLabel("Their context (tokens)").fill("0");
  await page.locator("#decode_seqs-error").waitFor({ timeout: 30000 });
  assert.ok(httpErrors.every((s) => s === 400), String(httpErrors));
  assert.deepEqual(errors, []);
  await context.close();
});
