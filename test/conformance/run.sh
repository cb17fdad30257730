#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios that apply to profile-edge (a stateless server that
# declares only the tools capability and answers every POST with JSON) against a fresh demo server, on both the
# global and a per-profile endpoint, then MCP Inspector's CLI with a bad key. Which scenarios apply, and why the
# others do not: docs/decisions.md (MCP).
#
#   npm run conformance
#
# It fetches the suite and the Inspector (and Node 22, which both need) from the npm registry with npx on first use, so it is a
# development check, not part of `npm test`. Exit status: 0 when every scenario passes.
set -euo pipefail
cd "$(dirname "$0")/../.."

suite="@modelcontextprotocol/conformance@0.1.16"
scenarios=(server-initialize ping tools-list dns-rebinding-protection server-sse-multiple-streams)
endpoints=(/mcp /mara-lindqvist/mcp)

work=$(mktemp -d)
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
DATABASE_PATH="$work/conformance.db" PORT="$port" SYNC_SCHEDULE=false LOG_LEVEL=warn \
  node bin/profile-edge.mjs serve > "$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
  sleep 0.1
done

failed=0
for endpoint in "${endpoints[@]}"; do
  for scenario in "${scenarios[@]}"; do
    # The dns-rebinding scenario needs a localhost URL: it sends Host and Origin of evil.example.com, then its own.
    if out=$(timeout 120 npx --yes -p node@22 -p "$suite" -- conformance server --url "http://localhost:$port$endpoint" --scenario "$scenario" 2>&1); then
      echo "PASS $endpoint $scenario  $(grep -E '^Passed:' <<< "$out" || true)"
    else
      echo "FAIL $endpoint $scenario"
      sed 's/^/    /' <<< "$out"
      failed=1
    fi
  done
done

# MCP Inspector's CLI, as a host would use it, with a bad key: the tools list, and a query that names the problem.
inspector=(npx --yes -p node@22 -p @modelcontextprotocol/inspector@2.12.0 -- mcp-inspector --cli "http://localhost:$port/mcp" --transport http --header "service-api-key: not-a-key")
if out=$(timeout 120 "${inspector[@]}" --method tools/list 2>&1) && grep -q '"profile_query"' <<< "$out"; then
  echo "PASS inspector tools/list with a bad key"
else
  echo "FAIL inspector tools/list with a bad key"; sed 's/^/    /' <<< "$out"; failed=1
fi
out=$(timeout 120 "${inspector[@]}" --method tools/call --tool-name profile_query --tool-arg "question=How warm should a starter be?" --tool-arg paymentMode=credits 2>&1 || true)
if grep -q '"error": "invalid_api_key"' <<< "$out" && grep -q 'is malformed' <<< "$out"; then
  echo "PASS inspector tools/call with a bad key reads invalid_api_key, malformed"
else
  echo "FAIL inspector tools/call with a bad key"; sed 's/^/    /' <<< "$out"; failed=1
fi
exit "$failed"
