#!/usr/bin/env node
// The interop server on the official TypeScript SDK 2.x
// (`@modelcontextprotocol/server` 2.4.0, installed in tests/servers): the
// 2026-07-28 era (server/discover, MRTR questions, subscriptions/listen)
// and, through the SDK's legacy shim, the 2025 one.
//
//   node server.js stdio | http
//
// HTTP (createMcpHandler: no sessions) binds 127.0.0.1 on a port the kernel
// picks, endpoint /mcp, and prints `listening PORT` first on stdout.
// Diagnostics go to stderr. `slow` appends `started <marker>`, then
// `cancelled <marker>` or `finished <marker>`, to the file named by
// INTEROP_RECORD.
'use strict';

const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');

const req = createRequire(path.join(__dirname, '../../servers/package.json'));
const {
  McpServer,
  ResourceTemplate,
  acceptedContent,
  completable,
  createMcpHandler,
  inputRequired,
  inputResponse,
} = req('@modelcontextprotocol/server');
const { serveStdio } = req('@modelcontextprotocol/server/stdio');
const { localhostHostValidation, localhostOriginValidation, toNodeHandler } = req('@modelcontextprotocol/node');
const z = req('zod');

const mode = process.argv[2] || 'stdio';
if (mode !== 'stdio' && mode !== 'http') {
  console.error('usage: server.js stdio|http');
  process.exit(2);
}

const PNG_B64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const NAMES = ['alice', 'albert', 'bob'];
const ITEMS = ['apple', 'apricot', 'banana'];
const README = 'rho interop server: every SDK exposes the same surface.';
const ASK_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'Your name' },
    agree: { type: 'boolean', description: 'Do you agree?' },
  },
  required: ['name', 'agree'],
};
const suggest = (values, prefix) => values.filter((v) => v.startsWith(prefix || ''));
const text = (s, isError) => ({ content: [{ type: 'text', text: s }], ...(isError ? { isError: true } : {}) });
const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    });
  });

function record(line) {
  if (process.env.INTEROP_RECORD) fs.appendFileSync(process.env.INTEROP_RECORD, `${line}\n`);
  console.error(`record: ${line}`);
}

// Shared across the per-request instances of the HTTP entry.
let addedEnabled = false;
let publish = () => {};

function buildServer() {
  const server = new McpServer(
    { name: 'rho-interop-ts2', version: '2.4.0' },
    { capabilities: { tools: { listChanged: true }, logging: {} } },
  );
  const reg = (name, config, handler) => server.registerTool(name, { inputSchema: z.object({}), ...config }, handler);

  reg('echo', { description: 'Echoes the message', inputSchema: z.object({ message: z.string() }) }, async ({ message }) =>
    text(`Echo: ${message}`),
  );
  reg(
    'structured',
    {
      description: 'Structured weather',
      inputSchema: z.object({ city: z.string().optional() }),
      outputSchema: z.object({ city: z.string(), celsius: z.number() }),
    },
    async ({ city }) => {
      const data = { city: city ?? 'Paris', celsius: 21.5 };
      return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
    },
  );
  reg('image', { description: 'A tiny PNG' }, async () => ({
    content: [{ type: 'image', data: PNG_B64, mimeType: 'image/png' }],
  }));
  reg('fail', { description: 'Always fails' }, async () => text('this tool always fails', true));
  reg('progress', { description: 'Three progress notifications' }, async (_args, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    for (let i = 1; i <= 3; i++) {
      if (token !== undefined) {
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken: token, progress: i, total: 3, message: `step ${i}` },
        });
      }
      await sleep(50);
    }
    return text('progress done');
  });
  reg(
    'slow',
    {
      description: 'Runs long; records whether it was cancelled',
      inputSchema: z.object({ marker: z.string().optional(), seconds: z.number().optional() }),
    },
    async ({ marker = 'slow', seconds = 30 }, ctx) => {
      record(`started ${marker}`);
      try {
        await sleep(seconds * 1000, ctx.mcpReq.signal);
      } catch {
        record(`cancelled ${marker}`);
        throw new Error('cancelled');
      }
      record(`finished ${marker}`);
      return text('slow finished');
    },
  );
  reg('log', { description: 'Logs at four levels' }, async (_args, ctx) => {
    for (const level of ['debug', 'info', 'warning', 'error']) {
      await ctx.mcpReq.log(level, `interop ${level} message`, 'interop');
    }
    return text('logged');
  });
  reg('ask', { description: 'Asks a form' }, async (_args, ctx) => {
    const view = inputResponse(ctx.mcpReq.inputResponses, 'who');
    if (view.kind === 'elicit' && view.action !== 'accept') return text(`action=${view.action}`);
    const answer = acceptedContent(
      ctx.mcpReq.inputResponses,
      'who',
      z.object({ name: z.string(), agree: z.boolean() }),
    );
    if (answer === undefined) {
      return inputRequired({
        inputRequests: { who: inputRequired.elicit({ message: 'Who are you?', requestedSchema: ASK_SCHEMA }) },
      });
    }
    return text(`answered name=${answer.name} agree=${answer.agree}`);
  });
  reg('sample', { description: "Asks the client's model" }, async (_args, ctx) => {
    const view = inputResponse(ctx.mcpReq.inputResponses, 'model');
    if (view.kind === 'sampling') {
      const content = view.result.content;
      const blocks = Array.isArray(content) ? content : [content];
      return text(`model said: ${blocks.filter((b) => b && b.type === 'text').map((b) => b.text).join('')}`);
    }
    return inputRequired({
      inputRequests: {
        model: inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }],
          maxTokens: 50,
        }),
      },
    });
  });
  const added = reg('added', { description: 'Registered at runtime' }, async () => text('added here'));
  if (!addedEnabled) added.disable();
  reg('add_tool', { description: 'Registers the tool `added`' }, async () => {
    addedEnabled = true;
    // Over stdio the update is the publish; over HTTP `publish` reaches the bus.
    added.update({ enabled: true });
    publish();
    return text('added');
  });

  server.registerPrompt(
    'greet',
    {
      description: 'Greets someone',
      argsSchema: z.object({ name: completable(z.string(), (value) => suggest(NAMES, value)) }),
    },
    ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}!` } }] }),
  );
  server.registerResource('readme', 'interop://readme', { mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: README }],
  }));
  server.registerResource(
    'item',
    new ResourceTemplate('interop://items/{item}', {
      list: undefined,
      complete: { item: (value) => suggest(ITEMS, value) },
    }),
    { mimeType: 'text/plain' },
    async (uri, { item }) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: `item ${item}` }] }),
  );
  return server;
}

if (mode === 'stdio') {
  serveStdio(buildServer);
  console.error('ts2 interop server on stdio');
} else {
  const handler = createMcpHandler(buildServer);
  publish = () => handler.notify.toolsChanged();
  const nodeHandler = toNodeHandler(handler);
  const validateHost = localhostHostValidation();
  const validateOrigin = localhostOriginValidation();
  const server = http.createServer((req, res) => {
    if ((req.url || '').split('?')[0] !== '/mcp') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    if (!validateHost(req, res) || !validateOrigin(req, res)) return;
    void nodeHandler(req, res);
  });
  server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
  const stop = () => void handler.close().finally(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
