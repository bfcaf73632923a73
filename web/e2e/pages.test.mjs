// Every page: labels on every control, every control reachable with the
// keyboard, no sideways scrolling on a narrow screen, and the server's
// token asked for when it wants one.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { cleanup, launch, openPage, startServer } from "./harness.mjs";

const token = "e2e-token-0123456789abcdef";
let server, guarded, browser;
before(async () => {
  server = await startServer();
  guarded = await startServer([], { HEADROOM_AUTH_TOKEN: token });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.stop();
  await guarded?.stop();
  cleanup();
});

// Each page and what shows once it has its first answer.
const pages = [
  ["/plan", "input[type=checkbox][id^='gpu-']"],
  ["/whatif", "#ttft .v"],
  ["/validate", "#file"],
  ["/step", "#kernels tbody tr"],
];

/** unlabelled lists the controls with no accessible name. */
function unlabelled() {
  const out = [];
  for (const el of document.querySelectorAll("input, select, textarea, button")) {
    const named = (el.labels && el.labels.length > 0) || el.getAttribute("aria-label") || el.getAttribute("aria-labelledby") || (el.tagName === "BUTTON" && el.textContent.trim());
    if (!named) out.push(el.outerHTML.slice(0, 120));
  }
  return out;
}

for (const [path, ready] of pages) {
  test(`${path}: every control is labelled and reachable by Tab`, async () => {
    const { page, context, errors } = await openPage(browser);
    await page.goto(server.url + path);
    await page.locator(ready).first().waitFor({ timeout: 60000 });
    assert.deepEqual(await page.evaluate(unlabelled), []);
    // Tab from the top through the page: every enabled control of the form gets the focus.
    const controls = await page.evaluate(() =>
      [...document.querySelectorAll("form.inputs input, form.inputs select, form.inputs button, form.inputs summary")]
        // Shown controls (a closed <details> hides its own until opened), the file pickers drawn as buttons.
        .filter((e) => !e.disabled && (e.checkVisibility() || e.classList.contains("visually-hidden")))
        .map((e) => e.id || e.name || e.textContent.trim()),
    );
    const seen = new Set();
    for (let i = 0; i < 200; i++) {
      await page.keyboard.press("Tab");
      seen.add(await page.evaluate(() => { const e = document.activeElement; return e ? e.id || e.name || e.textContent.trim() : ""; }));
    }
    const missed = controls.filter((c) => !seen.has(c));
    assert.deepEqual(missed, [], `not reached by Tab on ${path}`);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test(`${path}: a 390 px wide screen has no sideways scrolling`, async () => {
    const { page, context, errors } = await openPage(browser, { width: 390, height: 844 });
    await page.goto(server.url + path);
    await page.locator(ready).first().waitFor({ timeout: 60000 });
    const [scroll, inner] = await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
    assert.ok(scroll <= inner, `${path} is ${scroll} px wide in a ${inner} px window`);
    assert.deepEqual(errors, []);
    await context.close();
  });
}

test("a server with a token: the page asks for it, then every call carries it", async () => {
  const { page, context, errors, httpErrors } = await openPage(browser);
  await page.goto(guarded.url + "/plan");
  const field = page.getByLabel("Bearer token");
  await field.waitFor({ timeout: 30000 });
  await field.fill(token);
  await page.getByRole("button", { name: "Use this token" }).click();
  await page.getByRole("checkbox", { name: /^b200 ·/ }).waitFor({ timeout: 30000 });
  await page.getByRole("button", { name: "Show as CLI / curl" }).click();
  assert.match(await page.getByLabel("the curl calls").innerText(), /-H "Authorization: Bearer \$HEADROOM_AUTH_TOKEN"/);
  // The token is never in the address bar.
  assert.ok(!page.url().includes(token));
  assert.ok(httpErrors.every((s) => s === 401), String(httpErrors));
  assert.deepEqual(errors, []);
  await context.close();
});
