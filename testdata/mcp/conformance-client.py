#!/usr/bin/env python3
# The client side of @modelcontextprotocol/conformance, played by zot. The
# suite runs this with the scenario's server URL as the last argument,
# the scenario in MCP_CONFORMANCE_SCENARIO and, for some scenarios, the
# credentials it set up in MCP_CONFORMANCE_CONTEXT. This file only
# translates those into one zot invocation: an mcp.json naming the server
# (with the credentials as ${VAR}s) in a fresh ZOT_HOME, and the zot mcp
# command a user would run. Everything the suite checks is zot's doing.
# Python, not Node: the suite starts it once per scenario, and a Node
# start costs five times a Python one.
#
#   ZOT_BIN                  the zot binary (default: zot on PATH)
#   ZOT_CONFORMANCE_RESULTS  a directory where zot's exit status goes, as
#                            <scenario, / as _>.exit: the suite's --suite
#                            mode keeps only its checks
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

url = sys.argv[-1]
scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
ctx = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
here = os.path.dirname(os.path.abspath(__file__))

# The client ID metadata document the suite's authorization server takes
# as this client's id, given where the scenario is about it: in
# auth/offline-access-scope the suite would try to fetch it, and this
# machine sends nothing off the loopback.
oauth = {}
if scenario == "auth/basic-cimd":
    oauth["clientMetadataUrl"] = "https://conformance-test.local/client-metadata.json"
env = {}
if ctx.get("client_id"):
    oauth["clientId"] = ctx["client_id"]
if ctx.get("client_secret"):
    oauth["clientSecret"] = "${CONFORMANCE_CLIENT_SECRET}"
    env["CONFORMANCE_CLIENT_SECRET"] = ctx["client_secret"]
if ctx.get("private_key_pem"):
    oauth["privateKey"] = "${CONFORMANCE_PRIVATE_KEY}"
    env["CONFORMANCE_PRIVATE_KEY"] = ctx["private_key_pem"]
    if ctx.get("signing_algorithm"):
        oauth["signingAlg"] = ctx["signing_algorithm"]
if scenario.startswith("auth/client-credentials-"):
    oauth["grant"] = "client_credentials"
if ctx.get("idp_token_endpoint"):
    oauth["grant"] = "jwt-bearer"
    oauth["idp"] = {"tokenEndpoint": ctx["idp_token_endpoint"], "clientId": ctx.get("idp_client_id"),
                    "idToken": "${CONFORMANCE_ID_TOKEN}"}
    env["CONFORMANCE_ID_TOKEN"] = ctx.get("idp_id_token")

# What a user would run to exercise what the scenario's server offers.
commands = {
    "initialize": ["tools", "conf"],
    "tools_call": ["call", "conf", "add_numbers", '{"a": 5, "b": 3}'],
    # A user who takes whatever the server's form fills in.
    "elicitation-sep1034-client-defaults": ["call", "--elicit", "accept", "conf", "test_client_elicitation_defaults"],
    "sse-retry": ["call", "conf", "test_reconnection"],
}
args = commands.get(scenario) or (["call", "conf", "test-tool"] if scenario.startswith("auth/") else None)
if not args:
    print(f"conformance-client: no zot command for scenario {json.dumps(scenario)}", file=sys.stderr)
    sys.exit(2)

home = tempfile.mkdtemp(prefix="zot-conformance-")
config = os.path.join(home, "mcp.json")
with open(config, "w") as f:
    json.dump({"mcpServers": {"conf": {"type": "http", "url": url, "oauth": oauth}}}, f, indent=2)
zot = subprocess.Popen(
    [os.environ.get("ZOT_BIN") or "zot", "mcp", *args, "--no-mcp", "--mcp-config", config],
    env={**os.environ, **env, "ZOT_HOME": home, "BROWSER": os.path.join(here, "follow-redirects.py")},
)
# The suite stops a client that runs past its timeout: zot goes with it.
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda signum, frame: zot.send_signal(signum))
returncode = zot.wait()
shutil.rmtree(home, ignore_errors=True)
status = returncode if returncode >= 0 else 128
results = os.environ.get("ZOT_CONFORMANCE_RESULTS")
if results:
    killed = " " + signal.Signals(-returncode).name if returncode < 0 else ""
    with open(os.path.join(results, scenario.replace("/", "_") + ".exit"), "w") as f:
        f.write(f"{status}{killed}\n")
sys.exit(status)
