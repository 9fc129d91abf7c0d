package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenValidateLines are the command lines whose zot validate
// explanations are kept: one for each way a decision is reached.
var goldenValidateLines = []string{
	"ls -la",                            // a Claude Code allow rule; the validator allows
	"git status && rm -rf build",        // the second command: the validator denies
	"git push --force origin main",      // a runok deny rule, its message and fix
	"kubectl delete ns prod | tee log",  // a validator asks
	"echo $(curl -s https://x) > out",   // a substitution's command, checked on its own
	"FOO=1 sudo -u root make install",   // through a wrapper, to the command it runs
	"python3 -c 'print(1)'; git status", // no rule for python3: the default asks
}

// TestGoldenValidateExplanations keeps zot validate's explanations, text
// and --json, through the real binary, for goldenValidateLines under two
// validators and the rules of Claude Code's settings and runok.yml, and
// what --check makes of those files.
func TestGoldenValidateExplanations(t *testing.T) {
	t.Parallel()
	repo, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			withValidators(t, z.home,
				obj{"name": "no-rm", "script": "deny_rm.sh"},
				obj{"name": "kube", "script": "ask.sh", "commands": []string{"kubectl"}})
			userSettings(t, z, perms("allow", []string{"Bash(ls:*)", "Bash(git status)", "Bash(echo:*)", "Bash(curl -s:*)", "Bash(make:*)", "Bash(sudo:*)"},
				"ask", []string{"Bash(kubectl delete:*)"}))
			runok := filepath.Join(z.home, ".config", "runok", "runok.yml")
			os.MkdirAll(filepath.Dir(runok), 0o755)
			os.WriteFile(runok, []byte("rules:\n  - deny: 'git push -f|--force *'\n    message: 'Force push is not allowed.'\n    fix_suggestion: 'git push --force-with-lease'\ndefaults:\n  action: allow\n"), 0o644)

			var out strings.Builder
			for _, line := range append(goldenValidateLines, "") {
				args := []string{"validate", "--", line}
				if line == "" {
					args = []string{"validate", "--check"} // what zot makes of the files
				}
				if format == "json" {
					args = append([]string{"validate", "--json"}, args[1:]...)
				}
				stdout, stderr, code := z.run(args...)
				fmt.Fprintf(&out, "$ zot %s\n%s%sexit %d\n\n", shellQuoteArgs(args), stdout, stderr, code)
			}
			name := "validate"
			if format == "json" {
				name = "validate_json"
			}
			checkGolden(t, name, normalise(out.String(), map[string]string{z.home: "$HOME", z.cwd: "$CWD", repo: "$REPO"}))
		})
	}
}

// shellQuoteArgs writes a command's words as a shell would need them.
func shellQuoteArgs(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shellQuote(w)
	}
	return strings.Join(q, " ")
}
