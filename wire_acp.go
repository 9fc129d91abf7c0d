package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// zot acp's wiring: each ACP session is a setup of its own, in the
// session's directory, armed through arm like every other mode, with the
// editor as the one who answers the gates' questions (acp.go).

var acpUsage = commandHelp{
	name:  "zot acp",
	about: "zot as an Agent Client Protocol agent, for editors",
	usage: "zot acp [flags]",
	notes: `Speaks the Agent Client Protocol (version 1) on stdin and stdout, one
JSON-RPC message a line, and logs on stderr: an editor (Zed, a JetBrains IDE,
Neovim, acpx) starts it and drives it (docs/acp.md). It takes the flags of
zot (--provider, --model, --sandbox, --tools …; see zot --help) but no
prompt words, -p, --json, -c or -r: the editor opens and loads sessions.

Exit status: 0 when the editor closes stdin, 1 on a failure, 2 usage error,
130 interrupted.
`,
}

// runACP is `zot acp`: the agent on stdin and stdout until the editor
// closes stdin (exit 0, with every session's work stopped) or a signal.
func runACP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseFlags(args)
	switch {
	case err != nil:
		return failExit(stderr, err)
	case o.print || o.json || o.rpc:
		return failExit(stderr, usageError{"zot acp speaks its own protocol: drop -p/--print, --json and --rpc"})
	case len(o.prompt) > 0:
		return failExit(stderr, usageError{fmt.Sprintf("zot acp takes no prompt words (got %q): the editor sends the prompts", strings.Join(o.prompt, " "))})
	case o.continueLast || o.resume || o.sessionPath != "":
		return failExit(stderr, usageError{"zot acp: the editor opens sessions (session/load); drop -c, -r and --session"})
	case o.noYolo || o.approvalsStdin || o.approveAsks:
		return failExit(stderr, usageError{"zot acp: the editor answers the questions; drop --no-yolo, --approve-asks and --approvals-stdin"})
	}
	if o.cwd != "" {
		return failExit(stderr, usageError{"zot acp: each session's directory is the editor's (session/new's cwd); drop --cwd"})
	}
	home := zotHome()
	ctx, stop := signalContext()
	defer stop()
	defer context.AfterFunc(ctx, stop)()
	defer catchSIGPIPE()()
	out, release := rpcOutput(ctx, stdout)
	defer release()
	log := stderrLog(stderr)
	srv := newACPServer(acpConfig{
		Home:            home,
		Persist:         !o.noSession,
		ApprovalTimeout: o.approvalTimeout,
		Log:             log,
		MissingKey:      func() (string, string, bool) { return acpMissingKey(o, home) },
		Open: func(ctx context.Context, req acpOpenRequest) (*acpBackend, error) {
			return openACPSession(ctx, o, req, stderr)
		},
	}, out)
	err = srv.Serve(ctx, stdin)
	switch {
	case err == nil:
		return exitOK
	case ctx.Err() != nil:
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "zot acp: %s\n", sanitize(err.Error()))
	return exitFailure
}

// acpMissingKey says whether the provider has no key, as newSetup would
// find it: the provider and the variable that would hold one.
func acpMissingKey(o zotOptions, home string) (provider, envVar string, missing bool) {
	cfg, _ := loadConfig(home)
	ep, err := chooseEndpoint(o, cfg, home)
	if err != nil || ep.key != "" || ep.provider == "ollama" || ep.baseURL != "" {
		return "", "", false // newSetup reports what is wrong, if anything
	}
	return ep.provider, keyEnvVar(ep.provider), true
}

// newACPSetup is a session's setup: zot's options in the session's
// directory, its session file (a new one, or req.Path), the editor's MCP
// servers, and the permission mode the editor sets.
func newACPSetup(o zotOptions, req acpOpenRequest, stderr io.Writer) (*setup, error) {
	o.cwd, o.sessionPath = req.Cwd, req.Path
	o.modeDefault = ModeAsk // as the Claude Code and Codex adapters: ask before commands and edits
	s, err := newSetup(o, stderr)
	if err != nil {
		return nil, err
	}
	if err := s.openSession(true, nil); err != nil {
		s.close()
		return nil, err
	}
	for _, m := range req.MCP {
		s.editorMCP = append(s.editorMCP, editorMCPServer(m))
	}
	s.toolEnv.Editor = req.Files
	return s, nil
}

// editorMCPServer is an editor's MCP server as the MCP client takes it.
func editorMCPServer(m acpMCPServer) mcpServerConfig {
	return mcpServerConfig{Name: m.Name, slug: mcpSlug(m.Name), Source: "the editor (session/new)", Type: m.Type,
		Command: m.Command, RawCommand: m.Command, Args: m.Args, RawArgs: m.Args, Env: m.Env,
		URL: m.URL, RawURL: m.URL, Headers: m.Headers}
}

// acpHost is the host of an ACP session: notes on stderr (the editor
// shows the agent's stderr in its log), and the editor answers asks.
func acpHost(s *setup, req acpOpenRequest, stderr io.Writer) modeHost {
	return modeHost{name: "zot acp", ext: stderrExtHooks(stderr), mcpStatus: mcpStderrStatus(stderr), hookNote: hooksStderrNotes(stderr),
		confirm: s.sessionApprovals().Confirm(req.Ask), askPlan: func() approvalAsker { return req.Ask }, outside: func() bool { return true },
		elicit: req.Elicit, elicitRefusal: "the editor did not advertise elicitation in that mode (clientCapabilities.elicitation), so zot acp cannot ask its user"}
}

// openACPSession builds and arms one session's zot.
func openACPSession(ctx context.Context, o zotOptions, req acpOpenRequest, stderr io.Writer) (*acpBackend, error) {
	s, err := newACPSetup(o, req, stderr)
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			return nil, acpErrorf(acpInvalidParams, "%s", err.Error())
		}
		return nil, err
	}
	exts, stopPlugins, err := s.arm(ctx, acpHost(s, req, stderr))
	closeAll := func() {
		stopPlugins()
		s.close()
	}
	if err == nil {
		err = s.checkToolPatterns()
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	s.awaitMCPBeforeFirstTurn()
	b := &acpBackend{Agent: s.agent, Env: s.toolEnv, Session: s.session, Provider: s.provider, Close: closeAll,
		Notes: append(s.trustNotes(), s.notes...)}
	b.Modes = acpSessionModes(s)
	b.Mode = func() string { return string(s.modes.Current()) }
	b.SetMode = func(id string) error { return s.modes.Set(Mode(id)) }
	b.HearMode = func(f func(string)) { s.modes.Hear(func(m Mode) { f(string(m)) }) }
	prompts := s.prompts(func(msg string) { fmt.Fprintf(stderr, "zot: %s\n", sanitize(msg)) })
	for _, t := range prompts.List() {
		c := acpCommand{Name: t.Name, Description: cmp.Or(t.Description, "prompt template ("+t.Source+")")}
		if t.ArgumentHint != "" {
			c.Input = &acpCommandInput{Hint: t.ArgumentHint}
		}
		b.Commands = append(b.Commands, c)
	}
	for _, sk := range s.skills {
		b.Commands = append(b.Commands, acpCommand{Name: "skill:" + sk.Name, Description: cmp.Or(sk.Description, "skill"), Input: &acpCommandInput{Hint: "what to do with it"}})
	}
	b.Prompt = func(ctx context.Context, text string, blocks []Block, sink Sink) error {
		if name, args, ok := acpCommandCall(text); ok && strings.HasPrefix(name, "skill:") {
			if i := slices.IndexFunc(s.skills, func(sk Skill) bool { return "skill:"+sk.Name == name }); i >= 0 {
				sk := s.skills[i]
				text = fmt.Sprintf("Use the skill %q, which the user invoked. Its instructions:\n\n%s\n\nThe user's request: %s", sk.Name, sk.Body, cmp.Or(args, "(none)"))
			}
		}
		return prompts.Send(ctx, s.agent, text, blocks, TeeSinks(exts.Observe, sink))
	}
	if s.checkpoints != nil {
		b.Rewind = func(n int, force bool) (string, error) { return acpRewind(s, n, force) }
	}
	return b, nil
}

// acpSessionModes are zot's modes (modes.go) that the session can be in,
// as session modes: sandboxed-auto only where the kernel gives its
// sandbox, auto only where the managed settings allow it. Each says
// what its commands run in.
func acpSessionModes(s *setup) []acpMode {
	var modes []acpMode
	for _, m := range s.modes.Available() {
		desc := m.About()
		if c := s.modes.Confinement(m); c != "not confined" {
			desc += "; commands: " + c
		}
		modes = append(modes, acpMode{ID: string(m), Name: m.Name(), Description: desc})
	}
	return modes
}

// acpRewind undoes the last n prompts of the session: their files and
// the conversation, as /rewind in the TUI does.
func acpRewind(s *setup, n int, force bool) (string, error) {
	session, path := s.checkpointSession()
	points, err := s.checkpoints.PromptPoints(session)
	if err != nil {
		return "", err
	}
	if n > len(points) {
		return "", fmt.Errorf("there are %d prompts with checkpoints in this session, not %d", len(points), n)
	}
	p := points[len(points)-n]
	rw, err := s.checkpoints.RewindLive(s.agent, session, path, p.Checkpoint, true, true, ckRestoreOptions{Force: force})
	if errors.Is(err, errCheckpointConflict) {
		var names []string
		for _, c := range rw.Files.Conflicts {
			names = append(names, fmt.Sprintf("%s (%s)", c.Path, c.Why))
		}
		return "", fmt.Errorf("these files changed after zot recorded them, and restoring would overwrite those changes: %s; /rewind %d force overwrites them", strings.Join(names, "; "), n)
	}
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("Rewound to before %q.", truncate(oneLineText(p.Prompt), 80))
	if f := rw.Files; f != nil {
		msg += fmt.Sprintf(" Files restored: %d, removed: %d.", len(f.Written), len(f.Removed))
		if len(f.Errors) > 0 {
			msg += " Incomplete: " + strings.Join(f.Errors, "; ")
		}
		if f.Record != "" {
			msg += " (zot checkpoints restore " + f.Record + " undoes this.)"
		}
	}
	msg += " The conversation the model sees goes back too; your editor still shows the old messages."
	return msg, nil
}
