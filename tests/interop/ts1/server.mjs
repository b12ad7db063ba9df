#!/usr/bin/env node
// The interop server on the official TypeScript SDK 1.x
// (`@modelcontextprotocol/sdk` 1.32.2, pinned in package.json): McpServer
// over StdioServerTransport or StreamableHTTPServerTransport (2025 eras).
//
//   node server.mjs stdio | http-sse | http-json | stateless
//
// HTTP binds 127.0.0.1 on a port the kernel picks, endpoint /mcp, and
// prints `listening PORT` first on stdout. http-sse / http-json are
// stateful (a session id per client; answers as SSE streams or as JSON
// bodies, enableJsonResponse); stateless has no session id
// (sessionIdGenerator undefined) and a fresh server per request.
// Diagnostics go to stderr. `slow` appends `started <marker>`, then
// `cancelled <marker>` or `finished <marker>`, to the file named by
// INTEROP_RECORD.
import http from 'node:http';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { CreateMessageResultSchema, ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const MODES = ['stdio', 'http-sse', 'http-json', 'stateless'];
const mode = process.argv[2] || 'stdio';
if (!MODES.includes(mode)) {
  console.error(`usage: server.mjs ${MODES.join('|')}`);
  process.exit(2);
}

const PNG_B64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const NAMES = ['alice', 'albert', 'bob'];
const ITEMS = ['apple', 'apricot', 'banana'];
const README = 'rho interop server: every SDK exposes the same surface.';
const suggest = (values, prefix) => values.filter((v) => v.startsWith(prefix || ''));

function record(line) {
  if (process.env.INTEROP_RECORD) fs.appendFileSync(process.env.INTEROP_RECORD, `${line}\n`);
  console.error(`record: ${line}`);
}

const text = (s, isError) => ({ content: [{ type: 'text', text: s }], ...(isError ? { isError: true } : {}) });
const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    });
  });

// Shared by every server instance (stateless builds one per request).
let addedRegistered = false;

function buildServer() {
  const server = new McpServer(
    { name: 'rho-interop-ts1', version: '1.32.2' },
    { capabilities: { logging: {} } },
  );
  // Every tool takes (args, extra): one without an inputSchema would get extra alone.
  const reg = (name, config, handler) => server.registerTool(name, { inputSchema: {}, ...config }, handler);

  reg('echo', { description: 'Echoes the message', inputSchema: { message: z.string() } }, async ({ message }) =>
    text(`Echo: ${message}`),
  );
  reg(
    'structured',
    {
      description: 'Structured weather',
      inputSchema: { city: z.string().optional() },
      outputSchema: { city: z.string(), celsius: z.number() },
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
  reg('progress', { description: 'Three progress notifications' }, async (_args, extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= 3; i++) {
      if (token !== undefined) {
        await extra.sendNotification({
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
    { description: 'Runs long; records whether it was cancelled', inputSchema: { marker: z.string().optional(), seconds: z.number().optional() } },
    async ({ marker = 'slow', seconds = 30 }, extra) => {
      record(`started ${marker}`);
      try {
        await sleep(seconds * 1000, extra.signal);
      } catch {
        record(`cancelled ${marker}`);
        throw new Error('cancelled');
      }
      record(`finished ${marker}`);
      return text('slow finished');
    },
  );
  reg('log', { description: 'Logs at four levels' }, async (_args, extra) => {
    for (const level of ['debug', 'info', 'warning', 'error']) {
      await extra.sendNotification({
        method: 'notifications/message',
        params: { level, logger: 'interop', data: `interop ${level} message` },
      });
    }
    return text('logged');
  });
  reg('ask', { description: 'Asks a form' }, async (_args, extra) => {
    const result = await extra.sendRequest(
      {
        method: 'elicitation/create',
        params: {
          message: 'Who are you?',
          requestedSchema: {
            type: 'object',
            properties: {
              name: { type: 'string', description: 'Your name' },
              agree: { type: 'boolean', description: 'Do you agree?' },
            },
            required: ['name', 'agree'],
          },
        },
      },
      ElicitResultSchema,
    );
    if (result.action === 'accept') {
      return text(`answered name=${result.content?.name} agree=${result.content?.agree}`);
    }
    return text(`action=${result.action}`);
  });
  reg('sample', { description: "Asks the client's model" }, async (_args, extra) => {
    const result = await extra.sendRequest(
      {
        method: 'sampling/createMessage',
        params: { messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }], maxTokens: 50 },
      },
      CreateMessageResultSchema,
    );
    const content = Array.isArray(result.content) ? result.content[0] : result.content;
    return text(`model said: ${content?.type === 'text' ? content.text : JSON.stringify(content)}`);
  });
  const registerAdded = () =>
    reg('added', { description: 'Registered at runtime' }, async () => text('added here'));
  if (addedRegistered) registerAdded();
  reg('add_tool', { description: 'Registers the tool `added`' }, async () => {
    if (!addedRegistered) {
      addedRegistered = true;
      // Registering on a connected server sends notifications/tools/list_changed.
      registerAdded();
    }
    return text('added');
  });

  server.registerPrompt(
    'greet',
    {
      description: 'Greets someone',
      argsSchema: { name: completable(z.string(), (value) => suggest(NAMES, value)) },
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

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw ? JSON.parse(raw) : undefined;
}

if (mode === 'stdio') {
  await buildServer().connect(new StdioServerTransport());
  console.error('ts1 interop server on stdio');
} else {
  const sessions = new Map();
  const httpServer = http.createServer(async (req, res) => {
    try {
      if ((req.url || '').split('?')[0] !== '/mcp') {
        res.writeHead(404).end('not found');
        return;
      }
      const body = req.method === 'POST' ? await readBody(req) : undefined;
      if (mode === 'stateless') {
        const server = buildServer();
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: false });
        res.on('close', () => {
          transport.close();
          server.close();
        });
        await server.connect(transport);
        await transport.handleRequest(req, res, body);
        return;
      }
      const id = req.headers['mcp-session-id'];
      let transport = id ? sessions.get(id) : undefined;
      if (!transport) {
        if (id || req.method !== 'POST') {
          res.writeHead(404, { 'Content-Type': 'application/json' }).end(
            JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }),
          );
          return;
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: mode === 'http-json',
          onsessioninitialized: (sid) => sessions.set(sid, transport),
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await buildServer().connect(transport);
      }
      await transport.handleRequest(req, res, body);
    } catch (error) {
      console.error('request failed:', error);
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
  httpServer.listen(0, '127.0.0.1', () => console.log(`listening ${httpServer.address().port}`));
  const stop = () => process.exit(0);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
