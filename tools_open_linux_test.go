//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// swapperArg starts the test binary as the attacker of the file tools: a
// process that exchanges two names in a loop (renameat2 RENAME_EXCHANGE)
// until it is killed, printing "swapping" after its first exchange.
const swapperArg = "__zot-test-swapper"

func init() {
	if len(os.Args) == 4 && os.Args[1] == swapperArg {
		os.Exit(swapForever(os.Args[2], os.Args[3]))
	}
}

// renameat2 numbers and RENAME_EXCHANGE.
var sysRenameat2 = map[string]uintptr{"amd64": 316, "arm64": 276, "riscv64": 276}

const renameExchange = 2

func swapForever(a, b string) int {
	nr, ok := sysRenameat2[runtime.GOARCH]
	if !ok {
		fmt.Println("no renameat2 number for", runtime.GOARCH)
		return 2
	}
	pa, _ := syscall.BytePtrFromString(a)
	pb, _ := syscall.BytePtrFromString(b)
	for n := 0; ; n++ {
		const atFdcwd = ^uintptr(99) // -100
		if _, _, errno := syscall.Syscall6(nr, atFdcwd, uintptr(unsafe.Pointer(pa)), atFdcwd, uintptr(unsafe.Pointer(pb)), renameExchange, 0); errno != 0 {
			fmt.Println("renameat2:", errno)
			return 1
		}
		if n == 0 {
			fmt.Println("swapping")
		}
	}
}

// The attacker's test of the file tools: while a separate process swaps
// the project directory d with a symlink to $ZOT_HOME, the real tools —
// read, write, edit and a prompt's @path — use d a fixed number of times.
// The secret must never come back, and nothing may be created in
// $ZOT_HOME. The attacker runs inside the sandbox on both of its paths
// (the command a model left behind), and outside it where the sandbox is
// off and the jail keeps the file tools in the project.
func TestFileToolsRaceASwappingSymlinkToZotHome(t *testing.T) {
	t.Parallel()
	if _, ok := sysRenameat2[runtime.GOARCH]; !ok {
		t.Skip("no renameat2 number for " + runtime.GOARCH)
	}
	cases := []struct{ name, force string }{{"jail, sandbox off", "off"}}
	for _, p := range sandboxPaths {
		cases = append(cases, struct{ name, force string }{p.name, p.force})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := newSandboxLayout(t)
			d := filepath.Join(l.work, "d")
			os.Mkdir(d, 0o755)
			os.WriteFile(filepath.Join(d, "auth.json"), []byte("decoy\n"), 0o644)
			if err := os.Symlink(l.home, filepath.Join(l.work, "swap")); err != nil {
				t.Fatal(err)
			}
			env := NewToolEnv(l.work, c.force == "off")
			start := startProc
			if c.force != "off" {
				env.Sandbox = l.sandbox(t, sandboxWorkspace, c.force)
				start = env.Sandbox.Start
			}
			t.Cleanup(func() { env.Close() })
			exe, _ := os.Executable()
			p, err := start(procSpec{argv: []string{exe, swapperArg, d, filepath.Join(l.work, "swap")}, dir: l.work, env: envNoSecrets, stdout: streamPipe, stderr: streamStdout})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Stop(0); p.stdout.Close(); p.Reap() })
			if line, _ := bufio.NewReader(p.stdout).ReadString('\n'); line != "swapping\n" {
				t.Fatalf("the swapper did not start: %q", line)
			}

			const tries = 300
			escapes := map[string]int{}
			seen := map[string]int{} // how each try went, for the log
			note := func(tool string, text string, isErr bool) {
				if strings.Contains(text, sandboxTestKey) {
					escapes[tool]++
				}
				key := tool + " ok"
				if isErr {
					key = tool + " refused"
					if strings.Contains(text, "$ZOT_HOME") {
						key += " ($ZOT_HOME)"
					}
				}
				seen[key]++
			}
			call := func(tool Tool, args any) ToolResult {
				b, _ := json.Marshal(args)
				return tool.Run(context.Background(), b, nil)
			}
			for i := 0; i < tries; i++ {
				res := call(readTool{env}, obj{"path": "d/auth.json"})
				note("read", Message{Content: res.Content}.Text(), res.IsError)
				res = call(writeTool{env}, obj{"path": fmt.Sprintf("d/new-%d", i), "content": "x"})
				note("write", Message{Content: res.Content}.Text(), res.IsError)
				old, new := "decoy", "DECOY"
				if i%2 == 1 {
					old, new = new, old
				}
				res = call(editTool{env}, obj{"path": "d/auth.json", "edits": []obj{{"oldText": old, "newText": new}}})
				note("edit", Message{Content: res.Content}.Text(), res.IsError)
				b, desc, err := attachFile("d/auth.json", env)
				note("@path", b.Text+desc+fmt.Sprint(err), err != nil)
			}
			t.Logf("%d tries of each tool: %v", tries, seen)
			for tool, n := range escapes {
				t.Errorf("%s returned the secret in %d of %d tries", tool, n, tries)
			}
			entries, _ := os.ReadDir(l.home)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if !slices.Equal(names, []string{"auth.json"}) {
				t.Errorf("files were created in $ZOT_HOME: %v", names)
			}
			if b, _ := os.ReadFile(filepath.Join(l.home, "auth.json")); !strings.Contains(string(b), sandboxTestKey) {
				t.Errorf("auth.json was changed: %q", b)
			}
		})
	}
}
