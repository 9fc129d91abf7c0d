package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The MCP conformance suite (@modelcontextprotocol/conformance, from npm)
// plays each of its client scenarios' servers — authorization servers
// among them — against zot, through testdata/mcp/conformanceclient,
// which only turns the suite's arguments into a `zot mcp` command.
// testdata/mcp/install-conformance.sh installs the suite and the Node 22
// it needs into $ZOT_MCP_CONFORMANCE, else os.UserCacheDir()/
// zot-mcp-conformance. Without them the test skips; with
// ZOT_MCP_REQUIRE_CONFORMANCE set (CI, after installing) it fails.
//
// Here every client scenario runs at once in one run of the suite (its
// --suite mode: one Node process); bench/mcp-conformance.sh runs each on
// its own and times it.

// conformanceKnownFailures are the client scenarios zot fails today, and
// why. A scenario that passes must leave the list.
var conformanceKnownFailures = map[string]string{}

// conformanceRefusals are the scenarios where the right answer is zot's
// refusal: the suite allows the client to fail there, zot must.
var conformanceRefusals = map[string]string{
	"auth/resource-mismatch": "the resource metadata names another server",
	"auth/scope-retry-limit": "the server never accepts the scope it asks for",
}

var conformanceSkipNotice sync.Once

// conformanceSuite returns the suite's directory, or skips the test
// loudly.
func conformanceSuite(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ZOT_MCP_CONFORMANCE")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir = filepath.Join(cache, "zot-mcp-conformance")
	}
	why := ""
	bin := filepath.Join(dir, "node_modules", ".bin")
	if out, err := exec.Command(filepath.Join(bin, "node"), "--version").Output(); err != nil {
		why = fmt.Sprintf("Node 22 is not installed in %s", dir)
	} else if major, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(strings.TrimSpace(string(out)), ".")[0], "v")); major < 22 {
		why = fmt.Sprintf("%s/node is %s; the suite needs Node 22 or newer", bin, strings.TrimSpace(string(out)))
	} else if _, err := os.Stat(filepath.Join(bin, "conformance")); err != nil {
		why = fmt.Sprintf("@modelcontextprotocol/conformance is not installed in %s", dir)
	}
	skipUnlessInstalled(t, &conformanceSkipNotice, why, "ZOT_MCP_REQUIRE_CONFORMANCE", "the MCP conformance suite", "install-conformance.sh", "ZOT_MCP_CONFORMANCE")
	return dir
}

// conformanceCheck is one check of a scenario, as the suite writes it.
type conformanceCheck struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
	Details      struct {
		TooEarly bool `json:"tooEarly"`
	} `json:"details"`
}

func TestMCPConformanceSuite(t *testing.T) {
	t.Parallel()
	dir := conformanceSuite(t)
	bin := filepath.Join(dir, "node_modules", ".bin")
	adapter, browser := mcpTestdataBin(t, "conformanceclient"), mcpTestdataBin(t, "browser")
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	list := exec.Command(filepath.Join(bin, "conformance"), "list", "--client")
	list.Env = env
	out, err := list.Output()
	if err != nil {
		t.Fatalf("conformance list --client: %v", err)
	}
	var scenarios []string
	for _, line := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(line, "  - "); ok {
			scenarios = append(scenarios, strings.Fields(name)[0])
		}
	}
	if len(scenarios) < 26 {
		t.Fatalf("the suite lists %d client scenarios, want at least the 26 of 0.1.16:\n%s", len(scenarios), out)
	}

	results := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// "exec": the suite stops a client past its timeout through the shell
	// it starts it with; so the adapter, and zot with it, get the signal.
	// The timeout is for a machine under heavy load: unloaded, the whole
	// suite takes seconds.
	run := exec.CommandContext(ctx, filepath.Join(bin, "conformance"), "client", "--command", "exec "+adapter,
		"--suite", "all", "--timeout", "120000", "-o", filepath.Join(results, "out"))
	run.Env = append(env, "ZOT_BIN="+zotBin(t), "ZOT_CONFORMANCE_BROWSER="+browser, "ZOT_CONFORMANCE_RESULTS="+results, "TMPDIR="+t.TempDir())
	if out, err := run.CombinedOutput(); ctx.Err() != nil {
		t.Fatalf("the suite did not finish: %v\n%s", err, out)
	}

	passed := 0
	for _, s := range scenarios {
		checks, exit, why := conformanceResult(results, s)
		if why == "" {
			why = conformanceVerdict(s, checks, exit)
		}
		if why == "" {
			passed++
		}
		t.Run(s, func(t *testing.T) {
			known, isKnown := conformanceKnownFailures[s]
			switch {
			case isKnown && why == "":
				t.Errorf("passes now: take it off conformanceKnownFailures")
			case isKnown:
				t.Skipf("KNOWN FAILURE (%s): %s", known, why)
			case why != "":
				stderr, _ := filepath.Glob(filepath.Join(results, "out", s+"-*", "stderr.txt"))
				var said []byte
				if len(stderr) == 1 {
					said, _ = os.ReadFile(stderr[0])
				}
				t.Errorf("%s\nzot's stderr:\n%s", why, said)
			}
		})
	}
	t.Logf("%d of %d client scenarios pass", passed, len(scenarios))
}

// conformanceResult reads what the suite and the adapter left of one
// scenario: its checks and zot's exit status; why is set when either is
// missing.
func conformanceResult(results, scenario string) (checks []conformanceCheck, exit int, why string) {
	files, _ := filepath.Glob(filepath.Join(results, "out", scenario+"-*", "checks.json"))
	if len(files) != 1 {
		return nil, 0, fmt.Sprintf("the suite left %d checks.json for it", len(files))
	}
	b, err := os.ReadFile(files[0])
	if err == nil {
		err = json.Unmarshal(b, &checks)
	}
	if err != nil {
		return nil, 0, fmt.Sprintf("checks.json: %v", err)
	}
	e, err := os.ReadFile(filepath.Join(results, strings.ReplaceAll(scenario, "/", "_")+".exit"))
	if err != nil {
		return checks, 0, "zot's exit status was not recorded: the adapter did not run it to its end"
	}
	if exit, err = strconv.Atoi(strings.Fields(string(e))[0]); err != nil {
		return checks, 0, fmt.Sprintf("exit status %q", e)
	}
	return checks, exit, ""
}

// conformanceVerdict is the suite's rule — no check failed or warned —
// and zot's exit status: 0, or not 0 where zot must refuse. It returns
// what went wrong, or "". One check is a clock's: sse-retry's
// reconnection must come within 200 ms after the server's retry:, which a
// loaded machine (the suite's Node as much as zot) cannot promise; here
// only a reconnection too early fails it (bench/mcp-conformance.sh keeps
// the suite's rule whole).
func conformanceVerdict(scenario string, checks []conformanceCheck, exit int) string {
	var bad []string
	for _, c := range checks {
		if c.ID == "client-sse-retry-timing" && !c.Details.TooEarly {
			continue
		}
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			bad = append(bad, fmt.Sprintf("%s %s: %s %s", c.Status, c.ID, c.Description, c.ErrorMessage))
		}
	}
	if refusal, ok := conformanceRefusals[scenario]; ok && exit == 0 {
		bad = append(bad, "zot exited 0 where it must refuse: "+refusal)
	} else if !ok && exit != 0 {
		bad = append(bad, fmt.Sprintf("zot exited %d", exit))
	}
	if len(checks) == 0 {
		bad = append(bad, "no checks")
	}
	return strings.Join(bad, "\n")
}
