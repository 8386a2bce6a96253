// The TypeScript MCP SDK's 1.x client (protocol 2025-11-25, in sessions)
// calls tools past spend limits, for TestMCPRefusalsReachTypeScriptClients
// (mcp_refusal_typescript_e2e_test.go). It prints one JSON object saying
// what it saw; a call the SDK threw on is {"thrown": {"code", "message"}}.
// Keys come from the environment, never the command line.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const env = process.env;
const calls = JSON.parse(env.TOOLGATE_CALLS);
const out = {};

for (const [who, key] of Object.entries({ spender: env.TOOLGATE_SPENDER_KEY, member: env.TOOLGATE_MEMBER_KEY })) {
  const client = new Client({ name: 'ts-refusals', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(env.TOOLGATE_MCP_URL), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } }
  });
  await client.connect(transport);
  // Listed first: the client then checks each call's structured content
  // against the tool's output schema.
  const { tools } = await client.listTools();
  const digests = Object.fromEntries(tools.map((t) => [t.name, t._meta['toolgate/manifestDigest']]));
  const results = [];
  for (const { name, arguments: args } of calls[who]) {
    try {
      results.push(await client.callTool({ name, arguments: args, _meta: { 'toolgate/approval': digests[name] } }));
    } catch (e) {
      results.push({ thrown: { code: e.code, message: e.message } });
    }
  }
  out[who] = {
    protocolVersion: transport.protocolVersion,
    outputSchemas: Object.fromEntries(tools.map((t) => [t.name, t.outputSchema !== undefined])),
    results
  };
  await client.close();
}

console.log(JSON.stringify(out));
