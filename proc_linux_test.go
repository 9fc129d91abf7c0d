package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// procWays are the ways zot finds a command's processes: a cgroup where
// this machine gives one (else the tree), the process tree, a look at
// every process.
var procWays = []string{"", "tree", "scan"}

// TestBashForkLoopDoesNotOutliveTheCall is issue 22's finding 2 through
// the real binary: a command leaves a process that forks and exits in a
// loop, each child in a process group of its own and deaf to SIGTERM
// (testdata/proc/forkloop.py). Once the call has returned nothing of it
// runs — by the process table, looked at three times, and by the marker
// the loop rewrites, which stays as it was — with the sandbox off and on
// both sandbox paths, each way zot has of finding the command's
// processes.
func TestBashForkLoopDoesNotOutliveTheCall(t *testing.T) {
	t.Parallel()
	type loopCase struct{ name, sandbox, sandboxForce, procForce string }
	var cases []loopCase
	for _, way := range procWays {
		cases = append(cases,
			loopCase{"off/" + way, "off", "", way},
			loopCase{pathLandlockOnly + "/" + way, "workspace", "landlock-only", way})
	}
	cases = append(cases, loopCase{pathNamespaces, "workspace", "", ""})
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.name, "/"), func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			z.env = append(z.env, sandboxForceEnv+"="+c.sandboxForce, procForceEnv+"="+c.procForce)
			marker := filepath.Join(z.cwd, "loop.marker")
			srv := startReplay(t,
				toolStep("t1", "bash", obj{"command": "python3 " + strconv.Quote(procTestdata(t, "forkloop.py")) + " " + strconv.Quote(marker) + " && echo started"}),
				replayStep{Events: anthropicEvents(gen{Text: "done"})})
			p := startRPCProc(t, z, append([]string{"rpc", "--sandbox", c.sandbox}, anthropicFlags(srv)...)...)
			p.send(`{"type":"prompt","message":"loop"}`)
			p.until(func(o rpcOut) bool { return o.Type == "done" })
			if reqs := srv.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), `started\n[exit code 0]`) {
				t.Fatalf("the loop did not start: %d requests, stderr:\n%s", len(reqs), p.stderr)
			}
			before, err := os.ReadFile(marker)
			if err != nil {
				t.Fatal(err)
			}
			for look := 0; look < 3; look++ {
				if left := processesWith(marker); len(left) > 0 {
					t.Fatalf("running after the call (look %d): %v", look, left)
				}
			}
			if after, _ := os.ReadFile(marker); string(after) != string(before) {
				t.Errorf("the loop went on after the call: marker %q, then %q", before, after)
			}
		})
	}
}
