// The end-to-end tests' harness: builds the real server (go build
// ./cmd/headroom-server, unless E2E_SERVER_BIN names a binary), runs it on
// a free loopback port, and drives headless Chromium (CHROMIUM, default
// /usr/bin/chromium) through playwright-core.

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before } from "node:test";
import { chromium } from "playwright-core";

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** shots is where screenshots go: SCREENSHOT_DIR, else a temporary folder. */
export const shots = process.env.SCREENSHOT_DIR ? resolve(process.env.SCREENSHOT_DIR) : mkdtempSync(join(tmpdir(), "headroom-shots-"));
mkdirSync(shots, { recursive: true });

let work;

/** buildServer builds the binary once and answers its path. */
function buildServer() {
  if (process.env.E2E_SERVER_BIN) return resolve(process.env.E2E_SERVER_BIN);
  work ??= mkdtempSync(join(tmpdir(), "headroom-e2e-"));
  const bin = join(work, "headroom-server");
  execFileSync("go", ["build", "-o", bin, "./cmd/headroom-server"], { cwd: repo, stdio: "inherit" });
  return bin;
}

/**
 * startServer runs headroom-server on 127.0.0.1:0 and resolves with its
 * base URL once it logs the address it listens on.
 */
export async function startServer(extraArgs = [], env = {}) {
  const bin = buildServer();
  const proc = spawn(bin, ["--listen", "127.0.0.1:0", "--calibration-store", "", "--shutdown-drain", "0s", ...extraArgs], {
    cwd: repo,
    // The server reads HEADROOM_* as its configuration: only the test's own.
    env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("HEADROOM_"))), ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  const url = await new Promise((resolveURL, reject) => {
    const timer = setTimeout(() => reject(new Error("headroom-server did not start in 30 s:\n" + log)), 30000);
    proc.stderr.on("data", (b) => {
      log += b.toString();
      const m = /msg=serving addr=(127\.0\.0\.1:\d+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolveURL("http://" + m[1]);
      }
    });
    proc.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`headroom-server exited (${code}):\n${log}`));
    });
  });
  return {
    url,
    log: () => log,
    stop: async () => {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.on("exit", r));
      proc.kill("SIGINT");
      await exited;
    },
  };
}

/** launch starts headless Chromium. */
export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--font-render-hinting=none"],
  });
}

/**
 * openPage opens a tab at 1280×800 (or the given size) that records every
 * console error, page error and failed request (errors), and apart from
 * them the HTTP statuses the browser logged as failed loads (httpErrors).
 */
export async function openPage(browser, viewport = { width: 1280, height: 800 }) {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1, locale: "en-US", timezoneId: "UTC" });
  const page = await context.newPage();
  const errors = [];
  // The browser logs each 4xx/5xx answer as a console error; those are the
  // API's problems the page shows, and the tests check them apart.
  const httpErrors = [];
  page.on("console", (m) => {
    const http = /^Failed to load resource: the server responded with a status of (\d+)/.exec(m.text());
    if (http) httpErrors.push(Number(http[1]));
    else if (m.type() === "error" || m.type() === "warning") errors.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => {
    // A request the app cancels on purpose (a superseded simulation) is not an error.
    if (r.failure()?.errorText !== "net::ERR_ABORTED") errors.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  return { page, context, errors, httpErrors };
}

/** cleanup removes the build folder. */
export function cleanup() {
  if (work) rmSync(work, { recursive: true, force: true });
}

/** msOf reads a latency the page shows ("194 ms", "65.5 s", "1,234 ms") in ms. */
export function msOf(text) {
  const m = /([\d,.]+)\s*(ms|s)\b/.exec(text);
  if (!m) throw new Error(`no latency in ${JSON.stringify(text)}`);
  const v = Number(m[1].replace(/,/g, ""));
  return m[2] === "s" ? v * 1000 : v;
}

/** settled waits until the What-if page's simulation has answered. */
export async function settled(page) {
  await page.waitForFunction(() => {
    const s = document.getElementById("sim-status");
    return s && s.textContent && !s.textContent.startsWith("Simulating");
  }, null, { timeout: 60000 });
}

/**
 * useServer starts a server (and a browser) before a file's tests and
 * stops them after; the returned object holds them once started.
 */
export function useServer(extraArgs = [], env = {}) {
  const ctx = { server: undefined, browser: undefined };
  before(async () => {
    ctx.server = await startServer(extraArgs, env);
    ctx.browser = await launch();
  });
  after(async () => {
    await ctx.browser?.close();
    await ctx.server?.stop();
    cleanup();
  });
  return ctx;
}
