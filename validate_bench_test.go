package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The overhead a validator adds to a bash call is the time of the gate:
// split the line, spawn the validator, one request and one response, kill
// and reap. BenchmarkBashCallAlone is the call it is added to.

func BenchmarkBashCallAlone(b *testing.B) {
	bash := bashTool{NewToolEnv(b.TempDir(), false)}
	args := json.RawMessage(`{"command":"curl --version >/dev/null 2>&1; true"}`)
	for i := 0; i < b.N; i++ {
		if r := bash.Run(context.Background(), args, nil); r.IsError {
			b.Fatal(r.Content[0].Text)
		}
	}
}

func benchmarkGate(b *testing.B, v Validator) {
	gate := ValidatorGate([]Validator{v}, b.TempDir())
	call := ToolCall{Name: "bash", Args: json.RawMessage(`{"command":"curl -X POST -H 'Content-Type: application/json' https://api.example.com/v1/items"}`)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := gate(context.Background(), call); r.Verdict != GateAllow {
			b.Fatalf("%+v", r)
		}
	}
}

func BenchmarkValidatorOverheadSh(b *testing.B) {
	path, _ := filepath.Abs("testdata/validate/allow.sh")
	benchmarkGate(b, Validator{Name: "sh", Argv: []string{path}, Timeout: validatorDefaultTimeout})
}

const goValidator = `package main

import (
	"encoding/json"
	"os"
)

func main() {
	var req struct{ ID json.RawMessage }
	json.NewDecoder(os.Stdin).Decode(&req)
	os.Stdout.WriteString("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"status\":\"allow\"}}\n")
}
`

func BenchmarkValidatorOverheadGo(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module v\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(goValidator), 0o644)
	build := exec.Command("go", "build", "-o", "validator", ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build the Go validator: %v\n%s", err, out)
	}
	benchmarkGate(b, Validator{Name: "go", Argv: []string{filepath.Join(dir, "validator")}, Timeout: validatorDefaultTimeout})
}

// tenKBCommandLine is a realistic script of about 10 KB: pipes, quotes,
// substitutions, loops and a here-document.
func tenKBCommandLine() string {
	chunk := `cd /repo && git status --short | grep -v '^??' ; ` +
		`curl -sS -X POST -H 'Content-Type: application/json' -d "{\"at\": $(date +%s)}" https://api.example.com/v1/items | jq -r .id` + "\n" +
		`for f in $(find . -name '*.go' -newer go.mod); do gofmt -l "$f" || echo "bad: $f" >&2; done` + "\n" +
		"cat <<EOF > notes.txt\nrelease $(git describe --tags)\nEOF\n" +
		`sudo -u deploy env STAGE=prod bash -c 'systemctl restart app && journalctl -u app -n 20'` + "\n"
	return strings.Repeat(chunk, 10240/len(chunk)+1)
}

func BenchmarkSplitCommandLine10KB(b *testing.B) {
	line := tenKBCommandLine()
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		split := SplitCommandLine(line, ShellContext{Bash: true, Cwd: "/repo"})
		cmds := split.Commands
		if len(cmds) < 100 {
			b.Fatalf("%d commands, unfollowed %q", len(cmds), split.Unfollowed)
		}
		for _, c := range cmds {
			commandFlags(c.Name, c.Words[1:])
		}
	}
}
