package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// zot mcp …: the command line a user inspects and debugs MCP servers with.
// It drives the client of mcp.go as a session does, and prints for a
// person or, with --json, for a script.

var mcpUsage = commandHelp{
	name:  "zot mcp",
	about: "inspect and debug MCP servers",
	subs: []subcommandHelp{
		{"list", "[--json]", "servers, transport, state, protocol revision, tool count", ""},
		{"tools", "NAME", "a server's tools with descriptions and input schemas", ""},
		{"call", "[--elicit accept|decline|cancel] NAME TOOL ['{json args}']", "call one tool and print the result", "The arguments are one JSON object, e.g. '{\"path\": \"README.md\"}'.\n" +
			"--elicit answers the server's questions (elicitation) without asking: accept takes each\nform's defaults (a form with a required field without one is declined) and a URL is\nprinted on stderr; without it the server is told zot mcp call answers none.\n"},
		{"login", "NAME [--scope SCOPES]", "authorize zot at an HTTP server's OAuth server (in a browser)", "The URL is opened with $BROWSER, else the desktop's opener, and printed; zot waits up to 5 minutes.\nThe token is kept in $ZOT_HOME/mcp-oauth.json (mode 0600) for that server's URL only.\n"},
		{"logout", "NAME", "forget the server's OAuth token and client registration", ""},
		{"help", "[command]", "this text, or a command's", ""},
	},
	notes: `Every command takes --mcp-config FILE (repeatable), --no-mcp and --cwd DIR.
The servers: ./.mcp.json, ./.zot/mcp.json, $ZOT_HOME/mcp.json (docs/mcp.md).
`,
}

// runMCPCommand is `zot mcp …`: the way a user inspects and debugs servers.
// load reads the servers it may start (main.go decides, as for a session).
func runMCPCommand(args []string, load func(MCPSources) ([]mcpServerConfig, []mcpProblem), stdout, stderr io.Writer) int {
	var files, cwds, scopes, elicit []string
	var asJSON, noMCP bool
	words, err := subcommandArgs(args, map[string]*bool{"--json": &asJSON, "--no-mcp": &noMCP},
		map[string]*[]string{"--mcp-config": &files, "--cwd": &cwds, "--scope": &scopes, "--elicit": &elicit})
	var answer ElicitAction
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "zot mcp: %v\n%s", err, mcpUsage.text(""))
		return exitUsage
	case len(elicit) > 0:
		answer = ElicitAction(lastOr(elicit, ""))
		if answer != ElicitAccept && answer != ElicitDecline && answer != ElicitCancel {
			fmt.Fprintf(stderr, "zot mcp: --elicit takes accept, decline or cancel, not %q\n", answer)
			return exitUsage
		}
	}
	cwd := lastOr(cwds, "")
	if len(words) == 0 {
		fmt.Fprint(stderr, mcpUsage.text(""))
		return exitUsage
	}
	if cwd, err = workingDir(cwd); err != nil {
		fmt.Fprintf(stderr, "zot mcp: %v\n", err)
		return exitUsage
	}
	ctx, stop := signalContext()
	defer stop()
	// Server problems show in the listing or the error below; only a
	// whole file's go to stderr.
	home := zotHome()
	servers, problems := load(MCPSources{Home: home, Cwd: cwd, Files: files, SkipDefault: noMCP})
	// Only the commands that work with one server log in to it: a
	// listing opens no browser.
	var login *MCPLogin
	if words[0] != "list" {
		login = &MCPLogin{Show: func(server, url string) {
			fmt.Fprintf(stderr, "zot mcp: to authorize zot for server %q, open:\n  %s\n", server, url)
		}}
	}
	switch words[0] {
	case "login", "logout":
		if len(words) != 2 {
			break
		}
		i := slices.IndexFunc(servers, func(c mcpServerConfig) bool { return c.Name == words[1] })
		if i < 0 {
			fmt.Fprintf(stderr, "zot mcp %s: no server %q is configured (see zot mcp list)\n", words[0], words[1])
			return exitFailure
		}
		if words[0] == "logout" {
			return mcpLogout(servers[i], home, stdout, stderr)
		}
		if msg := mcpPrepareLogin(&servers[i], home, lastOr(scopes, "")); msg != "" {
			fmt.Fprintf(stderr, "zot mcp login: %s\n", msg)
			return exitFailure
		}
	}
	m := NewMCPManager(MCPConfig{Home: home, Cwd: cwd, Servers: servers, Problems: problems, Login: login, OnStatus: func(server, level, msg string) {
		if server == "" {
			mcpStderrStatus(stderr)(server, level, msg)
		}
	}, Elicit: cliElicitor(answer, stderr), ElicitRefusal: "zot mcp call answers no questions unless given --elicit accept, decline or cancel"})
	defer m.Shutdown(context.Background())
	reg := NewToolRegistry()
	switch cmd := words[0]; {
	case cmd == "list" && len(words) == 1:
		m.start(ctx, reg, "")
		m.waitSettled(ctx)
		return mcpList(m.Status(), asJSON, stdout)
	case cmd == "login" && len(words) == 2:
		m.start(ctx, reg, words[1])
		m.waitSettled(ctx)
		return mcpLoginResult(m, words[1], home, stdout, stderr)
	case cmd == "tools" && len(words) == 2, cmd == "call" && (len(words) == 3 || len(words) == 4):
		m.start(ctx, reg, words[1])
		m.waitSettled(ctx)
		st := m.Status()
		if len(st) == 0 {
			fmt.Fprintf(stderr, "zot mcp: no server %q is configured (see zot mcp list)\n", words[1])
			return exitFailure
		}
		if st[0].State != MCPReady {
			fmt.Fprintf(stderr, "zot mcp: server %q is %s: %s\n", words[1], st[0].State, sanitize(st[0].Error))
			return exitFailure
		}
		tools := reg.List()
		if cmd == "tools" {
			return mcpPrintTools(tools, stdout)
		}
		argsJSON := "{}"
		if len(words) == 4 {
			argsJSON = words[3]
		}
		return mcpCallFromShell(ctx, tools, words[1], words[2], argsJSON, stdout, stderr)
	}
	return mcpUsage.misuse(words, stderr)
}

func mcpList(list []MCPServerStatus, asJSON bool, stdout io.Writer) int {
	if asJSON {
		if list == nil {
			list = []MCPServerStatus{}
		}
		b, _ := json.MarshalIndent(list, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no MCP servers configured (see ./.mcp.json, ./.zot/mcp.json, $ZOT_HOME/mcp.json)")
		return exitOK
	}
	fmt.Fprintf(stdout, "%-20s %-6s %-9s %-10s %5s  %s\n", "NAME", "TYPE", "STATE", "PROTOCOL", "TOOLS", "SOURCE")
	for _, s := range list {
		fmt.Fprintf(stdout, "%-20s %-6s %-9s %-10s %5d  %s\n", sanitize(s.Name), s.Transport, s.State, cmp.Or(s.Protocol, "-"), s.Tools, s.Source)
		if s.Error != "" {
			fmt.Fprintf(stdout, "    %s\n", sanitize(s.Error))
		}
	}
	return exitOK
}

func mcpPrintTools(tools []Tool, stdout io.Writer) int {
	for i, t := range tools {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "%s\n", sanitize(t.Name()))
		for _, line := range strings.Split(strings.TrimSpace(t.Description()), "\n") {
			fmt.Fprintf(stdout, "  %s\n", sanitize(line))
		}
		b, err := json.MarshalIndent(json.RawMessage(t.Schema()), "  ", "  ")
		if err != nil {
			b = t.Schema()
		}
		fmt.Fprintf(stdout, "  input schema: %s\n", sanitize(string(b)))
	}
	if len(tools) == 0 {
		fmt.Fprintln(stdout, "(the server offers no tools)")
	}
	return exitOK
}

func mcpCallFromShell(ctx context.Context, tools []Tool, server, name, args string, stdout, stderr io.Writer) int {
	if !json.Valid([]byte(args)) || !isJSONObject(json.RawMessage(args)) {
		fmt.Fprintf(stderr, "zot mcp call: the arguments must be a JSON object, e.g. '{\"path\": \"README.md\"}'\n")
		return exitUsage
	}
	var tool Tool
	var names []string
	for _, t := range tools {
		mt, ok := t.(*mcpTool)
		if ok && (mt.remote == name || mt.name == name) {
			tool = t
		}
		if ok {
			names = append(names, mt.remote)
		}
	}
	if tool == nil {
		fmt.Fprintf(stderr, "zot mcp call: server %q has no tool %q; it has: %s\n", server, name, sanitize(strings.Join(names, ", ")))
		return exitFailure
	}
	res := tool.Run(ctx, json.RawMessage(args), func(line string) {
		fmt.Fprintf(stderr, "progress: %s\n", sanitize(line))
	})
	for _, b := range res.Content {
		switch b.Type {
		case BlockImage:
			fmt.Fprintf(stdout, "[image %s, %d bytes]\n", b.MimeType, base64Len(b.Data))
		default:
			fmt.Fprintln(stdout, strings.TrimRight(sanitize(b.Text), "\n"))
		}
	}
	if res.IsError {
		return exitFailure
	}
	return exitOK
}

// cliElicitor answers every question of `zot mcp call --elicit` with the
// same action, saying on stderr what was asked: accept takes a form's
// defaults (a form they do not complete is declined) and shows the URL
// asked for. Without --elicit it offers nothing.
func cliElicitor(action ElicitAction, stderr io.Writer) Elicitor {
	if action == "" {
		return Elicitor{}
	}
	return Elicitor{Form: true, URL: true, Ask: func(_ context.Context, q Elicitation) ElicitAnswer {
		fmt.Fprintf(stderr, "zot mcp: server %q asks: %s\n", q.Server, sanitize(strings.TrimSpace(q.Message)))
		if q.Mode == ElicitURL {
			fmt.Fprintf(stderr, "zot mcp: open %s\n", sanitize(q.URL))
		}
		a := ElicitAnswer{Action: action}
		if action == ElicitAccept && q.Mode == ElicitForm {
			content, err := q.Complete(nil)
			if err != nil {
				fmt.Fprintf(stderr, "zot mcp: declined: the defaults do not complete the form (%s)\n", sanitize(err.Error()))
				return ElicitAnswer{Action: ElicitDecline}
			}
			a.Content = content
		}
		fmt.Fprintf(stderr, "zot mcp: answered %s\n", action)
		return a
	}}
}

// mcpPrepareLogin readies a server for `zot mcp login`: an HTTP server
// with OAuth on, its stored token forgotten (its client registration
// kept), a startup long enough for a person, the scope asked for. It
// returns why the server cannot log in, or "".
func mcpPrepareLogin(c *mcpServerConfig, home, scope string) string {
	switch {
	case c.Type != "http":
		return fmt.Sprintf("server %q is a stdio server: it takes its credentials from \"env\", not from a login", c.Name)
	case c.OAuth.Off:
		return fmt.Sprintf("server %q sends its own Authorization header (or has \"oauth\": false) in %s", c.Name, c.Source)
	}
	if scope != "" {
		c.OAuth.Scopes = scope
	}
	c.StartupTimeoutMS = max(c.StartupTimeoutMS, int(mcpLoginWait/time.Millisecond))
	if o := newMCPOAuth(*c, home, nil, nil); o != nil {
		if err := o.store.update(o.key, func(e *mcpStoredServer) error { e.Token = nil; return nil }); err != nil {
			return err.Error()
		}
	}
	return ""
}

// mcpLoginResult says how `zot mcp login` went.
func mcpLoginResult(m *MCPManager, name, home string, stdout, stderr io.Writer) int {
	st := m.Status()
	if len(st) == 0 {
		return exitFailure
	}
	if st[0].State != MCPReady {
		fmt.Fprintf(stderr, "zot mcp login: server %q is %s: %s\n", name, st[0].State, sanitize(st[0].Error))
		return exitFailure
	}
	m.mu.Lock()
	s := m.servers[0]
	m.mu.Unlock()
	switch {
	case s.oauth == nil || s.oauth.current() == nil:
		fmt.Fprintf(stdout, "server %q did not ask for authorization; it is ready with %d tools\n", name, st[0].Tools)
	case s.cfg.OAuth.Grant != grantAuthorizationCode:
		fmt.Fprintf(stdout, "server %q: the %s grant works (its tokens are not stored: each run asks anew)\n", name, s.cfg.OAuth.Grant)
	default:
		fmt.Fprintf(stdout, "server %q: authorized; the token is in %s, for %s only\n", name, filepath.Join(home, mcpTokenFile), s.oauth.key)
	}
	return exitOK
}

// mcpLogout is `zot mcp logout NAME`.
func mcpLogout(c mcpServerConfig, home string, stdout, stderr io.Writer) int {
	o := newMCPOAuth(c, home, nil, nil)
	if o == nil {
		fmt.Fprintf(stdout, "server %q does not use OAuth: nothing to forget\n", c.Name)
		return exitOK
	}
	had, err := o.logout()
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "zot mcp logout: %v\n", err)
		return exitFailure
	case had:
		fmt.Fprintf(stdout, "server %q: forgot its token and client registration (the authorization server may still honour the token until it expires)\n", c.Name)
	default:
		fmt.Fprintf(stdout, "server %q: no token stored\n", c.Name)
	}
	return exitOK
}
