// The TypeScript MCP SDK's client (protocol 2025-11-25, in sessions) against
// toolgate's /mcp, for TestMCPTypeScriptClient (mcp_typescript_e2e_test.go). It prints one JSON object
// saying what it saw. Keys come from the environment, never the command line.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  ElicitationCompleteNotificationSchema,
  ErrorCode,
  McpError
} from '@modelcontextprotocol/sdk/types.js';

const env = process.env;
const endpoint = new URL(env.TOOLGATE_MCP_URL);
const quakes = { starttime: '2024-09-25', endtime: '2024-09-30' };
const out = {};

function session(key, capabilities) {
  const client = new Client({ name: 'ts-interop', version: '1.0.0' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(endpoint, {
    requestInit: { headers: { Authorization: `Bearer ${key}` } }
  });
  return { client, transport };
}

// Caller mode: the person at the client approves the form the server sends
// within the call.
{
  const { client, transport } = session(env.TOOLGATE_CALLER_KEY, { elicitation: { form: {} } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return { action: 'accept', content: { approve: true, remember: 'once' } };
  });
  await client.connect(transport);
  const tools = await client.listTools();
  const result = await client.callTool({ name: 'earthquake-search', arguments: quakes });
  out.caller = {
    protocolVersion: transport.protocolVersion,
    sessionId: transport.sessionId,
    tools: tools.tools.map((t) => t.name),
    asked,
    result
  };
  await client.close();
}

// Approver mode: the call sends the client to the approval page; an
// approver approves there (the HTTP API stands for the page); the session
// is told the request is decided, and the call made again runs.
{
  const { client, transport } = session(env.TOOLGATE_AGENT_KEY, { elicitation: { form: {}, url: {} } });
  const completed = [];
  let told;
  const decided = new Promise((resolve) => (told = resolve));
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
    completed.push(n.params.elicitationId);
    told();
  });
  await client.connect(transport);
  let elicitation;
  try {
    await client.callTool({ name: 'earthquake-search', arguments: quakes });
  } catch (e) {
    if (!(e instanceof McpError) || e.code !== ErrorCode.UrlElicitationRequired) throw e;
    elicitation = e.data.elicitations[0];
  }
  if (!elicitation) throw new Error('the call was not sent to an approval page');
  const approved = await fetch(new URL(`/v1/approval-requests/${elicitation.elicitationId}/approve`, endpoint), {
    method: 'POST',
    headers: { Authorization: `Bearer ${env.TOOLGATE_APPROVER_KEY}` }
  });
  await Promise.race([
    decided,
    new Promise((_, reject) =>
      setTimeout(() => reject(new Error('no notifications/elicitation/complete within 15 s')), 15000)
    )
  ]);
  const result = await client.callTool({ name: 'earthquake-search', arguments: quakes });
  out.approver = { elicitation, approveStatus: approved.status, completed, result };
  await client.close();
}

console.log(JSON.stringify(out));
