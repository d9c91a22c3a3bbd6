#!/usr/bin/env node
// A tiny MCP server over stdio in plain Node.js (no dependencies): newline-delimited
// JSON-RPC 2.0 on stdin/stdout, as the MCP stdio transport specifies. It wraps a notes
// API and takes its configuration from the environment, as MCP servers do:
//
//   NOTES_API_URL      the API's base URL (http or https)
//   NOTES_API_TOKEN    a bearer token (Authorization: Bearer ...)
//   NOTES_API_KEY      an API key, sent as the api_key query parameter
//   NOTES_API_TIMEOUT  the client timeout in seconds (default 10)
//
// HTTPS trusts the system CAs plus NODE_EXTRA_CA_CERTS (Node reads it at startup).
// Its errors are careful (one sentence per kind of failure, from the HTTP status alone)
// except for one deliberate mistake, marked MISTAKE below: a request that got no answer
// (DNS failure, refused, TLS, timeout, reset) is reported with the URL it requested,
// api_key query parameter included, "to make connection problems easy to debug".
'use strict';

const http = require('http');
const https = require('https');
const readline = require('readline');

const PROTOCOL_VERSION = '2025-06-18';

const TOOLS = [
  {
    name: 'get_note',
    description: 'Read one note by its id.',
    inputSchema: {
      type: 'object',
      properties: { note_id: { type: 'string', pattern: '^n_[a-z0-9]+$' } },
      required: ['note_id'],
      additionalProperties: false,
    },
  },
  {
    name: 'search_notes',
    description: 'Search the notes.',
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1 },
        limit: { type: 'integer', minimum: 1, maximum: 50 },
      },
      required: ['query'],
      additionalProperties: false,
    },
  },
];

const MESSAGES = {
  401: 'The notes API rejected the server credential (HTTP 401).',
  403: 'The notes API refused this action (HTTP 403).',
  429: 'The notes API is limiting requests (HTTP 429). Retry after a delay.',
};

function config() {
  const url = process.env.NOTES_API_URL;
  if (!url) {
    process.stderr.write('mcp_node_server: NOTES_API_URL is not set\n');
    process.exit(2);
  }
  const timeout = Number(process.env.NOTES_API_TIMEOUT || '10');
  return {
    url: url.replace(/\/+$/, ''),
    token: (process.env.NOTES_API_TOKEN || '').trim(),
    apiKey: (process.env.NOTES_API_KEY || '').trim(),
    timeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout * 1000 : 10000,
  };
}

const CONFIG = config();

function send(message) {
  process.stdout.write(JSON.stringify(message) + '\n');
}

function log(level, data) {
  // the operator's log: stderr (never the credential)
  process.stderr.write(`mcp_node_server ${level}: ${data}\n`);
}

function textResult(text, isError) {
  return { content: [{ type: 'text', text }], isError };
}

function request(path, query) {
  const params = new URLSearchParams(query);
  if (CONFIG.apiKey) params.set('api_key', CONFIG.apiKey);
  const url = `${CONFIG.url}${path}?${params.toString()}`;
  const headers = { Accept: 'application/json' };
  if (CONFIG.token) headers.Authorization = `Bearer ${CONFIG.token}`;
  return new Promise((resolve) => {
    let req;
    let settled = false;
    const done = (result) => {
      if (!settled) {
        settled = true;
        resolve(result);
      }
    };
    const unanswered = (err) => {
      // MISTAKE: the URL requested, api_key included, in the text the model reads
      done(textResult(`request to ${url} failed: ${err.code || err.message}`, true));
    };
    try {
      const client = url.startsWith('https:') ? https : http;
      req = client.request(url, { method: 'GET', headers, timeout: CONFIG.timeoutMs }, (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('error', () => done(textResult('The notes API answer was cut off.', true)));
        res.on('aborted', () => done(textResult('The notes API answer was cut off.', true)));
        res.on('end', () => {
          const status = res.statusCode || 0;
          if (status < 200 || status >= 300) {
            log('warning', `notes API answered HTTP ${status}`);
            done(textResult(MESSAGES[status] || `The notes API failed (HTTP ${status}).`, true));
            return;
          }
          try {
            const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            done({ content: [{ type: 'text', text: JSON.stringify(body) }], isError: false });
          } catch (e) {
            done(textResult('The notes API answer could not be read.', true));
          }
        });
      });
    } catch (err) {
      // an invalid header value (a credential with a newline) is refused before sending
      log('error', `request not sent: ${err.code || 'error'}`);
      done(textResult('The server could not send a valid request (check its configuration).', true));
      return;
    }
    req.on('timeout', () => {
      req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' }));
    });
    req.on('error', unanswered);
    req.end();
  });
}

async function callTool(name, args) {
  args = args || {};
  if (name === 'get_note') {
    if (typeof args.note_id !== 'string' || !/^n_[a-z0-9]+$/.test(args.note_id)) {
      return textResult('note_id must look like n_123.', true);
    }
    return request(`/v1/notes/${encodeURIComponent(args.note_id)}`, {});
  }
  if (name === 'search_notes') {
    if (typeof args.query !== 'string' || !args.query) {
      return textResult('query must be a non-empty string.', true);
    }
    const query = { q: args.query };
    if (Number.isInteger(args.limit)) query.limit = String(args.limit);
    return request('/v1/notes', query);
  }
  return null;
}

async function handle(message) {
  const { id, method, params } = message;
  const isRequest = id !== undefined && id !== null;
  if (!isRequest) return; // notifications (initialized, cancelled): nothing to answer
  if (method === 'initialize') {
    send({
      jsonrpc: '2.0',
      id,
      result: {
        protocolVersion: (params && params.protocolVersion) || PROTOCOL_VERSION,
        capabilities: { tools: {}, logging: {} },
        serverInfo: { name: 'notes (node)', version: '1.0.0' },
      },
    });
  } else if (method === 'ping') {
    send({ jsonrpc: '2.0', id, result: {} });
  } else if (method === 'tools/list') {
    send({ jsonrpc: '2.0', id, result: { tools: TOOLS } });
  } else if (method === 'tools/call') {
    const result = await callTool(params && params.name, params && params.arguments);
    if (result === null) {
      send({ jsonrpc: '2.0', id, error: { code: -32602, message: 'Unknown tool' } });
    } else {
      send({ jsonrpc: '2.0', id, result });
    }
  } else if (method === 'logging/setLevel') {
    send({ jsonrpc: '2.0', id, result: {} });
  } else {
    send({ jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } });
  }
}

let pending = 0;
let closed = false;
const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (!line.trim()) return;
  let message;
  try {
    message = JSON.parse(line);
  } catch (e) {
    send({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    return;
  }
  pending += 1;
  handle(message)
    .catch(() => {
      if (message.id !== undefined) {
        send({ jsonrpc: '2.0', id: message.id, error: { code: -32603, message: 'Internal error' } });
      }
    })
    .finally(() => {
      pending -= 1;
      if (closed && pending === 0) process.exit(0);
    });
});
// the client closed stdin: answer what is in flight, then exit
lines.on('close', () => {
  closed = true;
  if (pending === 0) process.exit(0);
});
