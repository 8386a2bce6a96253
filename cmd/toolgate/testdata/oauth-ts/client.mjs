// An MCP client built on the TypeScript SDK, given only the gateway's /mcp
// URL and an OAuth client's credentials: it must find the identity
// provider from the gateway's 401 challenge (resource metadata, RFC 9728),
// get a token there by the client credentials grant, and call a tool.
// It prints one JSON line: every HTTP request it made, the tools it was
// shown, and the call's result.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

const seen = [];
const fetchAndRecord = async (url, init) => {
  const res = await fetch(url, init);
  seen.push({ method: init?.method ?? 'GET', url: String(url), status: res.status,
    challenge: res.headers.get('www-authenticate') ?? '' });
  return res;
};

const provider = new ClientCredentialsProvider({
  clientId: process.env.CLIENT_ID,
  clientSecret: process.env.CLIENT_SECRET,
  scope: process.env.SCOPE,
});
const transport = new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
  authProvider: provider,
  fetch: fetchAndRecord,
});
const client = new Client({ name: 'toolgate-oauth-interop', version: '1.0.0' });
await client.connect(transport);
const { tools } = await client.listTools();
const tool = tools.find((t) => t.name === process.env.TOOL);
const result = await client.callTool({
  name: process.env.TOOL,
  arguments: JSON.parse(process.env.INPUT),
  _meta: { 'toolgate/approval': tool._meta['toolgate/manifestDigest'] },
});
await client.close();
console.log(JSON.stringify({ seen, tools: tools.map((t) => t.name), result }));
