package main

// The bash tool: a command line run in a session of its own, its output
// kept in fixed memory (the head and a ring of the tail) and, once it
// outgrows the result, in a spill file the model may read later.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// bashTool runs a command line with bashToolShell. It is not jailed: a
// shell can reach any path, so the jail would only pretend; command
// validators and hooks are where shell commands are vetted.
type bashTool struct{ env *ToolEnv }

func (bashTool) Name() string { return ToolBash }

func (bashTool) Description() string {
	return "Run a command with " + bashToolShell().Path + " -c in the working directory. " +
		"Long output keeps its start and end; all of it is in a file the result names. " +
		"Background jobs end with it unless started with setsid."
}

func (bashTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},` +
		`"timeout":{"type":"number","description":"seconds (120; at most 600)"}},"required":["command"]}`)
}

func (t bashTool) Run(ctx context.Context, raw json.RawMessage, progress func(string)) ToolResult {
	args, err := ParseBashArgs(raw)
	switch {
	case err != nil:
		return errorResult("%v", err)
	case ctx.Err() != nil:
		return errorResult("bash: aborted before the command started")
	}
	command, secs := args.Command, args.Timeout
	timeout, note := bashTimeout, ""
	if secs > 0 {
		if secs > bashMaxTime.Seconds() {
			note = fmt.Sprintf("[timeout %gs is above the maximum; used %gs]", secs, bashMaxTime.Seconds())
			secs = bashMaxTime.Seconds()
		}
		timeout = time.Duration(secs * float64(time.Second))
	}
	res := runShell(ctx, t.env, command, timeout, progress)
	if note != "" {
		res.Content[0].Text += "\n" + note
	}
	return res
}

// commandShell is the shell the bash tool runs command lines with. The
// validators' splitter reads a line by the grammar of this same shell.
type commandShell struct {
	Path string // absolute
	Bash bool   // false: a POSIX sh, read as dash or bash --posix would
}

// bashToolShell finds the shell once, the first time it is needed: bash at
// a well-known path, else the first bash on $PATH, else /bin/sh.
var bashToolShell = sync.OnceValue(func() commandShell {
	for _, p := range []string{"/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash", "/opt/homebrew/bin/bash"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return commandShell{Path: p, Bash: true}
		}
	}
	if p, err := exec.LookPath("bash"); err == nil && filepath.IsAbs(p) {
		return commandShell{Path: p, Bash: true}
	}
	return commandShell{Path: "/bin/sh"}
})

// shellArgv is the command line that runs a bash tool command.
func shellArgv(command string) []string { return []string{bashToolShell().Path, "-c", command} }

// runShell runs command in a session of its own (startProc), stdout and
// stderr on one pipe so their order is kept. When the shell exits, what its
// background children write within bashDrain is read and the rest of its
// session is stopped; when the timeout passes or ctx is cancelled, the
// whole session is stopped (SIGTERM, SIGKILL after killGrace). Either way
// no process of the session and no goroutine outlives the call. A process
// that started a session of its own (setsid) is beyond the call's reach;
// the read deadline keeps it from holding the call open. A spill file the
// result names is registered with env, which removes it at Close.
func runShell(ctx context.Context, env *ToolEnv, command string, timeout time.Duration, progress func(string)) ToolResult {
	argv := shellArgv(command)
	spec := procSpec{argv: argv, dir: env.Cwd, env: envNoSecrets, stdout: streamPipe, stderr: streamStdout, bigStdout: true}
	var p *proc
	var err error
	sb := env.sandbox(ctx)
	if sb != nil {
		p, err = sb.Start(spec)
	} else {
		p, err = startDirectOrShell(command, spec)
	}
	if err != nil {
		return errorResult("bash: start %s in %s: %v", argv[0], env.Cwd, err)
	}
	pr := p.stdoutReader()
	out := newShellOutput(env.BashOutput, env.SpillLimit)
	out.pace = p.bigStdout
	readDone := make(chan struct{})
	// The reader owns out until readDone closes; it stops at EOF or at the
	// read deadline set below once the shell is gone.
	go func() {
		defer close(readDone)
		out.readFrom(pr, progress)
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	stopped := ""
	select {
	case <-p.Exited():
	case <-timer.C:
		stopped = fmt.Sprintf("timed out after %gs", timeout.Seconds())
	case <-ctx.Done():
		stopped = "aborted"
	}
	if stopped != "" {
		p.Stop(killGrace)
		<-p.Exited()
	}
	// The shell is gone, but children it left in the background may hold
	// the pipe open: take what they write within bashDrain, stop them,
	// then take what they wrote before they died.
	pr.SetReadDeadline(time.Now().Add(bashDrain))
	<-readDone
	leftovers := stopped == "" && p.Stop(killGrace) != nothingLeft
	if !out.eof {
		pr.SetReadDeadline(time.Now().Add(bashDrain))
		out.readFrom(pr, progress)
	}
	pr.Close()
	p.Reap()

	cut := out.total > int64(out.headMax+len(out.ring))
	spill := out.close(cut)
	if spill != "" {
		env.keepSpill(spill)
	}
	text, _ := out.result(spill)
	if text == "" {
		text = "(no output)"
	}
	var b strings.Builder
	b.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	code, signal := p.ExitCode()
	switch {
	case stopped != "":
		fmt.Fprintf(&b, "[%s; stopped the command and its process group (exit code %d)]", stopped, code)
	case signal != 0:
		fmt.Fprintf(&b, "[exit code %d: killed by signal %v]", code, signal)
	default:
		fmt.Fprintf(&b, "[exit code %d]", code)
	}
	if leftovers {
		b.WriteString("\n[stopped processes the command left running in the background]")
	}
	confined := ""
	if code != 0 && sb != nil {
		note, outside := sb.Explain(text)
		if note != "" {
			b.WriteString("\n" + note)
		}
		if outside && stopped == "" {
			confined = note
		}
	}
	if sb != nil {
		if note := sb.After(p); note != "" {
			b.WriteString("\n" + note)
		}
	}
	return ToolResult{Content: []Block{TextBlock(b.String())}, IsError: stopped != "" || code != 0, ExitCode: &code, Confined: confined}
}

// startDirectOrShell starts command without the shell where bash would
// only exec its program (tools_bash_direct.go), else spec, its bash -c. A
// program that does not start (a script without #!, which bash runs
// itself) goes to bash too, which gives the reason if there is one.
func startDirectOrShell(command string, spec procSpec) (*proc, error) {
	if env, err := spec.env.environ(); err == nil {
		if run, ok := directCommand(command, spec.dir, append(env, spec.addEnv...)); ok {
			direct := spec
			direct.argv, direct.path, direct.addEnv = run.argv, run.path, append(slices.Clone(spec.addEnv), run.addEnv...)
			direct.execMayFail = true
			if p, err := startProc(direct); err == nil {
				return p, nil
			}
		}
	}
	return startProc(spec)
}

// shellOutput keeps what a command prints in fixed memory: the head and a
// ring of the tail that the result shows, and, once the output outgrows
// the head, a spill file (spillFile) that the result names when anything
// was cut.
type shellOutput struct {
	head       []byte
	headMax    int
	ring       []byte
	ringPos    int // next byte to write; the oldest byte once the ring is full
	ringLen    int
	total      int64
	lines      int64 // line breaks
	spillLimit int64 // < 0: none
	spill      *spillFile
	spillErr   error
	eof        bool // every writer of the pipe has closed it
	// pace: the pipe holds bigPipe bytes, and a command that prints much
	// is read in pauses (readFrom).
	pace bool

	line     []byte // the unfinished last line, for progress
	lastSent time.Time
}

// newShellOutput keeps budget bytes for the result (ToolEnv.BashOutput)
// and spillLimit for the spill file (ToolEnv.SpillLimit).
func newShellOutput(budget int, spillLimit int64) *shellOutput {
	if budget <= 0 {
		budget = bashOutputDefault
	}
	budget = min(budget, bashOutputMax)
	if spillLimit == 0 {
		spillLimit = bashSpillDefault
	}
	headMax := budget / 4
	return &shellOutput{head: make([]byte, 0, headMax), headMax: headMax, ring: make([]byte, budget-headMax), spillLimit: spillLimit}
}

// readFrom reads r to its end. Once there is a spill file, the command's
// output is read straight into the spill file's chunks, which go to its
// writer as they are: a gigabyte of output is not copied once more.
//
// A read of a pipe returns what is in it, so a reader that keeps up with
// a command writing 4 KiB at a time (stdio's buffer) wakes 250,000 times
// a gigabyte, and each wake costs zot more than the bytes it brings. Once
// a command has printed paceFrom bytes, a read that brought less than a
// quarter of a chunk is followed by a pause of readPause, in which the
// pipe (bigPipe bytes, pace) fills: the command still never waits, unless
// it prints faster than bigPipe bytes a readPause.
func (o *shellOutput) readFrom(r io.Reader, progress func(string)) {
	own := make([]byte, firstRead)
	for {
		buf, chunk := own, o.spill != nil && o.spillErr == nil
		if chunk {
			buf = o.spill.take()
		}
		n, err := r.Read(buf)
		if n > 0 {
			o.write(buf[:n], chunk)
			if progress != nil {
				o.report(buf[:n], progress)
			}
		}
		if chunk {
			o.spill.give(buf[:n])
		} else if n == len(own) && len(own) < headRead {
			own = make([]byte, headRead)
		}
		if err != nil {
			o.eof = err == io.EOF
			return
		}
		if o.pace && chunk && n < len(buf)/4 && o.total >= paceFrom {
			time.Sleep(readPause)
		}
	}
}

// write takes p, the output's next bytes; spilled says p is a spill
// file's chunk, which the caller gives to it.
func (o *shellOutput) write(p []byte, spilled bool) {
	o.total += int64(len(p))
	o.lines += int64(bytes.Count(p, []byte{'\n'}))
	if room := o.headMax - len(o.head); room > 0 {
		k := min(room, len(p))
		o.head = append(o.head, p[:k]...)
		p = p[k:]
		if len(p) == 0 {
			return
		}
	}
	if !spilled {
		o.toSpill(p)
	}
	if len(p) >= len(o.ring) {
		copy(o.ring, p[len(p)-len(o.ring):])
		o.ringPos, o.ringLen = 0, len(o.ring)
		return
	}
	k := copy(o.ring[o.ringPos:], p)
	copy(o.ring, p[k:])
	o.ringPos = (o.ringPos + len(p)) % len(o.ring)
	o.ringLen = min(o.ringLen+len(p), len(o.ring))
}

// toSpill is called with what follows the head; the spill file is created
// on first need and starts with the head.
func (o *shellOutput) toSpill(p []byte) {
	if o.spillLimit < 0 || o.spillErr != nil {
		return
	}
	if o.spill == nil {
		if o.spill, o.spillErr = newSpillFile(o.spillLimit); o.spillErr != nil {
			return
		}
		o.spill.write(o.head)
	}
	o.spill.write(p)
}

// report passes the latest complete line to progress, at most every
// progressEvery; lines in between are skipped, not queued.
func (o *shellOutput) report(p []byte, progress func(string)) {
	const maxLine = 512
	last := bytes.LastIndexByte(p, '\n')
	if last < 0 {
		if room := maxLine - len(o.line); room > 0 {
			o.line = append(o.line, p[:min(room, len(p))]...)
		}
		return
	}
	if now := time.Now(); now.Sub(o.lastSent) >= progressEvery {
		var line []byte
		if prev := bytes.LastIndexByte(p[:last], '\n'); prev >= 0 {
			line = p[prev+1 : last]
		} else {
			line = append(o.line, p[:min(last, maxLine)]...)
		}
		line = bytes.TrimRight(utf8Prefix(line, maxLine), "\r")
		if len(bytes.TrimSpace(line)) > 0 {
			o.lastSent = now
			progress(string(line))
		}
	}
	rest := p[last+1:]
	o.line = append(o.line[:0], rest[:min(maxLine, len(rest))]...)
}

// result is the output to show: all of it when it fits, else the head and
// the tail, cut at line breaks where one is near, around a marker naming
// what was left out (bytes, and lines to read the spill file from) and
// where it is. spill is the spill file as close left it.
func (o *shellOutput) result(spill string) (string, int64) {
	tail := o.ring[:o.ringLen]
	if o.ringLen == len(o.ring) {
		tail = append(append(make([]byte, 0, len(o.ring)), o.ring[o.ringPos:]...), o.ring[:o.ringPos]...)
	}
	if int64(len(o.head)+len(tail)) == o.total {
		return string(o.head) + string(tail), 0
	}
	head := utf8Prefix(o.head, len(o.head))
	if i := bytes.LastIndexByte(head, '\n'); i >= len(head)-len(head)/4 {
		head = head[:i+1]
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/4 {
		tail = tail[i+1:]
	} else {
		for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
			tail = tail[1:]
		}
	}
	cut := o.total - int64(len(head)+len(tail))
	lines := o.lines
	if o.total > 0 && len(tail) > 0 && tail[len(tail)-1] != '\n' {
		lines++ // an unfinished last line
	}
	from, to := int64(bytes.Count(head, []byte{'\n'}))+1, lines-int64(bytes.Count(tail, []byte{'\n'}))
	if len(tail) > 0 && tail[len(tail)-1] != '\n' {
		to--
	}
	var where string
	switch {
	case o.spillLimit < 0:
		where = "no spill file (bash_spill_limit is 0)"
	case o.spillErr != nil || spill == "":
		where = fmt.Sprintf("the full output could not be saved: %v", o.spillErr)
	case o.total > o.spill.limit:
		where = fmt.Sprintf("the first %s and the last %s of the output are in %s", sizeString(o.spill.headCap), sizeString(o.spill.tailCap), spill)
	default:
		where = "full output in " + spill
	}
	var b strings.Builder
	b.Write(head)
	if len(head) > 0 && head[len(head)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[… %d bytes cut (lines %d-%d); %s …]\n", cut, from, max(to, from), where)
	b.Write(tail)
	return b.String(), cut
}

// close finishes the spill file and removes it unless keep (the result
// will name it); it returns the name of a file it kept.
func (o *shellOutput) close(keep bool) string {
	if o.spill == nil {
		return ""
	}
	name, err := o.spill.finish(o.total, keep)
	if err != nil {
		o.spillErr = err
	}
	return name
}

// spillFile keeps a command's output on disk (mode 0600, since output may
// hold secrets) for the model to read later: all of it up to limit bytes,
// else the first quarter of limit and the last three quarters, with a
// line between saying what was cut. Until the command ends the last part
// is a ring in the file; finish puts it in order. The writes are the
// writer goroutine's, so that reading the command's pipe waits for the
// disk only when the disk falls behind by all of the buffers.
type spillFile struct {
	f                       *os.File
	limit, headCap, tailCap int64
	queue, free             chan []byte
	done                    chan struct{} // closed when the writer has written all it was given
	err                     error         // the writer's, read after done
}

// spillBuffers is how many chunks of output may wait for the disk, and
// spillChunk the size of one: what one read of a bash call's pipe gives
// at most. Until the output outgrows the result, it is read in smaller
// reads (headRead), so a call that prints little allocates little; the
// first read is smaller still (firstRead), since most calls print less
// than a page, and a 64 KiB buffer a call is a large allocation that the
// runtime zeroes and the GC then collects (a tenth of zot's CPU in a loop
// of `echo hi` calls).
//
// paceFrom and readPause pace the reads of a command that prints much
// (readFrom): the pause adds at most readPause to a call that printed
// more than paceFrom.
const (
	spillBuffers = 2
	spillChunk   = bigPipe
	headRead     = 64 << 10
	firstRead    = 4 << 10
	paceFrom     = 1 << 20
	readPause    = time.Millisecond
)

func newSpillFile(limit int64) (*spillFile, error) {
	f, err := os.CreateTemp("", spillPattern)
	if err != nil {
		return nil, err
	}
	s := &spillFile{f: f, limit: limit, headCap: limit / 4, tailCap: limit - limit/4,
		queue: make(chan []byte, spillBuffers), free: make(chan []byte, spillBuffers), done: make(chan struct{})}
	for range spillBuffers {
		s.free <- make([]byte, 0, spillChunk)
	}
	// The writer: ends when finish closes the queue.
	go func() {
		defer close(s.done)
		var off int64
		for b := range s.queue {
			if s.err == nil {
				s.err = s.place(off, b)
			}
			off += int64(len(b))
			s.free <- b
		}
	}()
	return s, nil
}

// write hands p, the output's next bytes, to the writer.
func (s *spillFile) write(p []byte) {
	for len(p) > 0 {
		b := s.take()
		n := copy(b, p)
		s.give(b[:n])
		p = p[n:]
	}
}

// take waits for a free chunk, whole; give hands it to the writer with
// the output's next bytes in it (none: it is only returned).
func (s *spillFile) take() []byte { return (<-s.free)[:spillChunk] }

func (s *spillFile) give(b []byte) {
	if len(b) == 0 {
		s.free <- b
		return
	}
	s.queue <- b
}

// place writes b, the output from byte off on, where the file keeps it:
// the head in order, the rest in the ring after it.
func (s *spillFile) place(off int64, b []byte) error {
	for len(b) > 0 {
		at, n := off, int64(len(b))
		if off < s.headCap {
			n = min(n, s.headCap-off)
		} else {
			r := (off - s.headCap) % s.tailCap
			at, n = s.headCap+r, min(n, s.tailCap-r)
		}
		if _, err := s.f.WriteAt(b[:n], at); err != nil {
			return err
		}
		off, b = off+n, b[n:]
	}
	return nil
}

// finish waits for the writer, and then removes the file unless keep, or
// keeps it with what a total of bytes of output left in it in order. It
// returns the name of the file it kept.
func (s *spillFile) finish(total int64, keep bool) (string, error) {
	close(s.queue)
	<-s.done
	err := s.err
	if err == nil && keep && total > s.limit {
		err = s.order(total)
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil || !keep {
		os.Remove(s.f.Name())
		return "", err
	}
	return s.f.Name(), nil
}

// order makes the file head, a line saying what was cut, then the ring
// from its oldest byte: in a new file (the kernel copies, no byte passes
// through zot), which takes the old one's name.
func (s *spillFile) order(total int64) error {
	out, err := os.CreateTemp(filepath.Dir(s.f.Name()), spillPattern)
	if err != nil {
		return err
	}
	defer func() {
		out.Close()
		os.Remove(out.Name()) // gone already once renamed
	}()
	oldest := s.headCap + (total-s.headCap)%s.tailCap
	note := fmt.Sprintf("\n[… zot cut %d bytes here: this file keeps the first %s and the last %s of the command's output …]\n",
		total-s.limit, sizeString(s.headCap), sizeString(s.tailCap))
	for _, part := range []struct{ from, n int64 }{{0, s.headCap}, {-1, 0}, {oldest, s.limit - oldest}, {s.headCap, oldest - s.headCap}} {
		if part.from < 0 {
			_, err = io.WriteString(out, note)
		} else if _, err = s.f.Seek(part.from, io.SeekStart); err == nil {
			_, err = io.CopyN(out, s.f, part.n)
		}
		if err != nil {
			return err
		}
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(out.Name(), s.f.Name())
}

// spillPattern names the bash tool's spill files in os.TempDir().
const spillPattern = "zot-bash-*.log"

// sweepStaleSpills runs RemoveStaleSpills on tmp for files a day old, at
// most once an hour per $ZOT_HOME (the stamp file's time says when it last
// did): listing a busy temp directory at every start would make starting
// cost grow with the machine, not with the work.
func sweepStaleSpills(home, tmp string) {
	stamp := filepath.Join(home, "spills-swept")
	if fi, err := os.Stat(stamp); err == nil && time.Since(fi.ModTime()) < time.Hour {
		return
	}
	os.WriteFile(stamp, nil, 0o600) // a home not there yet sweeps next time too
	RemoveStaleSpills(tmp, 24*time.Hour)
}

// RemoveStaleSpills deletes, in dir, the spill files older than age that
// a zot which did not get to Close (killed, crashed) left behind: only
// names of spillPattern's form, only regular files, only the user's own.
func RemoveStaleSpills(dir string, age time.Duration) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix, suffix, _ := strings.Cut(spillPattern, "*")
	for _, e := range entries {
		name := e.Name()
		middle, hasPrefix := strings.CutPrefix(name, prefix)
		middle, hasSuffix := strings.CutSuffix(middle, suffix)
		if !hasPrefix || !hasSuffix || middle == "" || strings.Trim(middle, "0123456789") != "" {
			continue
		}
		path := filepath.Join(dir, name)
		st, err := os.Lstat(path)
		if err != nil || !st.Mode().IsRegular() || time.Since(st.ModTime()) < age {
			continue
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Getuid() {
			continue
		}
		os.Remove(path)
	}
}
