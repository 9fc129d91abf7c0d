// conformanceclient is the client side of @modelcontextprotocol/conformance,
// played by zot. The suite runs it with the scenario's server URL as the
// last argument, the scenario in MCP_CONFORMANCE_SCENARIO and, for some
// scenarios, the credentials it set up in MCP_CONFORMANCE_CONTEXT. It
// only translates those into one zot invocation: an mcp.json naming the
// server (with the credentials as ${VAR}s) in a fresh ZOT_HOME, and the
// zot mcp command a user would run. Everything the suite checks is zot's
// doing. Go, not Python or Node: the suite starts it once per scenario,
// and a Python start costs eight times this one's, a Node start forty.
//
//	ZOT_BIN                  the zot binary (default: zot on PATH)
//	ZOT_CONFORMANCE_BROWSER  the BROWSER zot opens authorization pages
//	                         with (testdata/mcp/browser)
//	ZOT_CONFORMANCE_RESULTS  a directory where zot's exit status goes, as
//	                         <scenario, / as _>.exit: the suite's --suite
//	                         mode keeps only its checks
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

type obj = map[string]any

func main() {
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var given obj
	if c := os.Getenv("MCP_CONFORMANCE_CONTEXT"); c != "" {
		if err := json.Unmarshal([]byte(c), &given); err != nil {
			fail(fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %v", err))
		}
	}
	ctx := map[string]string{}
	for k, v := range given {
		if s, ok := v.(string); ok {
			ctx[k] = s
		}
	}

	oauth, env := obj{}, map[string]string{}
	// The client ID metadata document the suite's authorization server
	// takes as this client's id, given where the scenario is about it: in
	// auth/offline-access-scope the suite would try to fetch it, and this
	// machine sends nothing off the loopback.
	if scenario == "auth/basic-cimd" {
		oauth["clientMetadataUrl"] = "https://conformance-test.local/client-metadata.json"
	}
	if ctx["client_id"] != "" {
		oauth["clientId"] = ctx["client_id"]
	}
	if ctx["client_secret"] != "" {
		oauth["clientSecret"] = "${CONFORMANCE_CLIENT_SECRET}"
		env["CONFORMANCE_CLIENT_SECRET"] = ctx["client_secret"]
	}
	if ctx["private_key_pem"] != "" {
		oauth["privateKey"] = "${CONFORMANCE_PRIVATE_KEY}"
		env["CONFORMANCE_PRIVATE_KEY"] = ctx["private_key_pem"]
		if ctx["signing_algorithm"] != "" {
			oauth["signingAlg"] = ctx["signing_algorithm"]
		}
	}
	if strings.HasPrefix(scenario, "auth/client-credentials-") {
		oauth["grant"] = "client_credentials"
	}
	if ctx["idp_token_endpoint"] != "" {
		oauth["grant"] = "jwt-bearer"
		idp := obj{"tokenEndpoint": ctx["idp_token_endpoint"], "idToken": "${CONFORMANCE_ID_TOKEN}"}
		if id, ok := ctx["idp_client_id"]; ok {
			idp["clientId"] = id
		}
		oauth["idp"] = idp
		env["CONFORMANCE_ID_TOKEN"] = ctx["idp_id_token"]
	}

	// What a user would run to exercise what the scenario's server offers.
	commands := map[string][]string{
		"initialize": {"tools", "conf"},
		"tools_call": {"call", "conf", "add_numbers", `{"a": 5, "b": 3}`},
		// A user who takes whatever the server's form fills in.
		"elicitation-sep1034-client-defaults": {"call", "--elicit", "accept", "conf", "test_client_elicitation_defaults"},
		"sse-retry":                           {"call", "conf", "test_reconnection"},
	}
	args := commands[scenario]
	if args == nil && strings.HasPrefix(scenario, "auth/") {
		args = []string{"call", "conf", "test-tool"}
	}
	if args == nil {
		fmt.Fprintf(os.Stderr, "conformanceclient: no zot command for scenario %q\n", scenario)
		os.Exit(2)
	}

	home, err := os.MkdirTemp("", "zot-conformance-")
	if err != nil {
		fail(err)
	}
	config := filepath.Join(home, "mcp.json")
	b, _ := json.MarshalIndent(obj{"mcpServers": obj{"conf": obj{"type": "http", "url": url, "oauth": oauth}}}, "", "  ")
	if err := os.WriteFile(config, b, 0o600); err != nil {
		fail(err)
	}
	bin := os.Getenv("ZOT_BIN")
	if bin == "" {
		bin = "zot"
	}
	zot := exec.Command(bin, append(append([]string{"mcp"}, args...), "--no-mcp", "--mcp-config", config)...)
	zot.Env = append(os.Environ(), "ZOT_HOME="+home, "BROWSER="+os.Getenv("ZOT_CONFORMANCE_BROWSER"))
	for k, v := range env {
		zot.Env = append(zot.Env, k+"="+v)
	}
	zot.Stdin, zot.Stdout, zot.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The suite stops a client that runs past its timeout: zot goes with it.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	if err := zot.Start(); err != nil {
		fail(err)
	}
	// Owned by main; ends with the process.
	go func() {
		for s := range signals {
			zot.Process.Signal(s)
		}
	}()
	err = zot.Wait()
	status, ended := 0, ""
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		status = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status, ended = 128, " "+ws.Signal().String()
		}
	} else if err != nil {
		fail(err)
	}
	if results := os.Getenv("ZOT_CONFORMANCE_RESULTS"); results != "" {
		name := filepath.Join(results, strings.ReplaceAll(scenario, "/", "_")+".exit")
		if err := os.WriteFile(name, []byte(fmt.Sprintf("%d%s\n", status, ended)), 0o644); err != nil {
			fail(err)
		}
	}
	os.RemoveAll(home)
	os.Exit(status)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "conformanceclient:", err)
	os.Exit(1)
}
