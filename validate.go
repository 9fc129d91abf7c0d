package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Command validators (seed 002, runok-compatible): programs asked about each
// simple command of a bash call before it runs. One process per question:
// zot writes one JSON-RPC 2.0 validateCommand request to its stdin, closes
// it, and reads one response from its stdout; stderr goes to /dev/null. The
// answer is allow, deny or ask; a validator that fails in any way — cannot
// start, times out, prints garbage, answers with a JSON-RPC error or an
// unknown status — counts as ask, so a broken validator never silently
// allows. The splitter that finds the simple commands is in
// validate_shell.go.

// Validator is one configured validator.
type Validator struct {
	Name     string        `json:"name"`
	Argv     []string      `json:"argv"`               // the executor, split, relative paths resolved
	Commands []string      `json:"commands,omitempty"` // base command names it is asked about; none: every command
	Env      []string      `json:"env,omitempty"`      // variables passed in params.env
	Timeout  time.Duration `json:"-"`
	Source   string        `json:"source"` // the validators.json it came from
	// Check, when set, is asked before every start: an error (the program
	// or a file it runs changed since it was trusted) is a failure, and so
	// an ask, and nothing is started.
	Check func() error `json:"-"`
}

const (
	validatorDefaultTimeout = 5 * time.Second
	validatorMaxTimeout     = 600 * time.Second
	validatorMaxConfig      = 1 << 20 // bytes of validators.json
	validatorMaxResponse    = 1 << 20 // bytes of one response
	validatorMaxText        = 4 << 10 // bytes of a message or fix suggestion shown
	validatorParallel       = 4       // validator processes at once for one line
	validateMaxLine         = 1 << 20 // bytes of a command line zot validate reads from stdin
	// splitterAnswer names the answer zot itself gives about a line it
	// could not follow; validator names may not start with "zot:".
	splitterAnswer = "zot:splitter"
)

// validatorFiles are where validators are configured; both apply, the
// user's first.
func validatorFiles(home, cwd string) []string {
	return []string{filepath.Join(home, "validators.json"), filepath.Join(cwd, ".zot", "validators.json")}
}

// LoadValidators reads the validators that apply in cwd. A file or entry
// that is wrong is reported through warn, naming the file, the entry and
// the field, and skipped; the others still apply.
func LoadValidators(home, cwd string, warn func(msg string)) []Validator {
	return loadValidatorFiles(validatorFiles(home, cwd), warn)
}

// loadValidatorFiles is LoadValidators for the files its host chose (the
// wiring leaves out the file of a project the user has not trusted).
func loadValidatorFiles(files []string, warn func(msg string)) []Validator {
	var vs []Validator
	seen := map[string]bool{}
	for _, path := range files {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if seen[path] { // $ZOT_HOME is ./.zot
			continue
		}
		seen[path] = true
		data, err := readValidatorFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			warn(fmt.Sprintf("%v; no validator from this file applies", err))
			continue
		}
		vs = append(vs, parseValidators(path, data, warn)...)
	}
	return vs
}

func readValidatorFile(path string) ([]byte, error) {
	return readUntrustedFile(path, validatorMaxConfig)
}

// parseValidators reads the entries of one validators.json.
func parseValidators(path string, data []byte, warn func(string)) []Validator {
	var entries []json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		warn(fmt.Sprintf("%s: want a JSON list of validators ([{\"name\": …, \"executor\": …}]): %v; no validator from this file applies", path, err))
		return nil
	}
	var vs []Validator
	names := map[string]bool{}
	for i, raw := range entries {
		v, unknown, err := parseValidatorEntry(raw, filepath.Dir(path))
		where := fmt.Sprintf("%s: entry %d", path, i+1)
		if v.Name != "" {
			where += fmt.Sprintf(" (%q)", v.Name)
		}
		for _, k := range unknown {
			warn(fmt.Sprintf("%s: unknown field %q ignored (fields: name, executor, commands, env, timeout_ms)", where, k))
		}
		if err == nil && names[v.Name] {
			err = errors.New(`field "name": another entry of this file has that name`)
		}
		if err != nil {
			warn(fmt.Sprintf("%s: %v; entry skipped", where, err))
			continue
		}
		names[v.Name] = true
		v.Source = path
		vs = append(vs, v)
	}
	return vs
}

// parseValidatorEntry checks one entry; relative paths in its executor
// resolve against dir.
func parseValidatorEntry(raw json.RawMessage, dir string) (v Validator, unknown []string, err error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return v, nil, errors.New("want an object {\"name\": …, \"executor\": …}")
	}
	for k := range fields {
		switch k {
		case "name", "executor", "commands", "env", "timeout_ms":
		default:
			unknown = append(unknown, k)
		}
	}
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("field %q: %s", field, fmt.Sprintf(format, args...))
	}
	var name, executor string
	if json.Unmarshal(fields["name"], &name) != nil || strings.TrimSpace(name) == "" {
		return v, unknown, bad("name", "want a non-empty string")
	}
	if len(name) > 64 || validatorText(name) != name || strings.ContainsAny(name, "\n\r\t") {
		return v, unknown, bad("name", "want at most 64 characters on one line without control characters")
	}
	v.Name = name
	if strings.HasPrefix(name, "zot:") {
		return v, unknown, bad("name", "names starting with \"zot:\" are zot's own")
	}
	if json.Unmarshal(fields["executor"], &executor) != nil || strings.TrimSpace(executor) == "" {
		return v, unknown, bad("executor", "want a non-empty string: the program and its arguments, e.g. \"python3 ./checks/no_post.py\"")
	}
	argv, err := splitExecutor(executor)
	if err != nil {
		return v, unknown, bad("executor", "%v", err)
	}
	v.Argv = resolveExecutor(argv, dir)
	if raw, ok := fields["commands"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &v.Commands) != nil {
			return v, unknown, bad("commands", "want a list of command names, e.g. [\"curl\", \"git\"]")
		}
		for _, c := range v.Commands {
			if c == "" || strings.ContainsAny(c, "/ \t\n") {
				return v, unknown, bad("commands", "%q is not a base command name (write \"curl\", not \"/usr/bin/curl\")", c)
			}
		}
	}
	if raw, ok := fields["env"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &v.Env) != nil {
			return v, unknown, bad("env", "want a list of environment variable names, e.g. [\"AWS_PROFILE\"]")
		}
		for _, e := range v.Env {
			if _, n := assignmentName(e + "="); n != len(e)+1 {
				return v, unknown, bad("env", "%q is not an environment variable name", e)
			}
		}
	}
	v.Timeout = validatorDefaultTimeout
	if raw, ok := fields["timeout_ms"]; ok && string(raw) != "null" {
		var ms float64
		if json.Unmarshal(raw, &ms) != nil || ms != float64(int64(ms)) || ms < 1 || ms > float64(validatorMaxTimeout/time.Millisecond) {
			return v, unknown, bad("timeout_ms", "want a whole number of milliseconds from 1 to %d, got %s", validatorMaxTimeout/time.Millisecond, raw)
		}
		v.Timeout = time.Duration(ms) * time.Millisecond
	}
	return v, unknown, nil
}

// splitExecutor splits an executor string the way a shell splits words —
// whitespace separates, '…' and "…" quote, backslash escapes — without
// running a shell or expanding anything.
func splitExecutor(s string) ([]string, error) {
	var words []string
	var b strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\r':
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		case '\\':
			if i+1 >= len(s) {
				return nil, errors.New("ends with a lone backslash")
			}
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			inWord = true
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("a single quote is not closed")
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case '"':
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				b.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New("a double quote is not closed")
			}
			inWord = true
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, b.String())
	}
	if len(words) == 0 {
		return nil, errors.New("names no program")
	}
	return words, nil
}

// resolveExecutor makes relative paths absolute against the config file's
// directory: the program when it contains a slash (./check.sh, bin/check),
// an argument when it starts with ./ or ../. A bare program name is looked
// up in $PATH.
func resolveExecutor(argv []string, dir string) []string {
	out := append([]string(nil), argv...)
	for i, a := range out {
		rel := strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../")
		if i == 0 {
			rel = strings.Contains(a, "/") && !filepath.IsAbs(a)
		}
		if rel {
			out[i] = filepath.Join(dir, a)
		}
	}
	return out
}

// appliesTo reports whether the validator is asked about a command. Where
// file names ignore case, so does the match: RM runs rm.
func (v Validator) appliesTo(command string, foldCase bool) bool {
	if len(v.Commands) == 0 {
		return true
	}
	for _, c := range v.Commands {
		if c == command || foldCase && strings.EqualFold(c, command) {
			return true
		}
	}
	return false
}

// foldCommandNames is set where the default file systems ignore case
// (macOS, Windows): there command names are matched without it.
var foldCommandNames = runtime.GOOS == "darwin" || runtime.GOOS == "windows"

// ValidateParams are the params of a validateCommand request.
type ValidateParams struct {
	Command        string            `json:"command"`
	Flags          map[string]string `json:"flags"`
	Args           []string          `json:"args"`
	RawCommandLine string            `json:"raw_command_line"`
	Env            map[string]string `json:"env"`
	Cwd            string            `json:"cwd"`
}

type validateRequest struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      int            `json:"id"`
	Method  string         `json:"method"`
	Params  ValidateParams `json:"params"`
}

type validateResponse struct {
	Result *struct {
		Status        *string `json:"status"`
		Message       string  `json:"message"`
		FixSuggestion string  `json:"fix_suggestion"`
	} `json:"result"`
	Error *struct {
		Code    json.Number `json:"code"`
		Message string      `json:"message"`
	} `json:"error"`
}

// ValidatorReply is one validator's answer about one command. Failure, when
// set, says how the validator failed; Status is then ask.
type ValidatorReply struct {
	Status        GateDecision `json:"status"` // allow, deny or ask
	Message       string       `json:"message,omitempty"`
	FixSuggestion string       `json:"fix_suggestion,omitempty"`
	Failure       string       `json:"failure,omitempty"`
}

// Ask runs the validator once about one command. The process gets a
// session of its own (startProc); once its answer is read — or the timeout
// passes, or ctx ends — the whole session is killed and the validator
// reaped, so nothing it started outlives the question.
func (v Validator) Ask(ctx context.Context, p ValidateParams) ValidatorReply {
	failed := func(format string, args ...any) ValidatorReply {
		how := validatorText(fmt.Sprintf(format, args...))
		return ValidatorReply{Status: DecisionAsk, Message: fmt.Sprintf("validator %q failed: %s", v.Name, how), Failure: how}
	}
	if v.Check != nil {
		if err := v.Check(); err != nil {
			return failed("%v", err)
		}
	}
	req, err := json.Marshal(validateRequest{JSONRPC: "2.0", ID: 1, Method: "validateCommand", Params: p})
	if err != nil {
		return failed("encode the request: %v", err)
	}
	spec := procSpec{argv: v.Argv, env: envNoSecrets, stdin: streamPipe, stdout: streamPipe} // stderr: /dev/null
	if st, err := os.Stat(p.Cwd); err == nil && st.IsDir() {
		spec.dir = p.Cwd
	}
	proc, err := startProc(spec)
	if err != nil {
		return failed("could not start %s: %v", v.Argv[0], err)
	}
	inW, outR := proc.stdin, proc.stdout
	kill := func() { proc.Stop(0) }

	runCtx, cancel := context.WithTimeout(ctx, v.Timeout)
	defer cancel()
	// At the deadline: kill the session and unblock the read below.
	timerDone := make(chan struct{})
	stopTimer := context.AfterFunc(runCtx, func() {
		defer close(timerDone)
		kill()
		outR.SetReadDeadline(time.Now())
	})
	wrote := make(chan struct{})
	// Writes the request. Ends when it is written, or when inW is closed
	// below after the answer: a validator need not read its stdin.
	go func() {
		defer close(wrote)
		inW.Write(req)
		inW.Close()
	}()

	out := &countingReader{r: io.LimitReader(outR, validatorMaxResponse)}
	var resp validateResponse
	decodeErr := json.NewDecoder(out).Decode(&resp)
	if !stopTimer() {
		<-timerDone // it is killing the session: let it finish before the reap
	}
	kill()
	inW.Close()
	outR.Close()
	_, waitErr := proc.Reap()
	<-wrote

	switch {
	case decodeErr == nil:
	case ctx.Err() != nil:
		return failed("zot stopped waiting for it (%v)", ctx.Err())
	case runCtx.Err() != nil:
		return failed("no answer within %v; killed it", v.Timeout)
	case out.n >= validatorMaxResponse:
		return failed("answered with more than %d bytes", validatorMaxResponse)
	case errors.Is(decodeErr, io.EOF):
		status := "exit status 0"
		if waitErr != nil {
			status = waitErr.Error()
		}
		return failed("exited without answering (%s)", status)
	default:
		return failed("invalid response: not a JSON-RPC response: %v", decodeErr)
	}
	switch {
	case resp.Error != nil:
		return failed("invalid response: JSON-RPC error %s: %s", resp.Error.Code, resp.Error.Message)
	case resp.Result == nil:
		return failed("invalid response: no \"result\"")
	case resp.Result.Status == nil:
		return failed("invalid response: the result has no \"status\"")
	}
	r := ValidatorReply{
		Status:        GateDecision(*resp.Result.Status),
		Message:       validatorText(resp.Result.Message),
		FixSuggestion: validatorText(resp.Result.FixSuggestion),
	}
	switch r.Status {
	case DecisionAllow, DecisionDeny, DecisionAsk:
	default:
		r.Failure = validatorText(fmt.Sprintf("unknown status %q (want allow, deny or ask)", r.Status))
		r.Status = DecisionAsk
		msg := fmt.Sprintf("validator %q answered with an %s", v.Name, r.Failure)
		if r.Message != "" {
			msg += ": " + r.Message
		}
		r.Message = msg
	}
	return r
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// validatorText makes text a validator printed safe to show and cuts it at
// validatorMaxText bytes. Seed 002 asks that control characters be
// stripped; sanitize shows them as pictures instead, so the user sees that
// something was there (docs/security.md).
func validatorText(s string) string {
	return truncate(sanitize(s), validatorMaxText)
}

// ValidationReport is what the validators said about one command line.
type ValidationReport struct {
	Line     string             `json:"command_line"`
	Cwd      string             `json:"cwd"`
	Commands []ValidatedCommand `json:"commands"`
	Answers  []ValidatorAnswer  `json:"answers"`
	Decision GateDecision       `json:"decision"` // allow, deny or ask
	// Incomplete is set when the splitter could not follow all of the line;
	// Unfollowed says what it could not follow. With validators or rules
	// configured the decision is then at least ask.
	Incomplete bool     `json:"incomplete,omitempty"`
	Unfollowed []string `json:"unfollowed,omitempty"`
	// Rules are the rule sources' answers (permissions.go), per command.
	Rules []RuleAnswer `json:"rules,omitempty"`
}

// ValidatedCommand is one simple command of the line, as validators see it
// (params.env aside: each validator gets the variables it names).
type ValidatedCommand struct {
	Raw      string            `json:"raw"`
	Via      string            `json:"via,omitempty"`
	Cwd      string            `json:"cwd"` // "" when zot cannot tell
	Command  string            `json:"command"`
	Flags    map[string]string `json:"flags"`
	Args     []string          `json:"args"`
	Assigned map[string]string `json:"assigned,omitempty"` // VAR=value set for it in the line
}

// ValidatorAnswer is one validator's reply about one command (an index
// into Commands; -1 for the line as a whole).
type ValidatorAnswer struct {
	Validator string `json:"validator"`
	Command   int    `json:"command"`
	ValidatorReply
}

// CheckCommandLine asks every validator that applies about every simple
// command of line and combines the answers: deny beats ask beats allow;
// with nothing to ask, the line is allowed. The line is read as the bash
// tool's shell will read it, starting in cwd.
func CheckCommandLine(ctx context.Context, vs []Validator, line, cwd string) ValidationReport {
	return CheckCommandLineRules(ctx, vs, nil, line, cwd)
}

// CheckCommandLineRules is CheckCommandLine with the permission rules
// (nil: none) asked beside the validators.
func CheckCommandLineRules(ctx context.Context, vs []Validator, rules *PermissionRules, line, cwd string) ValidationReport {
	sc := ShellContext{Bash: bashToolShell().Bash, Cwd: cwd, Getenv: os.Getenv, FoldCase: foldCommandNames}
	return checkCommandLine(ctx, vs, rules, line, sc)
}

func checkCommandLine(ctx context.Context, vs []Validator, rules *PermissionRules, line string, sc ShellContext) ValidationReport {
	split, ruleCmds := splitForRules(line, sc)
	shellEnv, _ := envNoSecrets.environ() // the bash tool's environment
	unfollowed := append(shellStartupProblems(shellEnv), split.Unfollowed...)
	r := ValidationReport{Line: line, Cwd: sc.Cwd, Commands: []ValidatedCommand{}, Answers: []ValidatorAnswer{}, Decision: DecisionAllow,
		Incomplete: len(unfollowed) > 0, Unfollowed: unfollowed}
	sourcing := false
	for _, c := range split.Commands {
		flags, args := commandFlags(c.Name, c.Words[1:])
		r.Commands = append(r.Commands, ValidatedCommand{Raw: c.Raw, Via: c.Via, Cwd: c.Cwd, Command: c.Name, Flags: flags, Args: args, Assigned: c.Env})
		sourcing = sourcing || c.Name == "source" || c.Name == "." || c.Name == "eval"
	}
	if rules.Active() {
		budget := newRuleBudget()
		for i, rc := range ruleCmds {
			r.Rules = append(r.Rules, rules.commandAnswers(rc, i, sc, sourcing, budget)...)
		}
	}

	// One process per distinct question: echo a; echo a asks once.
	type job struct {
		v      Validator
		params ValidateParams
		reply  ValidatorReply
	}
	var jobs []*job
	var answerJob []*job // the job that answers r.Answers[i]
	byKey := map[string]*job{}
	for i, c := range r.Commands {
		for _, v := range vs {
			if !v.appliesTo(c.Command, sc.FoldCase) {
				continue
			}
			dir := c.Cwd
			if dir == "" {
				dir = sc.Cwd // unknown: the line asks anyway
			}
			p := ValidateParams{Command: c.Command, Flags: c.Flags, Args: c.Args, RawCommandLine: line, Env: map[string]string{}, Cwd: dir}
			for _, name := range v.Env {
				if val, ok := c.Assigned[name]; ok {
					p.Env[name] = val
				} else if val, ok := os.LookupEnv(name); ok && !isSecretEnv(name) {
					p.Env[name] = val
				}
			}
			key, _ := json.Marshal(p)
			k := v.Source + "\x00" + v.Name + "\x00" + string(key)
			j := byKey[k]
			if j == nil {
				j = &job{v: v, params: p}
				byKey[k] = j
				jobs = append(jobs, j)
			}
			r.Answers = append(r.Answers, ValidatorAnswer{Validator: v.Name, Command: i})
			answerJob = append(answerJob, j)
		}
	}
	sem := make(chan struct{}, validatorParallel)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		// Owned by CheckCommandLine, which waits for it; it ends when the
		// validator has answered or its timeout has killed it.
		go func(j *job) {
			defer wg.Done()
			j.reply = j.v.Ask(ctx, j.params)
			<-sem
		}(j)
	}
	wg.Wait()
	for i, j := range answerJob {
		r.Answers[i].ValidatorReply = j.reply
	}
	if r.Incomplete && (len(vs) > 0 || rules.Active()) {
		r.Answers = append(r.Answers, ValidatorAnswer{Validator: splitterAnswer, Command: -1, ValidatorReply: ValidatorReply{
			Status:  DecisionAsk,
			Message: validatorText("zot cannot tell everything this line runs, so validators and rules may not have seen all of it: " + strings.Join(unfollowed, "; ")),
		}})
	}
	for i, c := range split.Commands {
		// A validator judges the words as written; where some are known
		// only at run time its allow is not about what will run. echo,
		// printf, test … run nothing they are given.
		if c.Exact || quietCommands[c.Name] || !slices.ContainsFunc(vs, func(v Validator) bool { return v.appliesTo(c.Name, sc.FoldCase) }) {
			continue
		}
		what := shapedCommand{words: c.Words, shapes: c.Shapes, open: c.Open}.unknownWhat()
		r.Answers = append(r.Answers, ValidatorAnswer{Validator: splitterAnswer, Command: i, ValidatorReply: ValidatorReply{
			Status:  DecisionAsk,
			Message: validatorText("validators are asked about the words as written, and " + what + ", so zot asks"),
		}})
	}
	for _, a := range r.Answers {
		r.Decision = WorseDecision(r.Decision, a.Status)
	}
	for _, a := range r.Rules {
		r.Decision = WorseDecision(r.Decision, a.Status)
	}
	return r
}

// ValidatorStage is the validators' place among the tool gates: after the
// interceptors and hooks, so that they see the command as rewritten.
var ValidatorStage = Stage{Name: "validators", Order: OrderPolicy}

// ValidatorGate is the ToolGate that asks the validators about bash calls;
// other tools pass, and so does everything when there are no validators.
// PermissionGate is the same gate with the permission rules beside the
// validators.
func ValidatorGate(vs []Validator, cwd string) ToolGate {
	return PermissionGate(vs, nil, cwd)
}

// worstBy is each key's worst answer, and the keys in the order they
// first answered: one note per validator or rule source.
func worstBy[A any](answers []A, keyOf func(A) (string, GateDecision)) ([]string, map[string]A) {
	var order []string
	worst := map[string]A{}
	for _, a := range answers {
		k, d := keyOf(a)
		w, seen := worst[k]
		if !seen {
			order = append(order, k)
			worst[k] = a
			continue
		}
		if _, wd := keyOf(w); WorseDecision(wd, d) != wd {
			worst[k] = a
		}
	}
	return order, worst
}

// gateResult turns a report into a gate's answer: one note per validator
// and per rule source (its worst answer over the line's commands), for the
// audit trail and the confirm dialog; on deny, a reason the model can act
// on.
func (r ValidationReport) gateResult() GateResult {
	var res GateResult
	order, worst := worstBy(r.Answers, func(a ValidatorAnswer) (string, GateDecision) { return a.Validator, a.Status })
	var denials []string
	for _, name := range order {
		a := worst[name]
		by := "validator:" + name
		if name == splitterAnswer {
			by = name
		}
		res.Notes = append(res.Notes, GateNote{By: by, Decision: a.Status, Reason: r.explain(a)})
		if a.Status == DecisionDeny {
			denials = append(denials, fmt.Sprintf("validator %q denied it: %s", name, r.explain(a)))
		}
	}
	sources, worstRule := worstBy(r.Rules, func(a RuleAnswer) (string, GateDecision) { return a.Source, a.Status })
	for _, src := range sources {
		a := worstRule[src]
		why := r.explainRule(a)
		res.Notes = append(res.Notes, GateNote{By: "rules:" + src, Decision: a.Status, Reason: why, AllowEnds: r.defaultAsk(src)})
		if a.Status == DecisionDeny {
			denials = append(denials, "denied by "+why)
		}
	}
	// Anything but allow and ask denies: a decision zot does not know is
	// not a reason to run the command.
	switch r.Decision {
	case DecisionAllow:
	case DecisionAsk:
		res.Verdict = GateAsk
	case DecisionDeny:
		res.Verdict = GateDeny
		res.Reason = "not run: " + strings.Join(denials, "\n")
	default:
		res.Verdict = GateDeny
		res.Reason = fmt.Sprintf("not run: the validators' decision %q is not one zot knows", r.Decision)
	}
	return res
}

// explainRule is a rule source's answer as a person or the model reads
// it, with the simple command it was about when the line has several.
func (r ValidationReport) explainRule(a RuleAnswer) string {
	s := explainRule(a)
	if len(r.Commands) > 1 && a.Command >= 0 && a.Command < len(r.Commands) {
		s += "\ncommand: " + validatorText(r.Commands[a.Command].Raw)
	}
	return s
}

// defaultAsk says whether source's asks all came from Claude Code's
// default mode, no rule matching: the asks an allow rule ends. runok's
// default is runok's own decision, which a Claude Code allow does not
// override, so it is not one.
func (r ValidationReport) defaultAsk(source string) bool {
	asked := false
	for _, a := range r.Rules {
		if a.Source != source || GateDecision(a.Status) != DecisionAsk {
			continue
		}
		if a.Source != claudeCodeSource || a.Rule != "" {
			return false
		}
		asked = true
	}
	return asked
}

// explain is an answer as a person or the model reads it: the message,
// then "suggested fix: …", then the simple command it was about when the
// line has several. The TUI's confirm dialog shows it as it is.
func (r ValidationReport) explain(a ValidatorAnswer) string {
	var lines []string
	if a.Message != "" {
		lines = append(lines, a.Message)
	} else {
		lines = append(lines, "(no message)")
	}
	if a.FixSuggestion != "" {
		lines = append(lines, "suggested fix: "+a.FixSuggestion)
	}
	if len(r.Commands) > 1 && a.Command >= 0 && a.Command < len(r.Commands) {
		lines = append(lines, "command: "+validatorText(r.Commands[a.Command].Raw))
	}
	return strings.Join(lines, "\n")
}

// NonInteractiveConfirm answers confirmations in -p, --json and rpc modes,
// where nobody can be asked: no, unless --approve-asks was given.
func NonInteractiveConfirm(approveAsks bool) ConfirmFunc {
	return func(ctx context.Context, call ToolCall, asks []GateNote) (bool, string) {
		if approveAsks {
			return true, "--approve-asks"
		}
		return false, "non-interactive mode (pass --approve-asks to allow)"
	}
}

var validateUsage = commandHelp{
	name:  "zot validate",
	about: "ask the command validators and permission rules about a command line without running it",
	usage: "zot validate [--json] [--cwd DIR] -- COMMAND LINE\n  zot validate [--json] [--cwd DIR] < script.sh\n  zot validate --check [--json] [--cwd DIR]",
	notes: `Asks the validators configured in $ZOT_HOME/validators.json and
./.zot/validators.json, and the permission rules of Claude Code's settings
files and runok.yml (docs/permissions.md), about a command line without
running it, and prints the simple commands found, each validator's answer,
which rule of which file decided for each command, and the decision.
Several words after -- are the words of one command, as the shell passed
them: zot validate -- git commit -m "fix bug". One word is a whole command
line, read as the shell would: zot validate -- 'curl -H "A: b" x | jq .'

--check reads the files without a command line and reports what is wrong
with them: files that cannot be read, rules that can never match, rules
zot does not apply.

Exit status: 0 allow, 1 deny, 3 ask, 2 usage error; with --check, 0 when
nothing is wrong and 1 when something is.
`,
}

// commandLineOf makes the command line of zot validate's words. One word is
// the line as typed ('curl x | jq .'); several are the words of one
// command, each quoted as needed, so that "fix bug" stays one word.
func commandLineOf(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = shellQuote(w)
	}
	return strings.Join(quoted, " ")
}

// exitAsk is zot validate's exit status for a line a validator asks about.
const exitAsk = 3

// runValidateCommand is zot validate. load reads the validators and the
// rules it may ask (main.go decides, as for a session).
func runValidateCommand(args []string, load func(home, cwd string, warn func(string)) ([]Validator, *PermissionRules), stdin io.Reader, stdout, stderr io.Writer) int {
	var asJSON, check bool
	var cwds []string
	words, err := subcommandArgs(args, map[string]*bool{"--json": &asJSON, "--check": &check}, map[string]*[]string{"--cwd": &cwds})
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "zot validate: %v (put the command line after --)\n%s", err, validateUsage.text(""))
		return exitUsage
	case check && len(words) > 0:
		fmt.Fprint(stderr, "zot validate: --check takes no command line\n"+validateUsage.text(""))
		return exitUsage
	}
	cwd := lastOr(cwds, "")
	if check {
		return runValidateCheck(cwd, asJSON, load, stdout, stderr)
	}
	line := commandLineOf(words)
	if len(words) == 0 {
		if f, ok := stdin.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
				fmt.Fprint(stderr, "zot: no command line\n"+validateUsage.text(""))
				return exitUsage
			}
		}
		b, err := io.ReadAll(io.LimitReader(stdin, validateMaxLine+1))
		if err != nil {
			fmt.Fprintf(stderr, "zot: read the command line from stdin: %v\n", err)
			return exitFailure
		}
		if len(b) > validateMaxLine {
			// Checking the first part of a script would pass what follows it.
			fmt.Fprintf(stderr, "zot validate: the command line on stdin is longer than %d bytes; nothing was checked (split the script, or pass it after --)\n", validateMaxLine)
			return exitUsage
		}
		line = string(b)
	}
	if strings.TrimSpace(line) == "" {
		fmt.Fprint(stderr, "zot: no command line\n"+validateUsage.text(""))
		return exitUsage
	}
	cwd, err = workingDir(cwd)
	if err != nil {
		fmt.Fprintf(stderr, "zot validate: %v\n", err)
		return exitUsage
	}
	home := zotHome()
	var warnings []string
	vs, rules := load(home, cwd, func(msg string) {
		warnings = append(warnings, validatorText(msg))
		fmt.Fprintf(stderr, "zot: %s\n", validatorText(msg))
	})
	for _, p := range rules.StartupProblems() {
		fmt.Fprintf(stderr, "zot: %s\n", validatorText(p.String()))
	}
	ctx, stop := signalContext()
	defer stop()
	r := CheckCommandLineRules(ctx, vs, rules, line, cwd)

	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		views := []validatorView{}
		for _, v := range vs {
			views = append(views, validatorView{v, int64(v.Timeout / time.Millisecond)})
		}
		out := struct {
			ValidationReport
			Validators   []validatorView     `json:"validators"`
			ConfigErrors []string            `json:"config_errors"`
			RuleFiles    []string            `json:"rule_files,omitempty"`
			RuleProblems []PermissionProblem `json:"rule_problems,omitempty"`
		}{ValidationReport: r, Validators: views, ConfigErrors: append([]string{}, warnings...)}
		if rules != nil {
			out.RuleFiles, out.RuleProblems = rules.Files, rules.StartupProblems()
		}
		enc.Encode(out)
	} else {
		writeValidationReport(stdout, r, vs, rules, validatorFiles(home, cwd))
	}
	switch r.Decision {
	case DecisionAllow:
		return exitOK
	case DecisionAsk:
		return exitAsk
	}
	return exitFailure // deny, or a decision zot does not know
}

// validatorView is a validator as zot validate --json shows it.
type validatorView struct {
	Validator
	TimeoutMS int64 `json:"timeout_ms"`
}

// writeValidationReport prints a report for a person; everything from the
// line, a validator or a rules file is sanitised first.
func writeValidationReport(w io.Writer, r ValidationReport, vs []Validator, rules *PermissionRules, files []string) {
	safe := validatorText
	indent := func(s, pad string) string { return strings.ReplaceAll(s, "\n", "\n"+pad) }
	fmt.Fprintf(w, "command line: %s\n", indent(safe(r.Line), "              "))
	if len(vs) == 0 {
		fmt.Fprintf(w, "no validators configured (looked in %s)\n", strings.Join(files, " and "))
	}
	if rules.Active() {
		fmt.Fprintf(w, "permission rules from %s\n", safe(strings.Join(rules.Files, ", ")))
	}
	if len(r.Commands) == 0 {
		fmt.Fprintln(w, "no simple commands found")
	}
	for i, c := range r.Commands {
		fmt.Fprintf(w, "\n%d. %s\n", i+1, indent(safe(c.Raw), "   "))
		if c.Via != "" {
			fmt.Fprintf(w, "   via %s\n", safe(c.Via))
		}
		switch c.Cwd {
		case r.Cwd:
		case "":
			fmt.Fprintln(w, "   in a directory zot cannot tell")
		default:
			fmt.Fprintf(w, "   in %s\n", safe(c.Cwd))
		}
		flags, _ := json.Marshal(c.Flags)
		args, _ := json.Marshal(c.Args)
		fmt.Fprintf(w, "   command %s  flags %s  args %s\n", safe(c.Command), safe(string(flags)), safe(string(args)))
		asked := false
		for _, a := range r.Answers {
			if a.Command != i {
				continue
			}
			asked = true
			fmt.Fprintf(w, "   %s: %s", safe(a.Validator), a.Status)
			if a.Message != "" {
				fmt.Fprintf(w, " — %s", indent(a.Message, "     "))
			}
			if a.FixSuggestion != "" {
				fmt.Fprintf(w, "\n     suggested fix: %s", indent(a.FixSuggestion, "     "))
			}
			fmt.Fprintln(w)
		}
		if !asked && len(vs) > 0 {
			fmt.Fprintln(w, "   (no validator applies)")
		}
		for _, a := range r.Rules {
			if a.Command == i {
				fmt.Fprintf(w, "   %s: %s — %s\n", a.Source, a.Status, indent(ruleWhere(a), "     "))
				if a.Message != "" {
					fmt.Fprintf(w, "     %s\n", indent(safe(a.Message), "     "))
				}
				if a.FixSuggestion != "" {
					fmt.Fprintf(w, "     suggested fix: %s\n", indent(safe(a.FixSuggestion), "     "))
				}
			}
		}
	}
	asked := false
	for _, a := range r.Answers {
		if a.Command < 0 {
			asked = true
			fmt.Fprintf(w, "\n%s: %s — %s\n", a.Validator, a.Status, a.Message)
		}
	}
	if !asked && len(r.Unfollowed) > 0 {
		fmt.Fprintf(w, "\nnot followed (with validators or rules configured, zot would ask): %s\n", safe(strings.Join(r.Unfollowed, "; ")))
	}
	fmt.Fprintf(w, "\ndecision: %s\n", r.Decision)
}

// ruleWhere says which rule of which file decided, or why none did.
func ruleWhere(a RuleAnswer) string {
	file := a.File
	if a.Line > 0 {
		file = fmt.Sprintf("%s:%d", a.File, a.Line)
	}
	var s string
	switch {
	case a.Rule != "":
		s = fmt.Sprintf("rule %s (%s)", a.Rule, file)
		if a.Note != "" {
			s += "; " + a.Note
		}
	case file != "":
		s = fmt.Sprintf("%s (%s)", a.Note, file)
	default:
		s = a.Note
	}
	return validatorText(s)
}

// runValidateCheck is zot validate --check: the files read, and what is
// wrong with them.
func runValidateCheck(cwd string, asJSON bool, load func(home, cwd string, warn func(string)) ([]Validator, *PermissionRules), stdout, stderr io.Writer) int {
	cwd, err := workingDir(cwd)
	if err != nil {
		fmt.Fprintf(stderr, "zot validate: %v\n", err)
		return exitUsage
	}
	home := zotHome()
	var warnings []string
	vs, rules := load(home, cwd, func(msg string) { warnings = append(warnings, validatorText(msg)) })
	var problems []PermissionProblem
	var files []string
	if rules != nil {
		problems, files = rules.Problems, rules.Files
	}
	bad := len(warnings) > 0
	for _, p := range problems {
		bad = bad || p.Level != problemNote
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		views := []validatorView{}
		for _, v := range vs {
			views = append(views, validatorView{v, int64(v.Timeout / time.Millisecond)})
		}
		enc.Encode(struct {
			Cwd          string              `json:"cwd"`
			Validators   []validatorView     `json:"validators"`
			ConfigErrors []string            `json:"config_errors"`
			RuleFiles    []string            `json:"rule_files"`
			RuleProblems []PermissionProblem `json:"rule_problems"`
			OK           bool                `json:"ok"`
		}{cwd, views, append([]string{}, warnings...), append([]string{}, files...), append([]PermissionProblem{}, problems...), !bad})
	} else {
		fmt.Fprintf(stdout, "validators: %d (%s)\n", len(vs), strings.Join(validatorFiles(home, cwd), ", "))
		for _, w := range warnings {
			fmt.Fprintf(stdout, "  %s\n", w)
		}
		if len(files) == 0 {
			fmt.Fprintln(stdout, "permission rules: none (no Claude Code settings with permissions, no runok.yml)")
		} else {
			fmt.Fprintf(stdout, "permission rules from:\n")
			for _, f := range files {
				fmt.Fprintf(stdout, "  %s\n", validatorText(f))
			}
		}
		for _, p := range problems {
			fmt.Fprintf(stdout, "%s: %s\n", p.Level, validatorText(p.String()))
		}
		if !bad {
			fmt.Fprintln(stdout, "ok: every file reads and every rule can match")
		}
	}
	if bad {
		return exitFailure
	}
	return exitOK
}
