#!/usr/bin/env node
// Drives Debian's headless chromium (/usr/bin/chromium) through a JSON
// script of steps, for the tests of MCP Apps views: playwright-core from
// tests/servers (the library only; it downloads no browser).
//
//   node tests/browser/drive.mjs SCRIPT.json     (or the script on stdin)
//
// The script is an array of steps, or {"steps": [...], "timeoutMs": N,
// "totalMs": N, "viewport": {"width", "height"}}. A step is an object whose
// `op` names it; `timeoutMs` (default the script's, else 10000) bounds any
// step that waits. `frame`, where taken, is a URL substring choosing the
// frames to look in ("about:srcdoc" for a srcdoc frame); without it every
// frame of the page is searched, nested and cross-origin ones included
// (an MCP App's view is an iframe in the sandbox proxy's iframe). Only
// localhost and 127.0.0.1 resolve: the browser never leaves loopback.
//
//   goto {url}                       navigate the page; answers {status, url}
//   waitText {text, frame?}          until a frame's body text contains text; {frame}
//   waitTextGone {text, frame?}      until no frame's body text contains it
//   waitFrameGone {frame}            until no frame's URL contains the substring
//   click {selector | text, frame?}  the first match in the first frame having one
//   readText {frame?}                {frames: [{url, text}]}: each frame's body text
//   screenshot {path}                the full page, as PNG; {path, bytes}
//   evaluate {expression, frame?}    {value} or {error}: a thrown error (a
//                                    SecurityError) is an answer, not a failure
//   fetch {url, method?, headers?, body?, from?: "page"|"node", frame?}
//                                    {status, headers, body} or {error}; a body
//                                    still streaming at timeoutMs (SSE) ends there,
//                                    with truncated: true
//   sleep {ms}
//   waitFile {path, contains}        until the file holds the text (what a
//                                    browser opener wrote, say)
//   signal {pid, signal?}            sends a process a signal (default SIGINT):
//                                    what the page shows when rho stops
//
// Prints one JSON object on stdout: {ok, steps: [{op, ok, ms, ...answer}],
// console: [{type, text, url}], pageErrors: [{message, url}], error?}.
// A step that fails stops the script; then the exit status is 1 and stderr
// says which step and why. The whole run is bounded by totalMs (default
// 120000), after which the browser is closed and the run fails.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';

const require = createRequire(new URL('../servers/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const script = JSON.parse(readFileSync(process.argv[2] && process.argv[2] !== '-' ? process.argv[2] : 0, 'utf8'));
const { steps, timeoutMs: defaultTimeout = 10000, totalMs = 120000, viewport } =
  Array.isArray(script) ? { steps: script } : script;
const result = { ok: false, steps: [], console: [], pageErrors: [] };

// Frames whose URL contains `frame` (all of them without it), main frame first.
const framesOf = (page, frame) => page.frames().filter((f) => !frame || f.url().includes(frame));
// A frame's body text; '' while it has none or is navigating away.
const textOf = (f) => f.evaluate(() => document.body?.innerText ?? '').catch(() => '');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls `probe` every 100 ms until it answers something truthy; on timeout
// throws, with `why()` (what was there instead) in the message.
async function until(ms, probe, why) {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms: ${await why()}`);
    await sleep(100);
  }
}

// What every frame shows, for a failure message.
async function shown(page, frame) {
  const parts = await Promise.all(framesOf(page, frame).map(async (f) =>
    `[${f.url()}] ${JSON.stringify((await textOf(f)).slice(0, 300))}`));
  return parts.length ? `frames: ${parts.join('; ')}` : `no frame's URL contains ${JSON.stringify(frame)}`;
}

// One HTTP request, in node or (serialised by playwright) in a page: the
// body read until it ends or `ms` passes.
async function fetchWithin({ url, method = 'GET', headers = {}, body, ms }) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), ms);
  let response;
  try {
    response = await fetch(url, { method, headers, body, signal: abort.signal });
  } catch (e) {
    clearTimeout(timer);
    return { error: `${e.name}: ${e.message}` };
  }
  const answer = { status: response.status, headers: Object.fromEntries(response.headers), body: '' };
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  try {
    for (let chunk; reader && !(chunk = await reader.read()).done;) answer.body += decoder.decode(chunk.value, { stream: true });
  } catch {
    answer.truncated = true;
  }
  clearTimeout(timer);
  return answer;
}

const ops = {
  async goto(page, { url, timeoutMs }) {
    const response = await page.goto(url, { timeout: timeoutMs });
    return { status: response?.status() ?? null, url: page.url() };
  },
  async waitText(page, { text, frame, timeoutMs }) {
    return until(timeoutMs, async () => {
      for (const f of framesOf(page, frame)) if ((await textOf(f)).includes(text)) return { frame: f.url() };
    }, async () => `no frame shows ${JSON.stringify(text)}; ${await shown(page, frame)}`);
  },
  async waitTextGone(page, { text, frame, timeoutMs }) {
    return until(timeoutMs, async () => {
      for (const f of framesOf(page, frame)) if ((await textOf(f)).includes(text)) return false;
      return {};
    }, async () => `still shown: ${await shown(page, frame)}`);
  },
  async waitFrameGone(page, { frame, timeoutMs }) {
    return until(timeoutMs, async () => framesOf(page, frame).length === 0 && {},
      async () => `frames still there: ${framesOf(page, frame).map((f) => f.url()).join(', ')}`);
  },
  async click(page, { selector, text, frame, timeoutMs }) {
    if (!selector === !text) throw new Error('click takes one of selector or text');
    return until(timeoutMs, async () => {
      for (const f of framesOf(page, frame)) {
        const target = (selector ? f.locator(selector) : f.getByText(text)).first();
        if (await target.count().catch(() => 0)) {
          await target.click({ timeout: timeoutMs });
          return { frame: f.url() };
        }
      }
    }, async () => `nothing matches ${JSON.stringify(selector ?? text)}; ${await shown(page, frame)}`);
  },
  async readText(page, { frame }) {
    return { frames: await Promise.all(framesOf(page, frame).map(async (f) => ({ url: f.url(), text: await textOf(f) }))) };
  },
  async screenshot(page, { path }) {
    const png = await page.screenshot({ path, fullPage: true });
    return { path, bytes: png.length };
  },
  async evaluate(page, { expression, frame, timeoutMs }) {
    const f = await until(timeoutMs, async () => framesOf(page, frame)[0],
      async () => `no frame's URL contains ${JSON.stringify(frame)}`);
    // A string is evaluated as an expression in the frame; what it throws
    // is the answer (a test of isolation expects a SecurityError).
    return f.evaluate(expression).then((value) => ({ frame: f.url(), value: value ?? null }),
      (e) => ({ frame: f.url(), error: e.message.replace(/^frame\.evaluate: /, '').split('\n')[0] }));
  },
  async fetch(page, { from = 'node', frame, timeoutMs, ...request }) {
    if (from === 'node') return fetchWithin({ ...request, ms: timeoutMs });
    const f = framesOf(page, frame)[0];
    if (!f) throw new Error(`no frame's URL contains ${JSON.stringify(frame)}`);
    return f.evaluate(fetchWithin, { ...request, ms: timeoutMs });
  },
  async sleep(page, { ms }) {
    await sleep(ms);
    return {};
  },
  async waitFile(page, { path, contains, timeoutMs }) {
    const read = () => { try { return readFileSync(path, 'utf8'); } catch { return ''; } };
    return until(timeoutMs, async () => read().includes(contains) && { path },
      async () => `${path} holds ${JSON.stringify(read().slice(0, 200))}, not ${JSON.stringify(contains)}`);
  },
  async signal(page, { pid, signal = 'SIGINT' }) {
    process.kill(pid, signal);
    return { pid, signal };
  },
};

let browser;
let failed;
const watchdog = setTimeout(async () => {
  failed = `the whole run took more than ${totalMs} ms`;
  result.error = failed;
  await browser?.close().catch(() => {});
  finish();
}, totalMs);

function finish() {
  clearTimeout(watchdog);
  process.stdout.write(JSON.stringify(result, null, 1) + '\n');
  if (failed) process.stderr.write(`drive.mjs: ${failed}\n`);
  process.exit(failed ? 1 : 0);
}

try {
  // launch() runs the browser on a fresh temporary profile of its own
  // (--user-data-dir), removed when it closes.
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      // Tests stay on loopback: any other name fails to resolve, at once
      // and the same on every machine (a view's CDN font, say, is then a
      // console error, not a download).
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1'],
  });
  const page = await browser.newPage(viewport ? { viewport } : {});
  page.on('console', (m) => result.console.push({ type: m.type(), text: m.text(), url: m.location().url }));
  page.on('pageerror', (e) => result.pageErrors.push({ message: e.message, url: e.stack?.match(/ at (?:.*\()?(\S+?):\d+:\d+/)?.[1] ?? null }));
  for (const [i, step] of steps.entries()) {
    const started = Date.now();
    const op = ops[step.op];
    try {
      if (!op) throw new Error(`no such op (one of ${Object.keys(ops).join(', ')})`);
      const answer = await op(page, { timeoutMs: defaultTimeout, ...step });
      result.steps.push({ op: step.op, ok: true, ms: Date.now() - started, ...answer });
    } catch (e) {
      result.steps.push({ op: step.op, ok: false, ms: Date.now() - started, error: e.message });
      failed = `step ${i} (${JSON.stringify(step)}) failed: ${e.message}`;
      result.error = failed;
      break;
    }
  }
  result.ok = !failed;
} catch (e) {
  failed = `the browser did not start or stopped: ${e.message}`;
  result.error = failed;
} finally {
  await browser?.close().catch(() => {});
}
finish();
