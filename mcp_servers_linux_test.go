package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// README promises that the tests against real MCP servers, when the
// servers are not installed, are "skipped, loudly": go test ./... keeps a
// passing package's output to itself, so the notice must reach the
// terminal go test runs on. Here the test binary runs one such test on a
// pseudo-terminal of its own, its output captured as go test captures it.
func TestMissingMCPServersAreSkippedLoudly(t *testing.T) {
	t.Parallel()
	master, slave := openPty(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMCPRealFilesystemServer$", "-test.count=1")
	for _, kv := range os.Environ() {
		// The child's skip is this test's subject, not a skip of the
		// suite: it stays out of the list .ci/run prints.
		if !strings.HasPrefix(kv, "ZOT_MCP_REQUIRE_SERVERS=") && !strings.HasPrefix(kv, "ZOT_MCP_SERVERS=") && !strings.HasPrefix(kv, "ZOT_TEST_SKIPS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "ZOT_TEST_CHILD=1", "ZOT_MCP_SERVERS="+t.TempDir())
	var captured bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &captured, &captured
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // the child's copy is its controlling terminal; EOF comes when it exits
	terminal, _ := io.ReadAll(master)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the child: %v\n%s", err, captured.String())
	}
	if s := string(terminal); !strings.Contains(s, "!!! SKIPPING the MCP tests against real servers: mcp-server-filesystem is not installed in") &&
		!strings.Contains(s, "!!! SKIPPING the MCP tests against real servers: node is not installed") {
		t.Errorf("the terminal showed no notice:\n%q\ncaptured:\n%s", s, captured.String())
	}
}
