package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// runokDocConfigs are the configurations of runok's documentation
// (../shared/runok-docs, commit c9b1726; copied into the cases by hand),
// named by the page they come from.
var runokDocConfigs = map[string]string{
	// rule-evaluation/priority-model.md
	"priority": `
rules:
  - allow: 'git *' # priority 0
  - deny: 'git push -f|--force *' # priority 2 — always wins
`,
	// getting-started/quickstart.md, without its remote preset (see
	// TestRunokQuickStartAsWritten for the file as the page has it).
	"quickstart": `
rules:
  - ask: 'git push *'
  - deny: 'git push -f|--force *'
    message: 'Force push is not allowed.'
    fix_suggestion: 'git push --force-with-lease'
defaults:
  action: ask
`,
	// pattern-syntax/wildcards.md
	"wildcards": `
rules:
  - allow: 'git *'
  - allow: 'docker run *'
  - allow: '* --help'
  - allow: 'curl -X|--request * *'
  - allow: 'aws s3api list-*'
  - deny: 'rm *.txt'
  - allow: 'echo pre*suf'
  - deny: '/* *'
  - allow: 'pre-* --help'
  - deny: 'rm|/*/rm *'
  - deny: 'git commit -m "WIP\*"'
  - allow: 'cmd WIP\*'
  - allow: "npx -c 'renovate-config-validator *'"
`,
	"wildcard-alone": `
rules:
  - allow: '*'
`,
	"quoted-glob": `
rules:
  - allow: 'git *'
  - deny: 'git commit -m "WIP*"'
`,
	// pattern-syntax/alternation.md
	"alternation": `
rules:
  - allow: 'git checkout main|master'
  - allow: 'curl -X|--request POST *'
  - allow: 'kubectl describe|get|list-* pods'
  - allow: 'ast-grep|sg *'
  - allow: '"npx prettier"|prettier *'
`,
	"negation": `
rules:
  - allow: 'curl *'
  - deny: 'curl -X|--request !GET *'
  - allow: 'kubectl *'
  - deny: 'kubectl !describe|get|list-* *'
`,
	"negation-glob": `
rules:
  - deny: 'kubectl !list-* *'
defaults:
  action: allow
`,
	// pattern-syntax/optional-groups.md
	"optional": `
rules:
  - allow: 'git push [--force]'
  - allow: 'rm [-f] *'
  - allow: 'curl [-X|--request POST] *'
  - allow: '[ -f * ]'
`,
	// pattern-syntax/matching-behavior.md
	"matching": `
rules:
  - deny: 'java -Denv=prod *'
  - deny: 'curl -X|--request POST *'
  - allow: 'git tag [-n *] *'
  - allow: 'gh api -X GET *'
  - allow: 'git push origin main'
`,
	"equals-joined": `
rules:
  - ask: 'curl * -o|--output *'
  - allow: 'curl *'
`,
	"optional-value": `
rules:
  - allow: 'git branch --abbrev ?'
  - allow: 'mytool --mode \?'
`,
	"optional-value-tail": `
rules:
  - allow: 'git branch --abbrev ? *'
`,
	"optional-value-group": `
rules:
  - allow: 'git branch [--abbrev ?] *'
`,
	"flag-negation": `
rules:
  - allow: 'find !-delete|-fprint|-fls *'
  - allow: 'rg !--pre *'
`,
	"combined-flags": `
rules:
  - allow: 'git *'
  - deny: 'git commit -m *'
`,
	// pattern-syntax/placeholders.md
	"wrappers": `
definitions:
  wrappers:
    - 'sudo <cmd>'
    - 'xargs <opts> <cmd>'
    - 'env <opts> <vars> <cmd>'
    - "find * -exec|-execdir|-ok|-okdir <cmd> \\;|+"
rules:
  - allow: 'echo *'
  - allow: 'find *'
  - deny: 'rm *'
`,
	"paths": `
definitions:
  paths:
    sensitive:
      - /etc/passwd
      - /etc/shadow
      - /etc/sudoers
    config:
      - /etc/nginx/nginx.conf
      - /etc/hosts
rules:
  - deny: 'cat <path:sensitive>'
  - deny: 'rm <path:sensitive>'
  - allow: 'cat <path:config>'
  - deny: 'tac <path:undefined>'
`,
	"vars": `
definitions:
  vars:
    instance-ids:
      values:
        - i-abc123
        - i-def456
        - i-ghi789
    test-script:
      type: path
      values:
        - ./tests/run
    runok:
      values:
        - runok
        - 'cargo run --'
        - type: path
          value: target/debug/runok
    kubectl:
      type: pattern
      values:
        - 'kubectl [-n|--namespace *] [--context *] [--cluster *] [--user *] [--kubeconfig *]'
rules:
  - allow: aws ec2 terminate-instances --instance-ids <var:instance-ids>
  - allow: sh <var:test-script>
  - allow: '<var:runok> check'
  - allow: '<var:kubectl> get|describe|logs *'
  - allow: 'ls <var:undefined>'
`,
	"flag-groups": `
definitions:
  flag_groups:
    field-flag: '-f|-F|--field|--raw-field *'
    verbose: '-v|--verbose'
    method: '-X|--method GET|HEAD|OPTIONS'
rules:
  - allow: 'gh api graphql <flag:field-flag> *'
  - allow: 'mycli <flag:verbose> *'
  - allow: 'gh api <flag:method> *'
`,
	"flag-groups-when": `
definitions:
  flag_groups:
    field-flag: '-f|-F|--field|--raw-field *'
rules:
  - allow: 'gh api graphql <flag:field-flag> *'
    when: '!flag_groups["field-flag"].exists(v, v.startsWith("query=mutation"))'
  - ask: 'gh api graphql <flag:field-flag> *'
  - allow: 'gh api repos *'
`,
	"aliases": `
definitions:
  aliases:
    kubectl:
      - 'kubectl [--namespace|-n *]'
rules:
  - allow: 'kubectl get pods'
`,
	// rule-evaluation/wrapper-recursion.md
	"recursion": `
definitions:
  wrappers:
    - 'sudo <cmd>'
    - 'bash -c <cmd>'
rules:
  - allow: 'sudo *'
  - allow: 'ls *'
  - deny: 'rm -rf /'
`,
	"recursion-compound": `
definitions:
  wrappers:
    - 'bash -c <cmd>'
rules:
  - allow: 'ls *'
  - deny: 'rm -rf *'
`,
	"recursion-subshell": `
definitions:
  wrappers:
    - 'time <cmd>'
rules:
  - allow: 'lefthook run *'
  - allow: 'tail *'
  - deny: 'rm -rf *'
`,
	// rule-evaluation/compound-commands.md
	"compound": `
rules:
  - allow: 'git add *'
  - allow: 'git commit *'
  - deny: 'rm -rf *'
`,
	"compound-default": `
defaults:
  action: ask
rules:
  - allow: 'git status'
`,
	"variables": `
rules:
  - deny: 'git push --force*'
  - allow: 'git push *'
`,
	// getting-started/why-runok.md
	"why": `
rules:
  - allow: 'git log *'
  - allow: 'echo *'
  - allow: 'git status'
  - allow: 'git [-C *] commit *'
  - deny: 'git push -f|--force *'
    message: 'Force push rewrites history and is not allowed on this project.'
    fix_suggestion: 'git push --force-with-lease'
  - allow: 'git push --force-with-lease *'
  - deny: 'kubectl !describe|get *'
`,
	// configuration/denial-feedback.md
	"feedback": `
rules:
  - deny: 'rm -rf /'
    message: 'Deleting the root filesystem is not allowed.'
    fix_suggestion: 'rm -rf ./build'
  - deny: 'npm install'
    message: 'Use pnpm instead of npm.'
    fix_suggestion: 'pnpm install'
`,
	"defaults-allow": `
defaults:
  action: allow
rules:
  - deny: 'rm -rf /'
`,
	"defaults-deny": `
defaults:
  action: deny
rules:
  - allow: 'git status'
`,
	// troubleshooting/common-issues.md
	"redirects": `
rules:
  - allow: 'echo hello'
`,
	// configuration/schema.md
	"schema": `
rules:
  - allow: 'git *'
  - deny: 'rm -rf /'
    message: Dangerous operation
  - ask: 'docker *'
    sandbox: container-safe
  - allow: 'npm publish'
    when: "env.CI == 'true'"
  - allow: 'git status'
    tests:
      - allow: 'git status'
`,
}

// runokDocRows are rule/command/decision rows written from runok's
// documentation: each is the decision the page gives (or implies) for the
// command under the named configuration. zot, where it differs on
// purpose, says so in why.
var runokDocRows = []struct{ config, line, want, why string }{
	{"priority", "git push --force main", "deny", ""},
	{"priority", "git push -f origin main", "deny", ""},
	{"priority", "git status", "allow", ""},
	{"priority", "git push origin main", "allow", ""},
	{"priority", "git log --oneline", "allow", ""},
	{"priority", "git push origin --force", "deny", "flags match in any order"},
	{"priority", "git push origin main --force", "deny", ""},
	{"priority", "git push --force-with-lease origin", "allow", "--force-with-lease is not --force"},
	{"priority", "ls", "ask", "no rule: runok's default"},

	{"quickstart", "git push --force origin main", "deny", ""},
	{"quickstart", "git push origin main", "ask", ""},
	{"quickstart", "git push -f", "deny", ""},
	{"quickstart", "git status", "ask", "the page's preset allows it; without the preset nothing does"},

	{"wildcards", "git status", "allow", ""},
	{"wildcards", "git push origin main", "allow", ""},
	{"wildcards", "git log --oneline -n 5", "allow", ""},
	{"wildcards", "docker run hello-world", "allow", ""},
	{"wildcards", "docker run -it ubuntu bash", "allow", ""},
	{"wildcards", "docker ps", "ask", ""},
	{"wildcards", "git --help", "allow", ""},
	{"wildcards", "docker --help", "allow", ""},
	{"wildcards", "curl --help", "allow", ""},
	{"wildcards", "docker compose --help", "allow", "the command name spans words"},
	{"wildcards", "curl -X GET /api/endpoint", "allow", ""},
	{"wildcards", "aws s3api list-buckets", "allow", ""},
	{"wildcards", "aws s3api list-objects", "allow", ""},
	{"wildcards", "aws s3api list-users", "allow", ""},
	{"wildcards", "aws s3api delete-bucket", "ask", ""},
	{"wildcards", "rm file.txt", "deny", ""},
	{"wildcards", "rm readme.txt", "deny", ""},
	{"wildcards", "echo pre-middle-suf", "allow", ""},
	{"wildcards", "echo pre-suf", "allow", ""},
	{"wildcards", "echo pre123suf", "allow", ""},
	{"wildcards", "echo presuffix", "ask", ""},
	{"wildcards", "/usr/bin/foo", "deny", ""},
	{"wildcards", "/opt/local/bin/bar -x", "deny", ""},
	{"wildcards", "pre-build --help", "allow", ""},
	{"wildcards", "pre-test --help", "allow", ""},
	{"wildcards", "/bin/rm notes.md", "deny", ""},
	{"wildcards", "git commit -m 'WIP*'", "deny", ""},
	{"wildcards", "git commit -m WIPfoo", "allow", `\* is a literal *`},
	{"wildcards", "cmd 'WIP*'", "allow", ""},
	{"wildcards", "cmd WIPfoo", "ask", ""},
	{"wildcards", "npx -c 'renovate-config-validator foo.json'", "allow", ""},
	{"wildcards", "npx -c 'renovate-config-validator bar.json'", "allow", ""},
	{"wildcard-alone", "ls", "allow", "a command with no arguments"},
	{"wildcard-alone", "ls -la", "ask", ""},
	{"quoted-glob", "git commit -m WIPfoo", "deny", "quotes group; * still globs"},
	{"quoted-glob", "git commit -m WIPbar", "deny", ""},
	{"quoted-glob", "git commit -m done", "allow", ""},

	{"alternation", "git checkout main", "allow", ""},
	{"alternation", "git checkout master", "allow", ""},
	{"alternation", "git checkout dev", "ask", ""},
	{"alternation", "curl -X POST https://example.com", "allow", ""},
	{"alternation", "curl --request POST https://example.com", "allow", ""},
	{"alternation", "kubectl describe pods", "allow", ""},
	{"alternation", "kubectl get pods", "allow", ""},
	{"alternation", "kubectl list-all pods", "allow", ""},
	{"alternation", "kubectl delete pods", "ask", ""},
	{"alternation", "ast-grep --pattern x", "allow", ""},
	{"alternation", "sg --pattern x", "ask", "runok: allow; zot also reads sg as the switch-group command, which runs x, and x matches no rule"},
	{"alternation", "ast-grep -p x src", "allow", ""},
	{"alternation", "npx prettier --write .", "allow", ""},
	{"alternation", "prettier --write .", "allow", ""},
	{"alternation", "npx eslint .", "ask", ""},
	{"negation", "curl -X POST https://example.com", "deny", ""},
	{"negation", "curl -X PUT https://example.com", "deny", ""},
	{"negation", "curl -X PATCH https://example.com", "deny", ""},
	{"negation", "curl --request DELETE https://example.com", "deny", ""},
	{"negation", "curl -X GET https://example.com", "allow", ""},
	{"negation", "kubectl delete my-pod", "deny", ""},
	{"negation", "kubectl apply -f file.yaml", "deny", ""},
	{"negation", "kubectl describe pods", "allow", ""},
	{"negation", "kubectl get pods", "allow", ""},
	{"negation", "kubectl list-buckets", "allow", ""},
	{"negation-glob", "kubectl delete x", "deny", ""},
	{"negation-glob", "kubectl list-pods", "allow", ""},

	{"optional", "git push", "allow", ""},
	{"optional", "git push --force", "allow", ""},
	{"optional", "git push origin", "ask", ""},
	{"optional", "rm file.txt", "allow", ""},
	{"optional", "rm -f file.txt", "allow", ""},
	{"optional", "curl https://example.com", "allow", ""},
	{"optional", "curl -X POST https://example.com", "allow", ""},
	{"optional", "curl -X DELETE https://example.com", "ask", "-X is there with another value"},
	{"optional", "curl -X=POST https://example.com", "allow", ""},
	{"optional", "curl -X=DELETE https://example.com", "ask", ""},
	{"optional", "[ -f file ]", "allow", "the POSIX test command"},

	{"matching", "java -Denv=prod -jar app.jar", "deny", ""},
	{"matching", "java -Denv staging -jar app.jar", "ask", ""},
	{"matching", "curl -X POST https://example.com", "deny", ""},
	{"matching", "curl -X=POST https://example.com", "deny", ""},
	{"matching", "curl --request=POST https://example.com", "deny", ""},
	{"matching", "curl https://example.com -X POST", "deny", ""},
	{"matching", "git tag -n 3 v1", "allow", ""},
	{"matching", "git tag -n=3 v1", "allow", ""},
	{"matching", "git tag -n3 v1", "allow", "a fused short flag value"},
	{"matching", "git tag v1", "allow", ""},
	{"matching", "gh api -X GET /repos", "allow", ""},
	{"matching", "gh -X GET api /repos", "allow", "positional words skip flags"},
	{"matching", "gh api /repos -X GET", "allow", ""},
	{"matching", "gh api -X POST /repos", "ask", ""},
	{"matching", "git push origin main", "allow", ""},
	{"matching", "git push main origin", "ask", "positional order holds"},
	{"equals-joined", "curl --output /tmp/out https://example.com", "ask", ""},
	{"equals-joined", "curl --output=/tmp/out https://example.com", "ask", ""},
	{"equals-joined", "curl -o=/tmp/out https://example.com", "ask", ""},
	{"equals-joined", "curl https://example.com", "allow", ""},
	{"optional-value", "git branch --abbrev", "allow", ""},
	{"optional-value", "git branch --abbrev=8", "allow", ""},
	{"optional-value", "git branch", "ask", "the flag itself is required"},
	{"optional-value", "git branch --abbrev 8", "ask", "8 is not --abbrev's value"},
	{"optional-value", "mytool --mode '?'", "allow", `\? is a literal ?`},
	{"optional-value", "mytool --mode x", "ask", ""},
	{"optional-value-tail", "git branch --abbrev 8", "allow", ""},
	{"optional-value-group", "git branch", "allow", ""},
	{"optional-value-group", "git branch --abbrev=4 topic", "allow", ""},
	{"flag-negation", "find . -name foo -type f", "allow", ""},
	{"flag-negation", "find", "allow", "the flag is trivially absent"},
	{"flag-negation", "find . -delete", "ask", ""},
	{"flag-negation", "find -fprint output .", "ask", ""},
	{"flag-negation", "rg pattern file.txt", "allow", ""},
	{"flag-negation", "rg --pre pdftotext pat", "ask", ""},
	{"flag-negation", "rg --pre=pdftotext pat", "ask", ""},
	{"combined-flags", "git commit -m 'fix bug'", "deny", ""},
	{"combined-flags", "git commit -am 'fix bug'", "allow", "-am is not -m"},

	{"wrappers", "sudo echo hello", "allow", ""},
	{"wrappers", "xargs -I{} echo hello", "allow", ""},
	{"wrappers", "env FOO=bar echo hi", "allow", ""},
	{"wrappers", "env -i FOO=bar echo hi", "allow", ""},
	{"wrappers", "env -u HOME -i FOO=bar echo hi", "allow", ""},
	{"wrappers", "sudo rm -rf x", "deny", ""},
	{"wrappers", "find . -name '*.tmp' -exec rm {} \\;", "deny", ""},
	{"wrappers", "find . -name x -exec echo {} +", "allow", ""},
	{"paths", "cat /etc/passwd", "deny", ""},
	{"paths", "cat /etc/hosts", "allow", ""},
	{"paths", "rm /etc/shadow", "deny", ""},
	{"paths", "cat /etc/./passwd", "deny", "path normalisation"},
	{"paths", "cat /tmp/../etc/passwd", "deny", ""},
	{"paths", "cat /etc/motd", "ask", ""},
	{"paths", "tac /etc/passwd", "ask", "an undefined path name never matches"},
	{"vars", "aws ec2 terminate-instances --instance-ids i-abc123", "allow", ""},
	{"vars", "aws ec2 terminate-instances --instance-ids i-UNKNOWN", "ask", ""},
	{"vars", "sh ./tests/run", "allow", ""},
	{"vars", "sh tests/run", "allow", "path normalisation"},
	{"vars", "sh ./tests/../tests/run", "allow", ""},
	{"vars", "sh ./scripts/deploy", "ask", ""},
	{"vars", "runok check", "allow", ""},
	{"vars", "cargo run -- check", "allow", "a multi-word value"},
	{"vars", "./target/debug/runok check", "allow", ""},
	{"vars", "node check", "ask", ""},
	{"vars", "kubectl get pods", "allow", ""},
	{"vars", "kubectl -n prod get pods", "allow", ""},
	{"vars", "kubectl --context staging describe pod x", "allow", ""},
	{"vars", "kubectl delete pod x", "ask", ""},
	{"vars", "ls anything", "ask", "an undefined variable never matches"},
	{"flag-groups", "gh api graphql -f query=x", "allow", ""},
	{"flag-groups", "gh api graphql --raw-field query=x", "allow", ""},
	{"flag-groups", "gh api graphql --raw-field=query=x", "allow", ""},
	{"flag-groups", "gh api graphql -f query=x -f variables={}", "allow", ""},
	{"flag-groups", "gh api graphql", "ask", "at least one of the group's flags"},
	{"flag-groups", "mycli -v run", "allow", ""},
	{"flag-groups", "mycli run", "ask", ""},
	{"flag-groups", "gh api -X GET /repos", "allow", ""},
	{"flag-groups", "gh api -X POST /repos", "ask", "a value the group does not accept"},
	{"flag-groups-when", "gh api graphql -f query=x", "ask", "zot does not evaluate when: the allow does not match, the ask does"},
	{"flag-groups-when", "gh api repos x", "allow", ""},
	{"aliases", "kubectl get pods", "allow", ""},
	{"aliases", "kubectl -n prod get pods", "allow", ""},
	{"aliases", "kubectl --namespace prod get pods", "allow", ""},
	{"aliases", "kubectl delete pods", "ask", ""},

	{"recursion", "sudo bash -c 'rm -rf /'", "deny", ""},
	{"recursion", "sudo ls -la", "allow", ""},
	{"recursion", "sudo rm -rf /", "deny", ""},
	{"recursion-compound", "bash -c 'ls /tmp; rm -rf /'", "deny", ""},
	{"recursion-compound", "bash -c 'ls /tmp'", "allow", ""},
	{"recursion-subshell", "time (lefthook run pre-commit 2>&1 | tail -40)", "allow", ""},
	{"recursion-subshell", "time (rm -rf /)", "deny", ""},
	{"compound", "git add . && rm -rf /tmp", "deny", ""},
	{"compound", `git add . && git commit -m "update"`, "allow", ""},
	{"compound", `git add . && git commit -m "update" | cat`, "ask", "cat matches no rule"},
	{"compound-default", "git status && unknown-cmd", "ask", ""},
	{"compound-default", "git status", "allow", ""},
	{"variables", "F=--force; git push $F", "deny", "the value the line assigns"},
	{"variables", "git push origin", "allow", ""},
	{"variables", "git push --force", "deny", ""},

	{"why", "git log --oneline -5 && echo '---' && git status", "allow", ""},
	{"why", "# check recent commits\ngit log --oneline -5", "allow", "comments are not commands"},
	{"why", "git -C /path/to/repo commit -m fix", "allow", ""},
	{"why", "git commit -m fix", "allow", ""},
	{"why", "git push --force", "deny", ""},
	{"why", "git push --force-with-lease origin main", "allow", ""},
	{"why", "git push origin --force-with-lease main", "allow", ""},
	{"why", "kubectl delete pod x", "deny", ""},
	{"why", "kubectl describe pod x", "ask", ""},
	{"feedback", "rm -rf /", "deny", ""},
	{"feedback", "npm install", "deny", ""},
	{"feedback", "npm install lodash", "ask", ""},
	{"defaults-allow", "unknown-cmd", "allow", ""},
	{"defaults-allow", "rm -rf /", "deny", ""},
	{"defaults-deny", "unknown-cmd", "deny", ""},
	{"defaults-deny", "git status", "allow", ""},
	{"redirects", "echo hello > file.txt", "allow", "redirections are not words"},
	{"schema", "git status", "allow", ""},
	{"schema", "rm -rf /", "deny", ""},
	{"schema", "docker ps", "ask", ""},
	{"schema", "npm publish", "ask", "an allow with when does not match"},
}

var runokTestRules sync.Map // config name → *PermissionRules

// runokRulesFor loads a configuration as the user's global runok.yml.
func runokRulesFor(t *testing.T, name, config string) (*PermissionRules, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	cwd := filepath.Join(dir, "project")
	for _, d := range []string{filepath.Join(cfg, "runok"), cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(cfg, "runok", "runok.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	rules := LoadPermissionRules(PermissionSources{Cwd: cwd, UserHome: dir, ConfigHome: cfg})
	for _, p := range rules.Problems {
		if p.Level == problemError {
			t.Errorf("config %s: %s", name, p)
		}
	}
	return rules, cwd
}

func TestRunokDocumentationTable(t *testing.T) {
	t.Parallel()
	if len(runokDocRows) < 150 {
		t.Errorf("%d rows; the table keeps at least 150", len(runokDocRows))
	}
	type loaded struct {
		rules *PermissionRules
		cwd   string
	}
	configs := map[string]loaded{}
	for name, c := range runokDocConfigs {
		r, cwd := runokRulesFor(t, name, c)
		configs[name] = loaded{r, cwd}
	}
	for _, row := range runokDocRows {
		c, ok := configs[row.config]
		if !ok {
			t.Fatalf("no config %q", row.config)
		}
		r := CheckCommandLineRules(context.Background(), nil, c.rules, row.line, c.cwd)
		if string(r.Decision) != row.want {
			var why []string
			for _, a := range r.Rules {
				why = append(why, explainRule(a))
			}
			for _, a := range r.Answers {
				why = append(why, a.Validator+": "+a.Message)
			}
			t.Errorf("%s: %q: %s, want %s (%s)\n  %s", row.config, row.line, r.Decision, row.want, row.why, strings.Join(why, "\n  "))
		}
	}
}

// runokLayout writes files (relative to a temp dir holding home/ and
// home/proj) and loads the rules of a session in home/proj.
func runokLayout(t *testing.T, approved bool, files map[string]string) (*PermissionRules, string) {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	cwd := filepath.Join(home, "proj", "sub")
	os.MkdirAll(cwd, 0o755)
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := PermissionSources{Cwd: cwd, UserHome: home, ConfigHome: filepath.Join(home, ".config")}
	if approved {
		src.Approved = func(PermissionLoosening) bool { return true }
	}
	return LoadPermissionRules(src), cwd
}

func decide(t *testing.T, rules *PermissionRules, cwd, line string) ValidationReport {
	t.Helper()
	return CheckCommandLineRules(context.Background(), nil, rules, line, cwd)
}

func problemsText(rules *PermissionRules) string {
	var out []string
	for _, p := range rules.Problems {
		out = append(out, p.Level+": "+p.String())
	}
	return strings.Join(out, "\n")
}

func TestRunokFindsAndMergesItsFourLayers(t *testing.T) {
	t.Parallel()
	rules, cwd := runokLayout(t, true, map[string]string{
		"home/.config/runok/runok.yml":       "rules:\n  - allow: 'git *'\ndefinitions:\n  paths:\n    secrets: [~/.ssh]\n",
		"home/.config/runok/runok.local.yml": "rules:\n  - deny: 'git push *'\n",
		"home/proj/runok.yml":                "rules:\n  - allow: 'cargo build *'\n  - deny: 'cat <path:secrets>'\ndefinitions:\n  paths:\n    secrets: [~/.aws/credentials]\ndefaults:\n  action: deny\n",
		"home/proj/runok.local.yaml":         "defaults:\n  action: ask\n",
		"home/runok.yml":                     "rules:\n  - deny: 'git status'\n", // $HOME's own file is not a project's
	})
	home := filepath.Dir(filepath.Dir(cwd))
	for line, want := range map[string]string{
		"git status":                         "allow",
		"git push":                           "deny",
		"cargo build --release":              "allow",
		"cat " + filepath.Join(home, ".ssh"): "deny", // paths append per key
		"cat " + home + "/.aws/credentials":  "deny",
		"unknown":                            "ask", // the last layer's default
	} {
		if r := decide(t, rules, cwd, line); string(r.Decision) != want {
			t.Errorf("%q: %s, want %s (%+v)", line, r.Decision, want, r.Rules)
		}
	}
	if len(rules.Files) != 4 {
		t.Errorf("files: %v", rules.Files)
	}
}

// The attacker is a repository with a runok.yml that allows everything.
// Until the directory is trusted its deny and ask rules apply and nothing
// it would loosen does: allow rules, defaults, definitions.
func TestRunokProjectLooseningWaitsForTrust(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"home/.config/runok/runok.yml": "rules:\n  - allow: 'kubectl get pods'\n  - allow: 'cat *'\n",
		"home/proj/runok.yml": `
defaults:
  action: allow
definitions:
  aliases:
    kubectl: ['kubectl *']
  wrappers: ['nice <cmd>']
rules:
  - allow: 'curl *'
  - deny: 'rm -rf *'
  - ask: 'git push *'
`,
	}
	for _, trusted := range []bool{false, true} {
		rules, cwd := runokLayout(t, trusted, files)
		want := map[string]string{
			"curl x":             "ask",
			"rm -rf /":           "deny",
			"git push":           "ask",
			"unknown":            "ask",
			"kubectl delete all": "ask", // the project's alias would widen the user's rule
			"kubectl get pods":   "allow",
			"cat x":              "allow",
		}
		if trusted {
			want["curl x"], want["unknown"], want["kubectl delete all"] = "allow", "allow", "allow"
		}
		for line, w := range want {
			if r := decide(t, rules, cwd, line); string(r.Decision) != w {
				t.Errorf("trusted %v: %q: %s, want %s (%+v)", trusted, line, r.Decision, w, r.Rules)
			}
		}
		if len(rules.Loosening) != 1 {
			t.Errorf("loosening: %+v", rules.Loosening)
		}
	}
}

func TestRunokExtendsLocalFilesAndFailsClosedOnTheRest(t *testing.T) {
	t.Parallel()
	rules, cwd := runokLayout(t, true, map[string]string{
		"home/.config/runok/runok.yml":  "extends:\n  - ./base.yml\n  - ~/shared/more.yml\nrules:\n  - allow: 'ls *'\n",
		"home/.config/runok/base.yml":   "extends: [./deeper.yml]\nrules:\n  - deny: 'rm *'\n",
		"home/.config/runok/deeper.yml": "rules:\n  - deny: 'shred *'\n",
		"home/shared/more.yml":          "rules:\n  - ask: 'git push *'\n",
	})
	for line, want := range map[string]string{"ls": "allow", "rm x": "deny", "shred x": "deny", "git push": "ask"} {
		if r := decide(t, rules, cwd, line); string(r.Decision) != want {
			t.Errorf("%q: %s, want %s", line, r.Decision, want)
		}
	}
	if p := problemsText(rules); p != "" {
		t.Errorf("problems:\n%s", p)
	}
	for name, ext := range map[string]string{
		"remote":  "github:fohte/runok-presets/base@v1",
		"missing": "./nope.yml",
		"escape":  "../../etc/runok.yml",
		"cycle":   "./runok.yml",
	} {
		rules, cwd := runokLayout(t, true, map[string]string{
			"home/.config/runok/runok.yml": "extends: ['" + ext + "']\nrules:\n  - allow: 'ls *'\n  - deny: 'rm *'\n",
		})
		r := decide(t, rules, cwd, "ls")
		if r.Decision != "ask" || !strings.Contains(r.Rules[0].Note, "what it would allow is asked") {
			t.Errorf("%s: ls: %s %+v", name, r.Decision, r.Rules)
		}
		if r := decide(t, rules, cwd, "rm x"); r.Decision != "deny" {
			t.Errorf("%s: rm: %s", name, r.Decision)
		}
		if p := problemsText(rules); !strings.Contains(p, "error: ") || !strings.Contains(p, ext) {
			t.Errorf("%s: problems:\n%s", name, p)
		}
	}
}

func TestRunokFileThatCannotBeReadAsks(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"yaml":       "rules:\n  - allow: 'ls *'\n  - deny: \"rm \\; x\"\n",
		"bad rule":   "rules:\n  - allow: 'ls *'\n  - deny: 'rm [-f'\n",
		"bare ?":     "rules:\n  - allow: 'ls *'\n  - allow: 'git status ?'\n",
		"flag group": "rules:\n  - allow: 'ls *'\n  - deny: 'rm <flag:nope>'\n",
		"no action":  "rules:\n  - allow: 'ls *'\n  - message: x\n",
	} {
		rules, cwd := runokLayout(t, true, map[string]string{"home/.config/runok/runok.yml": body})
		if r := decide(t, rules, cwd, "ls"); r.Decision != "ask" {
			t.Errorf("%s: ls %s, want ask while the file is broken", name, r.Decision)
		}
		p := problemsText(rules)
		if !strings.Contains(p, "runok.yml:") || !strings.Contains(p, "error") {
			t.Errorf("%s: the problem names no file and line:\n%s", name, p)
		}
	}
}

func TestRunokWhenSandboxAndUnsupportedAreSaidOnce(t *testing.T) {
	t.Parallel()
	rules, cwd := runokLayout(t, true, map[string]string{"home/.config/runok/runok.yml": `
defaults:
  sandbox: strict
definitions:
  sandbox:
    strict:
      network:
        allow: false
rules:
  - deny: 'curl *'
    when: "env.HTTP_PROXY != ''"
  - allow: 'npm publish'
    when: "env.CI == 'true'"
  - allow: 'python3 *'
    sandbox: strict
`})
	for line, want := range map[string]string{"curl x": "ask", "npm publish": "ask", "python3 x.py": "allow"} {
		if r := decide(t, rules, cwd, line); string(r.Decision) != want {
			t.Errorf("%q: %s, want %s", line, r.Decision, want)
		}
	}
	p := problemsText(rules)
	if strings.Count(p, "when clause") != 1 || strings.Count(p, "runok's sandbox presets") != 3 {
		t.Errorf("problems:\n%s", p)
	}
	var start []string
	for _, pr := range rules.StartupProblems() {
		start = append(start, pr.String())
	}
	if s := strings.Join(start, "\n"); strings.Count(s, "\n") != 1 || !strings.Contains(s, "runok: 3 sandbox setting(s) ignored") {
		t.Errorf("at start, the sandbox settings are one line:\n%s", s)
	}
}

// zot's splitter unwraps sudo, env, time, command … by itself. Where
// runok's wrappers would not, the stricter answer wins.
func TestRunokStricterWhereTheSplitterSeesMore(t *testing.T) {
	t.Parallel()
	rules, cwd := runokLayout(t, true, map[string]string{"home/.config/runok/runok.yml": "rules:\n  - allow: 'sudo *'\n  - allow: 'echo *'\n  - deny: 'rm -rf /'\n"})
	for line, want := range map[string]string{
		"sudo rm -rf /":    "deny", // runok alone: allow (no wrapper definitions)
		"sudo echo hi":     "allow",
		"sudo unknown":     "ask",
		"echo $(rm -rf /)": "deny",
		"F=/; rm -rf $F":   "deny",
		"X=hi; echo $X":    "allow", // the splitter knows X: echo hi
		"read X; echo $X":  "ask",   // never allowed on its literal $X
		"eval 'rm -rf /'":  "ask",   // not followed: ask
	} {
		if r := decide(t, rules, cwd, line); string(r.Decision) != want {
			t.Errorf("%q: %s, want %s (%+v %+v)", line, r.Decision, want, r.Rules, r.Answers)
		}
	}
}

func TestRunokRequireCommandInPath(t *testing.T) {
	t.Parallel()
	rules, cwd := runokLayout(t, true, map[string]string{"home/.config/runok/runok.yml": `
defaults:
  action: allow
experimental:
  require_command_in_path:
    enabled: true
    ignore: [my-helper]
rules:
  - allow: 'tarraform plan'
`})
	for line, want := range map[string]string{
		"tarraform version": "deny",
		"tarraform plan":    "allow", // an allow rule is the escape hatch
		"my-helper x":       "allow",
		"sh -c true":        "allow",
		"./script.sh":       "allow",
		"cd /tmp":           "allow", // a builtin
	} {
		if r := decide(t, rules, cwd, line); string(r.Decision) != want {
			t.Errorf("%q: %s, want %s (%+v)", line, r.Decision, want, r.Rules)
		}
	}
}

func TestRunokDenyFeedbackReachesTheModel(t *testing.T) {
	t.Parallel()
	rules, cwd := runokRulesFor(t, "feedback", runokDocConfigs["feedback"])
	g := decide(t, rules, cwd, "rm -rf /").gateResult()
	if g.Verdict != GateDeny || !strings.Contains(g.Reason, "Deleting the root filesystem is not allowed.") ||
		!strings.Contains(g.Reason, "suggested fix: rm -rf ./build") || !strings.Contains(g.Reason, "runok.yml:3") {
		t.Errorf("%+v", g)
	}
}

// The attacker is a runok.yml (or a model) with a pattern built to take
// forever: matching stops at runok's step limit, and a deny or ask rule
// that could not be decided asks.
func TestRunokPathologicalPatternStopsAndAsks(t *testing.T) {
	t.Parallel()
	rules, cwd := runokLayout(t, true, map[string]string{"home/.config/runok/runok.yml": "defaults:\n  action: allow\nrules:\n  - deny: 'x " + strings.Repeat("* ", 30) + "z'\n"})
	line := "x " + strings.Repeat("a ", 60)
	if r := decide(t, rules, cwd, line); r.Decision != "ask" {
		t.Errorf("%s %+v", r.Decision, r.Rules)
	}
}

// FuzzRunokFile: the attacker is a cloned repository, which writes its
// runok.yml whole.
func FuzzRunokFile(f *testing.F) {
	fuzzRulesFile(f, "home/proj/runok.yml", [][2]string{
		{"rules:\n  - allow: 'git *'\n  - deny: 'git push -f|--force *'\ndefaults:\n  action: ask\n", "git push --force origin"},
		{"definitions:\n  paths:\n    secrets: [~/.ssh, ./.env]\nrules:\n  - deny: 'cat <path:secrets>'\n", "cat .env"},
		{"definitions:\n  wrappers:\n    - 'sudo <opts> <cmd>'\n  vars:\n    env:\n      values: [prod, dev]\nrules:\n  - allow: 'deploy <var:env>'\n", "sudo -u x deploy prod"},
		{"definitions:\n  flag_groups:\n    force: {aliases: [-f, --force]}\n  aliases:\n    g: [git, 'git-x']\nrules:\n  - ask: '<g> <flag:force> *'\n", "git -f x"},
		{"extends: [./other.yml, 'github:a/b@v1']\nrules:\n  - allow: \"'npx prettier'|prettier *\"\n    when: 'env.CI == \"1\"'\n", "npx prettier --write ."},
		{"rules:\n  - deny: \"' '\"\n", "ls"},
	})
}

// fuzzRulesFile fuzzes one rules file a repository writes, at name
// (relative to runokLayout's directory), from seeds of a file and a
// command line: loaded trusted and not, no file panics, and every line
// gets one of the three decisions.
func fuzzRulesFile(f *testing.F, name string, seeds [][2]string) {
	for _, seed := range seeds {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, file, line string) {
		for _, trusted := range []bool{false, true} {
			rules, cwd := runokLayout(t, trusted, map[string]string{name: file})
			switch r := decide(t, rules, cwd, line); r.Decision {
			case DecisionAllow, DecisionAsk, DecisionDeny:
			default:
				t.Fatalf("%q: decision %q", line, r.Decision)
			}
		}
	})
}

// FuzzRunokPattern: no pattern and no command line panics or runs away;
// matching ends within runok's step limit.
func FuzzRunokPattern(f *testing.F) {
	for _, seed := range [][2]string{
		{"git push -f|--force *", "git push origin --force"},
		{"curl [-X|--request POST] *", "curl -X=DELETE x"},
		{`find * -exec|-ok <cmd> \;|+`, "find . -exec rm {} ;"},
		{"kubectl !describe|get|list-* *", "kubectl list-x"},
		{"git branch [--abbrev ?] *", "git branch --abbrev=8 x"},
		{`"npx prettier"|prettier *`, "npx prettier --write ."},
		{"* --help", "docker compose --help"},
		{"[ -f * ]", "[ -f x ]"},
		{"a [b", "a b"},
		{"x * * * * * * * * y", "x a a a a a a a a a a a"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, command string) {
		cfg := &runokConfig{valueFlags: map[string]bool{"-X": true}}
		pats, err := parseRunokPattern(pattern, cfg, true)
		if err != nil {
			return
		}
		words := strings.Fields(command)
		for _, p := range pats {
			for _, broad := range []bool{false, true} {
				m := &rpMatcher{defs: cfg, cwd: "/", broad: broad}
				m.match(p, words, func([]string) bool { return false })
				if m.steps > rpMaxSteps+1 && !m.exceeded {
					t.Errorf("%q on %q: %d steps", pattern, command, m.steps)
				}
			}
		}
	})
}

func TestRunokRulesThatCanNeverMatchAreReported(t *testing.T) {
	t.Parallel()
	rules, _ := runokLayout(t, true, map[string]string{"home/.config/runok/runok.yml": `
definitions:
  paths:
    secrets: [~/.ssh]
rules:
  - allow: 'git add . && git commit *'
  - allow: 'echo hello > file.txt'
  - deny: 'cat <path:secret>'
  - allow: '<var:tool> run'
  - deny: 'find * -exec rm {} \\;'
  - deny: 'cat <path:secrets>'
`})
	p := problemsText(rules)
	for _, want := range []string{
		`runok.yml:6: allow: 'git add . && git commit *': can never match: "&&" is a shell operator`,
		`runok.yml:7: allow: 'echo hello > file.txt': can never match: ">" is a shell operator or a redirection`,
		`runok.yml:8: deny: 'cat <path:secret>': can never match: <path:secret> names no definitions.paths entry`,
		`runok.yml:9: allow: '<var:tool> run': can never match: <var:tool> names no definitions.vars entry`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("missing %q in:\n%s", want, p)
		}
	}
	if strings.Count(p, "never:") != 4 {
		t.Errorf("want exactly the four:\n%s", p)
	}
}

// The attacker is a cloned repository whose runok.yml names a command of
// only white space: its deny rules load before the project is trusted.
// zot reports the rule and asks for what the rules would allow, and goes
// on; it crashed instead (found by FuzzRunokPattern).
func TestRunokWhiteSpaceCommandIsReported(t *testing.T) {
	t.Parallel()
	rules, cwd := runokLayout(t, false, map[string]string{"home/proj/runok.yml": "rules:\n  - deny: \"' '\"\n  - deny: \"x|'  '\"\n"})
	p := problemsText(rules)
	if strings.Count(p, "the command is only white space; until it is fixed, what these rules would allow is asked") != 2 {
		t.Errorf("problems:\n%s", p)
	}
	if r := decide(t, rules, cwd, "ls"); r.Decision != DecisionAsk {
		t.Errorf("ls: %s", r.Decision)
	}
}

// A flag followed by a word in a pattern takes it as its value (runok's
// flag schema inference); a deny or ask rule also matches the words in
// another order, so that rm -f -r / is not a way around deny 'rm -r -f /'.
func TestRunokDenyRulesMatchFlagsEitherWay(t *testing.T) {
	t.Parallel()
	rules, cwd := runokLayout(t, true, map[string]string{"home/.config/runok/runok.yml": "defaults:\n  action: allow\nrules:\n  - deny: 'rm -r -f /'\n  - allow: 'curl -X GET *'\n"})
	for line, want := range map[string]string{"rm -r -f /": "deny", "rm -f -r /": "deny", "rm / -r -f": "deny", "rm -r -f /tmp": "allow", "curl -X GET url": "allow", "curl url -X GET": "allow"} {
		if r := decide(t, rules, cwd, line); string(r.Decision) != want {
			t.Errorf("%q: %s, want %s", line, r.Decision, want)
		}
	}
}

// The attacker is the model: a line built so that a wrapper definition
// multiplies the work at every level. The judgement ends, and asks.
func TestRunokWrapperBlowupEndsInAnAsk(t *testing.T) {
	t.Parallel()
	rules, cwd := runokLayout(t, true, map[string]string{"home/.config/runok/runok.yml": "definitions:\n  wrappers:\n    - 'env * <cmd>'\n    - 'nohup * <cmd>'\nrules:\n  - allow: 'env *'\n  - allow: 'nohup *'\n  - allow: 'true'\n"})
	line := strings.Repeat("env nohup ", 30) + "true"
	if r := decide(t, rules, cwd, line); r.Decision != "ask" {
		t.Errorf("%s", r.Decision)
	}
	if r := decide(t, rules, cwd, "env nohup env true"); r.Decision != "allow" {
		t.Errorf("a short line: %s %+v", r.Decision, r.Rules)
	}
}

// The attacker is a runok.yml whose aliases multiply: each rule may
// expand into a bounded number of patterns, and past it the rule is an
// error (what the file would allow is asked), not a loader out of memory.
func TestRunokAliasExpansionIsBounded(t *testing.T) {
	t.Parallel()
	var y strings.Builder
	y.WriteString("definitions:\n  aliases:\n")
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&y, "    a%d:\n", i)
		for j := 0; j < 50; j++ {
			fmt.Fprintf(&y, "      - 'a%d x%d'\n", i+1, j)
		}
	}
	y.WriteString("rules:\n  - deny: 'a0 *'\n  - allow: 'ls'\n")
	rules, cwd := runokLayout(t, true, map[string]string{"home/.config/runok/runok.yml": y.String()})
	if p := problemsText(rules); !strings.Contains(p, "expand it into more than 1000 patterns") {
		t.Errorf("problems:\n%s", p)
	}
	if r := decide(t, rules, cwd, "ls"); r.Decision != "ask" {
		t.Errorf("ls: %s, want ask while a rule cannot be read", r.Decision)
	}
}

// The attacker is a repository whose runok.yml sets defaults.action: ask
// where the user's says deny (issue 34 §4): untrusted, a project's default
// only tightens — deny, then ask, then allow.
func TestRunokProjectDefaultOnlyTightensUntrusted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		user, project string
		trusted       bool
		want          string
	}{
		{"deny", "ask", false, "deny"},
		{"deny", "allow", false, "deny"},
		{"deny", "ask", true, "ask"},
		{"ask", "deny", false, "deny"},
		{"allow", "ask", false, "ask"},
	} {
		rules, cwd := runokLayout(t, tc.trusted, map[string]string{
			"home/.config/runok/runok.yml": "defaults:\n  action: " + tc.user + "\nrules:\n  - allow: 'ls'\n",
			"home/proj/runok.yml":          "defaults:\n  action: " + tc.project + "\nrules:\n  - deny: 'rm *'\n",
		})
		if r := decide(t, rules, cwd, "curl https://example.com"); string(r.Decision) != tc.want {
			t.Errorf("user %s, project %s, trusted %v: %s, want %s (%+v)", tc.user, tc.project, tc.trusted, r.Decision, tc.want, r.Rules)
		}
	}
}

// The attacker is a model that wants rm to reach a file a <path:> deny
// rule protects, on a line whose rm the splitter places in another
// directory than the one bash runs it in: a list put in the background
// with & does not move the shell, and a cd that fails leaves it where it
// was. zot must place rm where bash runs it, or where it may run.
func TestRunokPathRulesFollowTheDirectoryBashRunsIn(t *testing.T) {
	t.Parallel()
	rules, cwd := runokLayout(t, true, map[string]string{
		"home/.config/runok/runok.yml": "definitions:\n  paths:\n    secret: [~/proj/sub/secret]\n" +
			"rules:\n  - allow: 'cd *'\n  - allow: 'cat'\n  - allow: 'rm *'\n  - allow: 'mv *'\n  - allow: 'true'\n  - deny: 'rm <path:secret>'\n",
	})
	if err := os.Mkdir(filepath.Join(cwd, "inner"), 0o755); err != nil {
		t.Fatal(err)
	}
	for line, want := range map[string]string{
		"rm secret":                              "deny",
		"cd inner && rm ../secret":               "deny",
		"cd inner && rm secret":                  "allow",
		"cd inner && true & rm secret":           "deny",
		"F=x && true & rm secret$F":              "ask",
		"mv inner gone; cd inner; rm secret":     "deny",
		"rm -r inner; cd inner || rm secret":     "deny",
		"cat <<EOF; cd inner\n$(rm secret)\nEOF": "deny",
	} {
		if r := decide(t, rules, cwd, line); string(r.Decision) != want {
			t.Errorf("%q: %s, want %s (%+v %q)", line, r.Decision, want, r.Rules, r.Unfollowed)
		}
	}
}

// The attacker is a model that shapes a command so that a deny rule reads
// it otherwise than the program does: a flag that takes the next word
// (git -C . push) or that some other rule gives a value, a glob written
// from the working directory (cd /etc && cat sha*), the same flag given twice (curl takes the last), a path through
// a link and back (link/..), a -- before the operand. A deny or an ask
// rule matches the wider way.
func TestRunokDenyRulesMatchTheWiderWay(t *testing.T) {
	t.Parallel()
	fs := t.TempDir()
	secret := filepath.Join(fs, "etc", "shadow")
	if err := os.MkdirAll(filepath.Join(fs, "etc", "ssl"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(secret, []byte("secret\n"), 0o600)
	os.Mkdir(filepath.Join(fs, "tmp"), 0o755)
	if err := os.Symlink(filepath.Join(fs, "etc", "ssl"), filepath.Join(fs, "tmp", "lnk")); err != nil {
		t.Fatal(err)
	}
	throughLink := filepath.Join(fs, "tmp", "lnk") + "/../shadow"
	for name, tc := range map[string]struct {
		config string
		lines  map[string]string
	}{
		"a flag that may take the next word": {
			"rules:\n  - allow: 'git *'\n  - deny: 'git push *'\n  - allow: 'mkdir -p build'\n",
			map[string]string{"git -p push origin HEAD:main": "deny", "git -p log": "allow", "git push": "deny",
				"git -C . push": "deny", "git -c a=b push": "deny", "git --git-dir .git push": "deny", "git -C . log": "allow"},
		},
		"a flag given twice": {
			"definitions:\n  flag_groups:\n    post: '-X|--request POST'\nrules:\n  - allow: 'curl *'\n  - deny: 'curl <flag:post> *'\n",
			map[string]string{"curl -X GET -X POST http://h/": "deny", "curl --request GET --request POST http://h/": "deny",
				"curl -X GET http://h/": "allow", "curl -X POST http://h/": "deny"},
		},
		"a glob or a variable written from the working directory": {
			"definitions:\n  paths:\n    secrets: ['" + secret + "']\n" +
				"rules:\n  - allow: 'cat *'\n  - allow: 'cd *'\n  - deny: 'cat <path:secrets> *'\n",
			map[string]string{"cd " + filepath.Dir(secret) + " && cat sha*": "ask", "cd " + filepath.Dir(secret) + " && cat ./shad?w": "ask",
				"cd " + filepath.Dir(secret) + ` && cat ./"$f"`: "ask", "cd " + filepath.Dir(secret) + " && cat host*": "allow", "cat " + filepath.Dir(secret) + "/sha*": "ask"},
		},
		"an end of options": {
			"rules:\n  - allow: 'rm *'\n  - deny: 'rm -rf /'\n",
			map[string]string{"rm -rf -- /": "deny", "rm -rf /": "deny", "rm -rf -- build": "allow"},
		},
		"a path through a link and back": {
			"definitions:\n  paths:\n    secrets: ['" + secret + "']\n  vars:\n    secret:\n      type: path\n      values: ['" + secret + "']\n" +
				"rules:\n  - allow: 'cat *'\n  - allow: 'tac *'\n  - deny: 'cat <path:secrets> *'\n  - deny: 'tac <var:secret> *'\n",
			map[string]string{"cat " + throughLink: "deny", "tac " + throughLink: "deny", "cat " + secret: "deny", "cat /etc/hostname": "allow"},
		},
	} {
		rules, cwd := runokRulesFor(t, name, tc.config)
		for line, want := range tc.lines {
			if r := decide(t, rules, cwd, line); string(r.Decision) != want {
				t.Errorf("%s: %q: %s, want %s (%+v)", name, line, r.Decision, want, r.Rules)
			}
		}
	}
}
