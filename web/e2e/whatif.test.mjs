// The What-if page: moving max_num_seqs re-simulates and moves TTFT; a
// pinned setting shows side by side with the differences highlighted.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { msOf, openPage, settled, shots, useServer } from "./harness.mjs";

const ctx = useServer();

test("moving max_num_seqs changes the predicted TTFT", async () => {
  const { page, context, errors, httpErrors } = await openPage(ctx.browser);
  // Llama-3.1-8B on one H100 at 10 req/s: about 38 requests run at once.
  await page.goto(ctx.server.url + "/whatif");
  await page.locator("#ttft .v").waitFor({ timeout: 60000 });
  await settled(page);
  const before = msOf(await page.locator("#ttft .v").innerText());
  // The slider, by keyboard: vLLM's default → 1, 2, 4, 8 sequences.
  const slider = page.getByRole("slider", { name: "max_num_seqs (sequences)" });
  await slider.focus();
  for (let i = 0; i < 4; i++) await page.keyboard.press("ArrowRight");
  assert.equal(await slider.getAttribute("aria-valuetext"), "8 sequences");
  assert.equal(await page.getByLabel("max_num_seqs, exact value (sequences)").inputValue(), "8");
  await page.waitForFunction(() => /max_num_seqs=8/.test(location.search));
  await page.waitForFunction((b) => {
    const s = document.getElementById("sim-status")?.textContent ?? "";
    const v = document.querySelector("#ttft .v")?.textContent ?? "";
    return !s.startsWith("Simulating") && v !== "" && v !== b;
  }, await page.locator("#ttft .v").innerText(), { timeout: 60000 });
  await settled(page);
  const after8 = msOf(await page.locator("#ttft .v").innerText());
  console.log(`# TTFT p99 ${before} ms with vLLM's default max_num_seqs, ${after8} ms with 8`);
  assert.ok(after8 > 2 * before, `TTFT p99 ${after8} ms with max_num_seqs 8, ${before} ms with the default`);
  // The charts are drawn: four percentile plots and the time series.
  assert.equal(await page.locator("#distributions svg").count(), 4);
  assert.ok((await page.locator("#over-time svg").count()) >= 3);
  assert.deepEqual(errors, []);
  assert.deepEqual(httpErrors, []);
  await context.close();
});

test("a pinned setting shows side by side, differences highlighted", async () => {
  const { page, context, errors } = await openPage(ctx.browser);
  await page.goto(ctx.server.url + "/whatif?max_num_seqs=8");
  await page.locator("#ttft .v").waitFor({ timeout: 60000 });
  await settled(page);
  await page.getByRole("button", { name: "Pin these settings as A" }).click();
  await page.getByLabel("max_num_seqs, exact value (sequences)").fill("");
  await page.locator("#side-by-side").waitFor({ timeout: 60000 });
  await settled(page);
  await page.waitForFunction(() => document.querySelector("#metric-diffs td.differs") !== null, null, { timeout: 60000 });
  const diffs = await page.locator("#setting-diffs tbody tr").allInnerTexts();
  assert.deepEqual(diffs.map((t) => t.replace(/\s+/g, " ").trim()), ["engine.max_num_seqs 8 default"]);
  const ttft = await page.locator("#metric-diffs tr", { hasText: "TTFT p99" }).innerText();
  assert.match(ttft, /better/, ttft);
  // The same as a command: compare, B as A's changes.
  await page.getByRole("button", { name: "Show as CLI / curl" }).click();
  assert.equal(await page.getByLabel("the CLI command").innerText(), "headroom compare --model llama-3.1-8b --gpu h100-sxm --rate-rps 10 --set engine.max_num_seqs=8 --b-set engine.max_num_seqs=0");
  await page.getByRole("button", { name: "Hide CLI / curl" }).click();
  await page.screenshot({ path: join(shots, "web-whatif.png") });
  assert.deepEqual(errors, []);
  await context.close();
});

test("a bad setting shows the server's reason next to it", async () => {
  const { page, context, errors, httpErrors } = await openPage(ctx.browser);
  await page.goto(ctx.server.url + "/whatif");
  await page.locator("#ttft .v").waitFor({ timeout: 60000 });
  await page.getByLabel("max_num_seqs, exact value (sequences)").fill("0.5");
  const msg = page.locator("#max_num_seqs-error");
  await msg.waitFor({ timeout: 60000 });
  assert.match(await msg.innerText(), /is not an integer/);
  assert.deepEqual(httpErrors, [400]);
  assert.deepEqual(errors, []);
  await context.close();
});
