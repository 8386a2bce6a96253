// Package httpx is what toolgate's HTTP handlers share, so that the JSON
// API (httpapi), the approval pages (approvalpage) and the tool
// documentation (tooldocs) answer alike: how an error or a JSON body is
// written and which status each code gets, where each route is and the
// links an entry carries, the address a request reached the gateway at,
// and a router that answers wrong methods and unknown paths with the API's
// JSON error. The MCP server (mcpserver) takes its links to the approval
// pages from here too, so that it needs nothing of the JSON API's.
package httpx
