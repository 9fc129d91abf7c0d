package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// toolsIn makes a ToolEnv on a fresh directory and returns its tools by
// name.
func toolsIn(t *testing.T, jail bool) (dir string, env *ToolEnv, tools map[string]Tool) {
	t.Helper()
	dir = t.TempDir()
	env, tools = toolsAt(dir, jail)
	return dir, env, tools
}

// toolsAt makes a ToolEnv on dir and returns its tools by name.
func toolsAt(dir string, jail bool) (*ToolEnv, map[string]Tool) {
	env := NewToolEnv(dir, jail)
	tools := map[string]Tool{}
	for _, tool := range BuiltinTools(env) {
		tools[tool.Name()] = tool
	}
	return env, tools
}

// call runs a tool with args given as a JSON string or as a value to encode.
func call(t *testing.T, tool Tool, args any) ToolResult {
	t.Helper()
	return callCtx(t, context.Background(), tool, args, nil)
}

func callCtx(t *testing.T, ctx context.Context, tool Tool, args any, progress func(string)) ToolResult {
	t.Helper()
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	if progress == nil {
		progress = func(string) {}
	}
	r := tool.Run(ctx, json.RawMessage(raw), progress)
	if spill := spillName.FindString(text(r)); spill != "" {
		t.Cleanup(func() { os.Remove(spill) })
	}
	return r
}

// spillName matches the file in os.TempDir where bash keeps output it cut;
// callCtx removes it when the test ends.
var spillName = regexp.MustCompile(`/\S*zot-bash-\S+\.log`)

func text(r ToolResult) string {
	var parts []string
	for _, b := range r.Content {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func mustOK(t *testing.T, r ToolResult) string {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected error result: %s", text(r))
	}
	return text(r)
}

func mustFail(t *testing.T, r ToolResult, want ...string) string {
	t.Helper()
	if !r.IsError {
		t.Fatalf("want an error result, got: %s", text(r))
	}
	for _, w := range want {
		if !strings.Contains(text(r), w) {
			t.Errorf("error %q does not mention %q", text(r), w)
		}
	}
	return text(r)
}

func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func fileContent(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

// assertNoTempFiles checks that no temp file of an atomic write is left.
func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*.zot-*"))
	if len(leftovers) > 0 {
		t.Errorf("temp files left behind: %v", leftovers)
	}
}

func numberedLines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not true after %v: %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processGone reports whether pid has exited; a zombie counts as gone,
// since an init that never reaps (as in containers) would keep it forever.
func processGone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == syscall.ESRCH
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}

// checkNoGoroutineLeak fails the test if goroutines started during it are
// still running once it ends.
func checkNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		waitUntil(t, "goroutines started by the tool have ended", 5*time.Second, func() bool {
			return runtime.NumGoroutine() <= before
		})
	})
}

func TestToolBuiltinsOrderAndSchemas(t *testing.T) {
	t.Parallel()
	_, env, _ := toolsIn(t, false)
	var names []string
	for _, tool := range BuiltinTools(env) {
		names = append(names, tool.Name())
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tool.Schema(), &schema); err != nil {
			t.Fatalf("%s: schema is not JSON: %v", tool.Name(), err)
		}
		if schema.Type != "object" || len(schema.Properties) == 0 || len(schema.Required) == 0 {
			t.Errorf("%s: schema lacks type object, properties or required: %s", tool.Name(), tool.Schema())
		}
		for _, r := range schema.Required {
			if schema.Properties[r] == nil {
				t.Errorf("%s: required %q is not a property", tool.Name(), r)
			}
		}
		if tool.Description() == "" {
			t.Errorf("%s: no description", tool.Name())
		}
	}
	if got := strings.Join(names, ","); got != "read,write,edit,bash" {
		t.Errorf("BuiltinTools order = %s", got)
	}
}

func TestToolInvalidArgumentsNameTheField(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	writeFile(t, filepath.Join(dir, "f.txt"), "hello\n", 0o644)
	cases := []struct {
		tool, args, want string
	}{
		{"read", `{"path":5}`, `invalid arguments for read: "path" must be a string`},
		{"read", `{}`, `invalid arguments for read: "path" is required`},
		{"read", `{"path":null}`, `invalid arguments for read: "path" is required`},
		{"read", `{"path":""}`, `invalid arguments for read: "path" must not be empty`},
		{"read", `{"path":"f.txt","offset":"abc"}`, `invalid arguments for read: "offset" must be a number`},
		{"read", `{"path":"f.txt","offset":1.5}`, `invalid arguments for read: "offset" must be a whole number`},
		{"read", `{"path":"f.txt","limit":-3}`, `invalid arguments for read: "limit" must be positive`},
		{"read", `[1,2]`, `invalid arguments for read: want a JSON object`},
		{"write", `{"path":"f.txt"}`, `invalid arguments for write: "content" is required`},
		{"write", `{"path":"f.txt","content":7}`, `invalid arguments for write: "content" must be a string`},
		{"write", `{"path":{},"content":""}`, `invalid arguments for write: "path" must be a string`},
		{"edit", `{"path":"f.txt"}`, `invalid arguments for edit: "edits" is required`},
		{"edit", `{"path":"f.txt","edits":"no"}`, `invalid arguments for edit: "edits" must be an array of objects`},
		{"edit", `{"path":"f.txt","edits":[3]}`, `invalid arguments for edit: "edits[1]" must be an object`},
		{"edit", `{"path":"f.txt","edits":[{"oldText":1,"newText":""}]}`, `invalid arguments for edit: "edits[1].oldText" must be a string`},
		{"edit", `{"path":"f.txt","edits":[{"oldText":"a","newText":"b"},{"oldText":"a"}]}`, `invalid arguments for edit: "edits[2].newText" is required`},
		{"edit", `{"path":"f.txt","edits":[]}`, `invalid arguments for edit: "edits" is empty`},
		{"bash", `{"command":["ls"]}`, `invalid arguments for bash: "command" must be a string`},
		{"bash", `{"cmd":"ls"}`, `invalid arguments for bash: "command" is required`},
		{"bash", `{"command":"ls","timeout":"soon"}`, `invalid arguments for bash: "timeout" must be a number`},
		{"bash", `{"command":"ls","timeout":-1}`, `invalid arguments for bash: "timeout" must be a positive number`},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.args, func(t *testing.T) {
			r := call(t, tools[c.tool], c.args)
			if !r.IsError || !strings.HasPrefix(text(r), c.want) {
				t.Errorf("got %q (error %v), want it to start with %q", text(r), r.IsError, c.want)
			}
		})
	}
	if got := fileContent(t, filepath.Join(dir, "f.txt")); got != "hello\n" {
		t.Errorf("a refused call changed the file: %q", got)
	}
}

func TestToolUnknownFieldsAndQuotedNumbersAreAccepted(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	writeFile(t, filepath.Join(dir, "f.txt"), numberedLines(1, 5), 0o644)
	got := mustOK(t, call(t, tools["read"], `{"path":"f.txt","offset":"2","limit":1,"mystery":true}`))
	if got != "line 2\n[lines 2-2 of 5; continue with offset=3]" {
		t.Errorf("read = %q", got)
	}
}

func TestReadOffsetLimitAndContinuation(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	writeFile(t, filepath.Join(dir, "ten.txt"), numberedLines(1, 10), 0o644)
	writeFile(t, filepath.Join(dir, "open.txt"), "a\nb\nc", 0o644)
	writeFile(t, filepath.Join(dir, "crlf.txt"), "a\r\nb\r\n", 0o644)
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"whole file", map[string]any{"path": "ten.txt"}, numberedLines(1, 10)},
		{"window", map[string]any{"path": "ten.txt", "offset": 3, "limit": 2}, "line 3\nline 4\n[lines 3-4 of 10; continue with offset=5]"},
		{"to the end", map[string]any{"path": "ten.txt", "offset": 9}, "line 9\nline 10\n"},
		{"limit reaching the end", map[string]any{"path": "ten.txt", "offset": 9, "limit": 2}, "line 9\nline 10\n"},
		{"offset 0 means the start", map[string]any{"path": "ten.txt", "offset": 0, "limit": 1}, "line 1\n[lines 1-1 of 10; continue with offset=2]"},
		{"last line without newline", map[string]any{"path": "open.txt", "offset": 3}, "c\n"},
		{"count includes an open last line", map[string]any{"path": "open.txt", "limit": 1}, "a\n[lines 1-1 of 3; continue with offset=2]"},
		{"CRLF shown as lines", map[string]any{"path": "crlf.txt"}, "a\nb\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mustOK(t, call(t, tools["read"], c.args)); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestReadOffsetPastEndNamesLineCount(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	writeFile(t, filepath.Join(dir, "ten.txt"), numberedLines(1, 10), 0o644)
	writeFile(t, filepath.Join(dir, "open.txt"), "a\nb\nc", 0o644)
	for _, c := range []struct {
		path   string
		offset int
		lines  int
	}{{"ten.txt", 11, 10}, {"ten.txt", 500, 10}, {"open.txt", 4, 3}} {
		r := call(t, tools["read"], map[string]any{"path": c.path, "offset": c.offset})
		mustFail(t, r, fmt.Sprintf("offset %d is past the end of the file (it has %d lines)", c.offset, c.lines))
	}
}

func TestReadStopsAt2000Lines(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	writeFile(t, filepath.Join(dir, "f.txt"), numberedLines(1, 2500), 0o644)
	got := mustOK(t, call(t, tools["read"], map[string]any{"path": "f.txt", "limit": 5000}))
	if want := numberedLines(1, 2000) + "[lines 1-2000 of 2500; continue with offset=2001]"; got != want {
		t.Errorf("got %d bytes ending %q", len(got), got[len(got)-80:])
	}
	got = mustOK(t, call(t, tools["read"], map[string]any{"path": "f.txt", "offset": 2001}))
	if got != numberedLines(2001, 2500) {
		t.Errorf("continuation ends %q", got[len(got)-60:])
	}
}

func TestReadStopsAt50KiBAndContinuesWhereItStopped(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	var file strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&file, "%04d %s\n", i, strings.Repeat("x", 95))
	}
	writeFile(t, filepath.Join(dir, "wide.txt"), file.String(), 0o644)
	note := regexp.MustCompile(`\[lines (\d+)-(\d+) of 1000, 50 KiB per call; continue with offset=(\d+)\]$`)
	var joined strings.Builder
	offset, calls := 1, 0
	for {
		got := mustOK(t, call(t, tools["read"], map[string]any{"path": "wide.txt", "offset": offset}))
		calls++
		m := note.FindStringSubmatch(got)
		if m == nil {
			joined.WriteString(got)
			break
		}
		body := strings.TrimSuffix(got, m[0])
		if len(body) > 50<<10 {
			t.Fatalf("call %d returned %d bytes of lines", calls, len(body))
		}
		joined.WriteString(body)
		if m[1] != strconv.Itoa(offset) {
			t.Fatalf("note %q does not start at offset %d", m[0], offset)
		}
		offset, _ = strconv.Atoi(m[3])
	}
	if joined.String() != file.String() {
		t.Error("the pieces read at the continuation offsets do not make up the file")
	}
	if calls != 2 {
		t.Errorf("100 KB took %d calls, want 2", calls)
	}
}

func TestReadCutsALineLongerThanTheBudget(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	long := strings.Repeat("é", 100<<10) // 200 KiB of two-byte characters
	writeFile(t, filepath.Join(dir, "f.txt"), "short\n"+long+"\nafter\n", 0o644)

	got := mustOK(t, call(t, tools["read"], map[string]any{"path": "f.txt"}))
	if got != "short\n[lines 1-1 of 3, 50 KiB per call; continue with offset=2]" {
		t.Errorf("a long line after others should wait for its own call; got %q", got)
	}
	got = mustOK(t, call(t, tools["read"], map[string]any{"path": "f.txt", "offset": 2}))
	shown, marker, _ := strings.Cut(got, "\n[line 2 is 200.0 KiB long; showed its first ")
	if marker == "" {
		t.Fatalf("no cut marker in %q…", got[len(got)-300:])
	}
	if len(shown) > 50<<10 || !strings.HasPrefix(long, shown) || len(shown) < 40<<10 {
		t.Errorf("shown part is %d bytes, not a prefix of the line cut on a character", len(shown))
	}
	if !strings.HasSuffix(got, "[lines 2-2 of 3; continue with offset=3]") {
		t.Errorf("no continuation after the cut line: %q", got[len(got)-100:])
	}
}

func TestReadLine1000000OfABigFileStreams(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	dir, _, tools := toolsIn(t, false)
	path := filepath.Join(dir, "big.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := 1; i <= 1_200_000; i++ {
		w.WriteString("line ")
		w.WriteString(strconv.Itoa(i))
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := mustOK(t, call(t, tools["read"], map[string]any{"path": "big.txt", "offset": 1_000_000, "limit": 3}))
	runtime.ReadMemStats(&after)
	if want := "line 1000000\nline 1000001\nline 1000002\n[lines 1000000-1000002 of 1200000; continue with offset=1000003]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// The file is 14 MB; reading it whole would allocate at least that.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
		t.Errorf("reading one window allocated %d bytes", alloc)
	}
}

func TestReadImagesComeBackAsImageBlocks(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	for _, c := range []struct{ name, magic, mime string }{
		{"a.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"},
		{"b.jpg", "\xff\xd8\xff\xe0\x00\x10JFIF\x00", "image/jpeg"},
		{"c.gif", "GIF89a\x01\x00\x01\x00", "image/gif"},
		{"d.bin", "RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"},
	} {
		data := c.magic + "\x00\x01\x02rest"
		writeFile(t, filepath.Join(dir, c.name), data, 0o644)
		res := call(t, tools["read"], map[string]any{"path": c.name})
		mustOK(t, res)
		var img *Block
		for i := range res.Content {
			if res.Content[i].Type == "image" {
				img = &res.Content[i]
			}
		}
		if img == nil {
			t.Errorf("%s: no image block in %+v", c.name, res.Content)
			continue
		}
		if img.MimeType != c.mime || img.Data != base64.StdEncoding.EncodeToString([]byte(data)) {
			t.Errorf("%s: image block %s with %d bytes of data", c.name, img.MimeType, len(img.Data))
		}
	}
}

func TestReadRefusesImagesAbove5MB(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	path := filepath.Join(dir, "huge.png")
	writeFile(t, path, "\x89PNG\r\n\x1a\n", 0o644)
	if err := os.Truncate(path, 6<<20); err != nil {
		t.Fatal(err)
	}
	mustFail(t, call(t, tools["read"], map[string]any{"path": "huge.png"}), "huge.png", "6.0 MiB", "5.0 MiB limit")
}

func TestReadRefusesBinaryFilesDirectoriesAndMissingFiles(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	writeFile(t, filepath.Join(dir, "prog"), "\x7fELF\x02\x01\x01\x00\x00\x00", 0o755)
	writeFile(t, filepath.Join(dir, "sub", "x"), "", 0o644)
	writeFile(t, filepath.Join(dir, "empty.txt"), "", 0o644)
	mustFail(t, call(t, tools["read"], map[string]any{"path": "prog"}), "prog", "binary", "xxd")
	mustFail(t, call(t, tools["read"], map[string]any{"path": "sub"}), "sub", "is a directory", "ls")
	mustFail(t, call(t, tools["read"], map[string]any{"path": "nope.txt"}), "nope.txt", "no such file", dir)
	if got := mustOK(t, call(t, tools["read"], map[string]any{"path": "empty.txt"})); got != "(empty.txt is empty)" {
		t.Errorf("empty file: %q", got)
	}
}

func TestReadAndWriteRefuseNamedPipesWithoutBlocking(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skip(err)
	}
	mustFail(t, call(t, tools["read"], map[string]any{"path": "fifo"}), "read fifo: not a regular file")
	mustFail(t, call(t, tools["write"], map[string]any{"path": "fifo", "content": "x"}), "write fifo: not a regular file")
}

func TestWriteCreatesParentsAndNewFilesAre0644(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	got := mustOK(t, call(t, tools["write"], map[string]any{"path": "a/b/c.txt", "content": "hi\n"}))
	if got != "Wrote 3 bytes to a/b/c.txt (new file)" {
		t.Errorf("result %q", got)
	}
	path := filepath.Join(dir, "a", "b", "c.txt")
	if fileContent(t, path) != "hi\n" || fileMode(t, path) != 0o644 {
		t.Errorf("file %q mode %v", fileContent(t, path), fileMode(t, path))
	}
	assertNoTempFiles(t, filepath.Dir(path))
}

func TestWriteKeepsExistingMode(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	for _, mode := range []os.FileMode{0o755, 0o600, 0o640} {
		path := filepath.Join(dir, fmt.Sprintf("f%o", mode))
		writeFile(t, path, "old", mode)
		got := mustOK(t, call(t, tools["write"], map[string]any{"path": path, "content": "new content"}))
		if !strings.Contains(got, "Wrote 11 bytes") || !strings.Contains(got, "replaced") {
			t.Errorf("result %q", got)
		}
		if fileContent(t, path) != "new content" || fileMode(t, path) != mode {
			t.Errorf("mode %o became %o", mode, fileMode(t, path))
		}
	}
	assertNoTempFiles(t, dir)
}

func TestWriteThroughSymlinkKeepsTheLink(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	writeFile(t, filepath.Join(dir, "real.txt"), "old", 0o644)
	os.Symlink("real.txt", filepath.Join(dir, "link.txt"))
	mustOK(t, call(t, tools["write"], map[string]any{"path": "link.txt", "content": "new"}))
	if target, err := os.Readlink(filepath.Join(dir, "link.txt")); err != nil || target != "real.txt" {
		t.Errorf("the link was replaced: %q %v", target, err)
	}
	if got := fileContent(t, filepath.Join(dir, "real.txt")); got != "new" {
		t.Errorf("target holds %q", got)
	}
}

func TestWriteFailureLeavesOldFileAndNoTempFile(t *testing.T) {
	t.Parallel()
	t.Run("parent is a file", func(t *testing.T) {
		dir, _, tools := toolsIn(t, false)
		writeFile(t, filepath.Join(dir, "file.txt"), "old", 0o644)
		mustFail(t, call(t, tools["write"], map[string]any{"path": "file.txt/x", "content": "new"}), "file.txt/x", "not a directory")
		if fileContent(t, filepath.Join(dir, "file.txt")) != "old" {
			t.Error("old file changed")
		}
		assertNoTempFiles(t, dir)
	})
	t.Run("read-only directory", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes into read-only directories")
		}
		dir, _, tools := toolsIn(t, false)
		writeFile(t, filepath.Join(dir, "ro", "f.txt"), "old", 0o644)
		os.Chmod(filepath.Join(dir, "ro"), 0o555)
		defer os.Chmod(filepath.Join(dir, "ro"), 0o755)
		mustFail(t, call(t, tools["write"], map[string]any{"path": "ro/f.txt", "content": "new"}), "ro/f.txt", "permission denied", "unchanged")
		if fileContent(t, filepath.Join(dir, "ro", "f.txt")) != "old" {
			t.Error("old file changed")
		}
		assertNoTempFiles(t, filepath.Join(dir, "ro"))
	})
	t.Run("write fails midway", func(t *testing.T) {
		// RLIMIT_FSIZE makes the temp file's write fail after it was
		// created, whoever runs the test. The limit is process-wide, so it
		// is set in a child process where no other test writes files.
		dir, _, _ := toolsIn(t, false)
		writeFile(t, filepath.Join(dir, "f.txt"), "old", 0o644)
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriteUnderFileSizeLimit$", "-test.v")
		cmd.Env = append(os.Environ(), "ZOT_TEST_CHILD=1", "ZOT_FSIZE_DIR="+dir)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestWriteUnderFileSizeLimit") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		if fileContent(t, filepath.Join(dir, "f.txt")) != "old" {
			t.Error("old file changed")
		}
		assertNoTempFiles(t, dir)
	})
	t.Run("path is a directory", func(t *testing.T) {
		dir, _, tools := toolsIn(t, false)
		os.Mkdir(filepath.Join(dir, "d"), 0o755)
		mustFail(t, call(t, tools["write"], map[string]any{"path": "d", "content": "x"}), "is a directory")
	})
}

func TestEditReturnsUnifiedDiff(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	writeFile(t, filepath.Join(dir, "src", "f.txt"), numberedLines(1, 20), 0o644)
	r := call(t, tools["edit"], map[string]any{"path": "src/f.txt", "edits": []map[string]string{
		{"oldText": "line 15\nline 16\n", "newText": "line fifteen\n"},
		{"oldText": "line 2\n", "newText": "line 2\nline 2.5\n"},
		{"oldText": "line 5", "newText": "line five"},
	}})
	want := "Applied 3 edits to src/f.txt.\n\n" +
		"--- a/src/f.txt\n" +
		"+++ b/src/f.txt\n" +
		"@@ -1,8 +1,9 @@\n" +
		" line 1\n" +
		" line 2\n" +
		"+line 2.5\n" +
		" line 3\n" +
		" line 4\n" +
		"-line 5\n" +
		"+line five\n" +
		" line 6\n" +
		" line 7\n" +
		" line 8\n" +
		"@@ -12,8 +13,7 @@\n" +
		" line 12\n" +
		" line 13\n" +
		" line 14\n" +
		"-line 15\n" +
		"-line 16\n" +
		"+line fifteen\n" +
		" line 17\n" +
		" line 18\n" +
		" line 19\n"
	if got := mustOK(t, r); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	wantFile := strings.NewReplacer("line 2\n", "line 2\nline 2.5\n", "line 5\n", "line five\n", "line 15\nline 16\n", "line fifteen\n").Replace(numberedLines(1, 20))
	if got := fileContent(t, filepath.Join(dir, "src", "f.txt")); got != wantFile {
		t.Errorf("file is now:\n%s", got)
	}
}

func TestEditDiffEdgeCases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, old, new, diff string
	}{
		{"last line without newline", "a\nb", "b", "B",
			"@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n\\ No newline at end of file\n"},
		{"join two lines", "a\nb\nc\n", "a\n", "x",
			"@@ -1,3 +1,2 @@\n-a\n-b\n+xb\n c\n"},
		{"two edits on one line", "one two three\nnext\n", "one", "1",
			"@@ -1,2 +1,2 @@\n-one two three\n+1 2 three\n next\n"},
		{"delete a line", "a\nb\nc\n", "b\n", "",
			"@@ -1,3 +1,2 @@\n a\n-b\n c\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, _, tools := toolsIn(t, false)
			writeFile(t, filepath.Join(dir, "f"), c.file, 0o644)
			edits := []map[string]string{{"oldText": c.old, "newText": c.new}}
			if c.name == "two edits on one line" {
				edits = append(edits, map[string]string{"oldText": "two", "newText": "2"})
			}
			got := mustOK(t, call(t, tools["edit"], map[string]any{"path": "f", "edits": edits}))
			_, diff, _ := strings.Cut(got, "+++ b/f\n")
			if diff != c.diff {
				t.Errorf("diff:\n%s\nwant:\n%s", diff, c.diff)
			}
		})
	}
}

func TestEditFailuresChangeNothing(t *testing.T) {
	t.Parallel()
	const file = "package main\n\nfunc main() {\n    return x\n}\n\nfunc other() {\n    return x\n}\n"
	cases := []struct {
		name  string
		edits []map[string]string
		want  []string
	}{
		{"not found shows the closest lines",
			[]map[string]string{{"oldText": "package main", "newText": "package zot"}, {"oldText": "func other() {\n  return y\n}", "newText": ""}},
			[]string{"edit 2: oldText was not found.", "Line 7 matches, except for whitespace, the first line of oldText",
				"6\t\n7\tfunc other() {\n8\t    return x\n9\t}\n", "nothing was changed"}},
		{"not found ranks similar lines",
			[]map[string]string{{"oldText": "func mian() {", "newText": ""}},
			[]string{"edit 1: oldText was not found.", "Line 3 is the most similar line to the first line of oldText", "3\tfunc main() {\n"}},
		{"found several times",
			[]map[string]string{{"oldText": "    return x\n", "newText": "    return y\n"}},
			[]string{"edit 1: oldText was found 2 times (at lines 4, 8)"}},
		{"overlapping edits",
			[]map[string]string{{"oldText": "func main() {\n    return x", "newText": ""}, {"oldText": "package main", "newText": "package zot"}, {"oldText": "main() {", "newText": "run() {"}},
			[]string{"edit 3: its oldText overlaps edit 1 (both cover line 3)"}},
		{"empty oldText",
			[]map[string]string{{"oldText": "", "newText": "x"}},
			[]string{"edit 1: oldText is empty"}},
		{"no change",
			[]map[string]string{{"oldText": "package main", "newText": "package main"}},
			[]string{"the edits change nothing"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, _, tools := toolsIn(t, false)
			path := filepath.Join(dir, "main.go")
			writeFile(t, path, file, 0o644)
			mustFail(t, call(t, tools["edit"], map[string]any{"path": "main.go", "edits": c.edits}), c.want...)
			if fileContent(t, path) != file {
				t.Error("a failed edit changed the file")
			}
			assertNoTempFiles(t, dir)
		})
	}
}

func TestEditKeepsCRLFAndBOM(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	path := filepath.Join(dir, "win.txt")
	writeFile(t, path, "\uFEFFone\r\ntwo\r\nthree\r\n", 0o644)
	got := mustOK(t, call(t, tools["edit"], map[string]any{"path": "win.txt", "edits": []map[string]string{
		{"oldText": "one\ntwo", "newText": "ONE\nTWO\nTWO AND A HALF"},
	}}))
	if want := "\uFEFFONE\r\nTWO\r\nTWO AND A HALF\r\nthree\r\n"; fileContent(t, path) != want {
		t.Errorf("file is %q, want %q", fileContent(t, path), want)
	}
	if strings.Contains(got, "\r") || strings.Contains(got, "\uFEFF") {
		t.Errorf("diff shows line-ending or BOM noise: %q", got)
	}
}

// In a file with mixed endings every line the edit does not touch keeps
// its own; new lines take the ending of the line they land on.
func TestEditKeepsMixedLineEndings(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	path := filepath.Join(dir, "mixed.txt")
	for _, tc := range []struct{ file, oldText, newText, want string }{
		{"first\nsecond\r\nthird\r\nfourth\r\n", "fourth", "FOURTH", "first\nsecond\r\nthird\r\nFOURTH\r\n"},
		{"first\nsecond\r\nthird\r\n", "second\nthird", "2\n2.5\n3", "first\n2\r\n2.5\r\n3\r\n"},
		{"a\r\nb\nc", "c", "c\nd", "a\r\nb\nc\nd"},
		{"a\r\nb\r\nlast", "last", "last\nmore", "a\r\nb\r\nlast\r\nmore"},
		{"one line", "one", "1\n", "1\n line"},
	} {
		writeFile(t, path, tc.file, 0o644)
		mustOK(t, call(t, tools["edit"], map[string]any{"path": "mixed.txt", "edits": []map[string]string{{"oldText": tc.oldText, "newText": tc.newText}}}))
		if got := fileContent(t, path); got != tc.want {
			t.Errorf("%q: %q → %q gives %q, want %q", tc.file, tc.oldText, tc.newText, got, tc.want)
		}
	}
}

func TestEditKeepsFileMode(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	path := filepath.Join(dir, "run.sh")
	writeFile(t, path, "#!/bin/sh\necho hi\n", 0o750)
	mustOK(t, call(t, tools["edit"], map[string]any{"path": "run.sh", "edits": []map[string]string{{"oldText": "hi", "newText": "hello"}}}))
	if fileMode(t, path) != 0o750 || fileContent(t, path) != "#!/bin/sh\necho hello\n" {
		t.Errorf("mode %o content %q", fileMode(t, path), fileContent(t, path))
	}
	assertNoTempFiles(t, dir)
}

func TestEditAcceptsTheSingleEditShape(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	writeFile(t, filepath.Join(dir, "f"), "a\nb\n", 0o644)
	mustOK(t, call(t, tools["edit"], `{"path":"f","oldText":"b","newText":"B"}`))
	if got := fileContent(t, filepath.Join(dir, "f")); got != "a\nB\n" {
		t.Errorf("file is %q", got)
	}
}

func TestEditMissingFileSuggestsWrite(t *testing.T) {
	t.Parallel()
	_, _, tools := toolsIn(t, false)
	mustFail(t, call(t, tools["edit"], map[string]any{"path": "nope.go", "edits": []map[string]string{{"oldText": "a", "newText": "b"}}}), "nope.go", "no such file", "write")
}

func TestJailRefusesPathsOutsideTheWorkingDirectory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	work, outside := filepath.Join(root, "work"), filepath.Join(root, "outside")
	writeFile(t, filepath.Join(outside, "secret.txt"), "secret\n", 0o644)
	writeFile(t, filepath.Join(work, "inside.txt"), "inside\n", 0o644)
	os.Symlink(outside, filepath.Join(work, "out-dir"))
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(work, "out-file"))
	os.Symlink(filepath.Join(outside, "new.txt"), filepath.Join(work, "dangling-out"))
	os.Symlink("inside.txt", filepath.Join(work, "in-link"))
	env := NewToolEnv(work, true)
	tools := BuiltinTools(env)
	read, write, edit := tools[0], tools[1], tools[2]

	refused := []string{"../outside/secret.txt", filepath.Join(outside, "secret.txt"), "out-dir/secret.txt", "out-file", "out-dir/new/deep.txt", "dangling-out", "/etc/passwd"}
	for _, p := range refused {
		msg := fmt.Sprintf("path %s is outside the working directory (the jail is on)", p)
		mustFail(t, call(t, read, map[string]any{"path": p}), msg)
		mustFail(t, call(t, write, map[string]any{"path": p, "content": "pwned"}), msg)
		mustFail(t, call(t, edit, map[string]any{"path": p, "edits": []map[string]string{{"oldText": "secret", "newText": "pwned"}}}), msg)
	}
	if fileContent(t, filepath.Join(outside, "secret.txt")) != "secret\n" {
		t.Error("the jail let a write through")
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("the jail let a write through a dangling link")
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Error("the jail let write create a directory outside")
	}

	mustOK(t, call(t, read, map[string]any{"path": "in-link"}))
	mustOK(t, call(t, read, map[string]any{"path": filepath.Join(work, "inside.txt")}))
	mustOK(t, call(t, write, map[string]any{"path": "sub/dir/new.txt", "content": "ok"}))
	mustOK(t, call(t, edit, map[string]any{"path": "in-link", "edits": []map[string]string{{"oldText": "inside", "newText": "still inside"}}}))
}

func TestJailToggles(t *testing.T) {
	t.Parallel()
	dir, env, tools := toolsIn(t, true)
	outside := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-outside.txt")
	writeFile(t, outside, "x\n", 0o644)
	defer os.Remove(outside)
	if !env.Jailed() {
		t.Fatal("NewToolEnv(…, true) is not jailed")
	}
	mustFail(t, call(t, tools["read"], map[string]any{"path": outside}), "outside the working directory")
	env.SetJail(false)
	if env.Jailed() || mustOK(t, call(t, tools["read"], map[string]any{"path": outside})) != "x\n" {
		t.Error("/unjail did not allow the read")
	}
	env.SetJail(true)
	mustFail(t, call(t, tools["read"], map[string]any{"path": outside}), "outside the working directory")
}

func TestBashExitCodes(t *testing.T) {
	t.Parallel()
	_, _, tools := toolsIn(t, false)
	for _, c := range []struct {
		command string
		code    int
		isError bool
		want    string
	}{
		{"echo ok", 0, false, "ok\n[exit code 0]"},
		{"true", 0, false, "(no output)\n[exit code 0]"},
		{"printf partial; exit 3", 3, true, "partial\n[exit code 3]"},
		{"kill -KILL $$", 137, true, "(no output)\n[exit code 137: killed by signal killed]"},
		{"nosuchcommand-zot", 127, true, "\n[exit code 127]"},
	} {
		r := call(t, tools["bash"], map[string]any{"command": c.command})
		if r.ExitCode == nil || *r.ExitCode != c.code || r.IsError != c.isError || !strings.HasSuffix(text(r), c.want) {
			t.Errorf("%q: exit %v error %v text %q", c.command, r.ExitCode, r.IsError, text(r))
		}
	}
}

// The shell starts in the tool's directory by the name zot has for it,
// as the validators' splitter assumes: through a link, cd .. goes to the
// link's parent, whatever $PWD zot itself was started with.
func TestBashStartsWhereTheSplitterSaysThroughALink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "l")
	if err := os.Symlink(filepath.Join(dir, "a", "b"), link); err != nil {
		t.Fatal(err)
	}
	_, tools := toolsAt(link, false)
	got := mustOK(t, call(t, tools["bash"], map[string]any{"command": "pwd; cd ..; pwd"}))
	split := SplitCommandLine("pwd; cd ..; pwd", ShellContext{Bash: true, Cwd: link}).Commands
	if want := link + "\n" + split[2].Cwd + "\n[exit code 0]"; got != want || split[2].Cwd != dir {
		t.Errorf("bash printed %q, want %q", got, want)
	}
}

func TestBashMergesStdoutAndStderrInOrder(t *testing.T) {
	t.Parallel()
	dir, _, tools := toolsIn(t, false)
	got := mustOK(t, call(t, tools["bash"], map[string]any{"command": "echo 1; echo 2 >&2; echo 3; echo 4 >&2; pwd; cat"}))
	if want := "1\n2\n3\n4\n" + dir + "\n[exit code 0]"; got != want {
		t.Errorf("got %q, want %q (cat must see an empty stdin)", got, want)
	}
}

func TestBashTimeoutStopsTheCommand(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	checkNoGoroutineLeak(t)
	_, _, tools := toolsIn(t, false)
	r := call(t, tools["bash"], map[string]any{"command": "echo before; sleep 30; echo after", "timeout": 1})
	got := mustFail(t, r, "before\n", "[timed out after 1s; stopped the command and its process group")
	if strings.Contains(got, "\nafter\n") {
		t.Errorf("the command went on: %q", got)
	}
}

func TestBashClampsTimeoutAndSaysSo(t *testing.T) {
	t.Parallel()
	_, _, tools := toolsIn(t, false)
	got := mustOK(t, call(t, tools["bash"], map[string]any{"command": "true", "timeout": 100000}))
	if !strings.Contains(got, "[timeout 100000s is above the maximum; used 600s]") {
		t.Errorf("no clamp note: %q", got)
	}
}

func TestBashAbortViaContext(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	checkNoGoroutineLeak(t)
	_, _, tools := toolsIn(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := callCtx(t, ctx, tools["bash"], map[string]any{"command": "echo ready; sleep 60"}, func(line string) {
		if line == "ready" {
			cancel()
		}
	})
	mustFail(t, r, "ready\n", "[aborted; stopped the command and its process group")

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	mustFail(t, callCtx(t, ctx, tools["bash"], map[string]any{"command": "touch should-not-exist"}, nil), "aborted before the command started")
}

func TestBashKillsTheWholeGroupEvenChildrenThatTrapTERM(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	checkNoGoroutineLeak(t)
	_, _, tools := toolsIn(t, false)
	r := call(t, tools["bash"], map[string]any{
		"command": `echo shell $$; sh -c 'trap "" TERM; echo child $$; sleep 100; echo survived' & wait`,
		"timeout": 1,
	})
	got := mustFail(t, r, "timed out after 1s")
	var shell, child int
	if _, err := fmt.Sscanf(got, "shell %d\nchild %d\n", &shell, &child); err != nil {
		t.Fatalf("cannot find the pids in %q: %v", got, err)
	}
	if strings.Contains(got, "survived") {
		t.Error("the child survived")
	}
	// stopGroup waits for the group to be gone before Run returns.
	if groupAlive(shell) || !processGone(child) {
		t.Errorf("process group %d still has live members after Run returned", shell)
	}
}

func TestBashBackgroundChildHoldingThePipeDoesNotHang(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	checkNoGoroutineLeak(t)
	_, _, tools := toolsIn(t, false)
	r := call(t, tools["bash"], map[string]any{"command": "echo start; sleep 1000 & echo bg $!", "timeout": 60})
	got := mustOK(t, r)
	var bg int
	if _, err := fmt.Sscanf(got, "start\nbg %d\n", &bg); err != nil {
		t.Fatalf("output %q: %v", got, err)
	}
	if !strings.Contains(got, "[exit code 0]\n[stopped processes the command left running in the background]") {
		t.Errorf("result %q", got)
	}
	if !processGone(bg) {
		t.Errorf("background sleep %d outlived Run", bg)
	}
}

var spillMarker = regexp.MustCompile(`\n\[… (\d+) bytes cut \(lines (\d+)-(\d+)\); full output in (\S+) …\]\n`)

// TestBashKeepsHeadAndTailAndSpillsFullOutput: the result keeps 4 KiB of
// the head and 12 KiB of the tail, cut at line breaks, and names the
// lines it cut, which are those lines of the spill file, which holds the
// whole output.
func TestBashKeepsHeadAndTailAndSpillsFullOutput(t *testing.T) {
	t.Parallel()
	_, _, tools := toolsIn(t, false)
	got := mustOK(t, call(t, tools["bash"], map[string]any{"command": "seq 1 100000"}))
	var full strings.Builder
	for i := 1; i <= 100000; i++ {
		fmt.Fprintf(&full, "%d\n", i)
	}
	m := spillMarker.FindStringSubmatchIndex(got)
	if m == nil {
		t.Fatalf("no cut marker in %d bytes of result", len(got))
	}
	head, tail := got[:m[0]+1], strings.TrimSuffix(got[m[1]:], "[exit code 0]")
	cut, _ := strconv.Atoi(got[m[2]:m[3]])
	from, _ := strconv.Atoi(got[m[4]:m[5]])
	to, _ := strconv.Atoi(got[m[6]:m[7]])
	spill := got[m[8]:m[9]]
	if !strings.HasPrefix(full.String(), head) || !strings.HasSuffix(full.String(), tail) {
		t.Errorf("head or tail is not the start or end of the output")
	}
	if len(head) > 4<<10 || len(head) < 3<<10 || len(tail) > 12<<10 || len(tail) < 9<<10 {
		t.Errorf("head %d bytes, tail %d bytes", len(head), len(tail))
	}
	if len(head)+cut+len(tail) != full.Len() {
		t.Errorf("head %d + cut %d + tail %d != %d", len(head), cut, len(tail), full.Len())
	}
	if filepath.Dir(spill) != os.TempDir() || !strings.HasPrefix(filepath.Base(spill), "zot-bash-") {
		t.Errorf("spill file %s", spill)
	}
	if fileContent(t, spill) != full.String() {
		t.Error("the spill file does not hold the full output")
	}
	if first, last := strconv.Itoa(from)+"\n", strconv.Itoa(to)+"\n"; !strings.HasSuffix(head, strconv.Itoa(from-1)+"\n") || !strings.HasPrefix(tail, strconv.Itoa(to+1)+"\n") || first == last {
		t.Errorf("the cut is said to be lines %d-%d; the head ends %q, the tail starts %q", from, to, head[len(head)-8:], tail[:8])
	}
}

// TestBashOutputThatFitsHasNoSpillFile is not parallel: it points
// os.TempDir at a directory of its own to see that nothing is left there.
func TestBashOutputThatFitsHasNoSpillFile(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	_, _, tools := toolsIn(t, false)
	got := mustOK(t, call(t, tools["bash"], map[string]any{"command": "head -c 16384 /dev/zero | tr '\\0' 'y'"}))
	if got != strings.Repeat("y", 16384)+"\n[exit code 0]" {
		t.Errorf("16 KiB of output was not returned whole: %d bytes", len(got))
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "*")); len(left) > 0 {
		t.Errorf("a spill file was left for output that was not cut: %v", left)
	}
}

func TestBashProgressReportsCompleteLinesThrottled(t *testing.T) {
	t.Parallel()
	_, _, tools := toolsIn(t, false)
	var lines []string
	start := time.Now()
	r := callCtx(t, context.Background(), tools["bash"], map[string]any{"command": "echo first; seq 1 300000"}, func(line string) {
		lines = append(lines, line)
	})
	elapsed := time.Since(start)
	mustOK(t, r)
	if len(lines) == 0 {
		t.Fatal("progress was not called")
	}
	for _, l := range lines {
		if _, err := strconv.Atoi(l); err != nil && l != "first" {
			t.Errorf("progress got a partial or odd line %q", l)
		}
	}
	if limit := 1 + int(elapsed/progressEvery); len(lines) > limit {
		t.Errorf("%d progress calls in %v, more than one per %v", len(lines), elapsed, progressEvery)
	}
}

// TestBash1GBOutputStaysBounded: 1 GB of output costs zot fixed memory,
// the result is within its budget and ends with the tail, and the spill
// file keeps the first 16 MiB and the last 48 MiB of the output with a
// line between that says what was cut.
func TestBash1GBOutputStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1 GB through a pipe")
	}
	if !runsAlone(t) {
		return
	}
	checkNoGoroutineLeak(t)
	_, _, tools := toolsIn(t, false)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// The longest timeout: under -race on a loaded machine 1 GB takes
	// more than the default 120 s, and speed is not what this test is about.
	// One process writes the gigabyte straight into zot's pipe: head and
	// tr between them moved it twice more, 2.2 s more of the suite's CPU.
	line := `python3 -S -c 'import sys; w = sys.stdout.buffer; b = b"x" * 1000000; [w.write(b) for _ in range(1000)]'; echo; echo end`
	r := call(t, tools["bash"], map[string]any{"command": line, "timeout": 600})
	runtime.ReadMemStats(&after)
	got := mustOK(t, r)
	m := regexp.MustCompile(`\[… (\d+) bytes cut \(lines 1-1\); the first 16\.0 MiB and the last 48\.0 MiB of the output are in (\S+) …\]`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no cut marker in %d bytes: %q", len(got), got[:min(len(got), 200)])
	}
	if len(got) > 17<<10 {
		t.Errorf("result is %d bytes", len(got))
	}
	if !strings.HasSuffix(got, "x\nend\n[exit code 0]") {
		t.Errorf("result ends %q", got[len(got)-40:])
	}
	f, err := os.Open(m[2])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	note := fmt.Sprintf("\n[… zot cut %d bytes here: this file keeps the first 16.0 MiB and the last 48.0 MiB of the command's output …]\n", 1_000_000_005-64<<20)
	if info, _ := f.Stat(); info.Size() != 64<<20+int64(len(note)) {
		t.Errorf("spill file is %d bytes", info.Size())
	}
	at := func(off int64, n int) string {
		b := make([]byte, n)
		f.ReadAt(b, off)
		return string(b)
	}
	if got := at(16<<20-4, 4+len(note)+4); got != "xxxx"+note+"xxxx" {
		t.Errorf("around the cut: %q", got)
	}
	if got := at(64<<20+int64(len(note))-8, 8); got != "xxx\nend\n" {
		t.Errorf("the spill file ends %q", got)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("1 GB of output allocated %d MiB on the Go heap", alloc>>20)
	}
}

// TestBashSpillKeepsHeadAndTailBeyondItsLimit: with a spill limit, the file
// is byte for byte the first quarter of the limit, the note, and the last
// three quarters, whatever the ring's position when the output ended.
func TestBashSpillKeepsHeadAndTailBeyondItsLimit(t *testing.T) {
	t.Parallel()
	for _, lines := range []int{200000, 200001, 333333} {
		t.Run(strconv.Itoa(lines), func(t *testing.T) {
			t.Parallel()
			_, env, tools := toolsIn(t, false)
			env.SpillLimit = 1 << 20
			got := mustOK(t, call(t, tools["bash"], map[string]any{"command": "seq 1 " + strconv.Itoa(lines)}))
			m := regexp.MustCompile(`the first 256\.0 KiB and the last 768\.0 KiB of the output are in (\S+) …`).FindStringSubmatch(got)
			if m == nil {
				t.Fatalf("no cut marker: %q", got[:min(len(got), 6000)])
			}
			var full strings.Builder
			for i := 1; i <= lines; i++ {
				fmt.Fprintf(&full, "%d\n", i)
			}
			out := full.String()
			want := out[:256<<10] + fmt.Sprintf("\n[… zot cut %d bytes here: this file keeps the first 256.0 KiB and the last 768.0 KiB of the command's output …]\n", len(out)-1<<20) + out[len(out)-768<<10:]
			if fileContent(t, m[1]) != want {
				t.Errorf("the spill file is not the head, the note and the tail")
			}
		})
	}
}

// TestBashSpillLimitZeroKeepsNoFile: bash_spill_limit 0 writes no spill
// file, and the result says so.
func TestBashSpillLimitZeroKeepsNoFile(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	_, env, tools := toolsIn(t, false)
	env.SpillLimit = -1
	got := mustOK(t, call(t, tools["bash"], map[string]any{"command": "seq 1 100000"}))
	if !strings.Contains(got, "bytes cut (lines ") || !strings.Contains(got, "; no spill file (bash_spill_limit is 0) …]") {
		t.Errorf("result %q", got[:min(len(got), 5000)])
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "*")); len(left) > 0 {
		t.Errorf("files were written: %v", left)
	}
}

// TestReadPagesThroughTheSpillFileUnderTheJail: the spill file the result
// names lies outside the working directory, and the jail lets read reach
// it (and only it), page by page from the line the result says the cut
// starts at.
func TestReadPagesThroughTheSpillFileUnderTheJail(t *testing.T) {
	t.Parallel()
	_, env, tools := toolsIn(t, true)
	got := mustOK(t, call(t, tools["bash"], map[string]any{"command": "seq 1 100000"}))
	m := spillMarker.FindStringSubmatch(got)
	if m == nil {
		t.Fatal("no spill file named")
	}
	from, _ := strconv.Atoi(m[2])
	page := mustOK(t, call(t, tools["read"], map[string]any{"path": m[4], "offset": from, "limit": 3}))
	if !strings.HasPrefix(page, fmt.Sprintf("%d\n%d\n%d\n", from, from+1, from+2)) {
		t.Errorf("read of the spill file from line %d: %q", from, page)
	}
	mustFail(t, call(t, tools["read"], map[string]any{"path": filepath.Join(filepath.Dir(m[4]), "zot-bash-0.log")}), "outside the working directory")
	mustFail(t, call(t, tools["write"], map[string]any{"path": m[4], "content": "x"}), "outside the working directory")
	env.Close()
}

// The jail's opening for spill files is for the file zot made, not for
// its name: a command that replaces a spill file with a link to a secret
// outside the working directory gets nothing through read.
func TestJailedReadOfAReplacedSpillFileIsRefused(t *testing.T) {
	t.Parallel()
	_, env, tools := toolsIn(t, true)
	defer env.Close()
	secret := filepath.Join(t.TempDir(), "auth.json")
	os.WriteFile(secret, []byte(`{"key":"sk-secret"}`), 0o600)
	got := mustOK(t, call(t, tools["bash"], map[string]any{"command": "seq 1 100000"}))
	m := spillMarker.FindStringSubmatch(got)
	if m == nil {
		t.Fatal("no spill file named")
	}
	for _, replace := range []string{"ln -sf " + secret + " " + m[4], "rm -f " + m[4] + " && ln " + secret + " " + m[4]} {
		mustOK(t, call(t, tools["bash"], map[string]any{"command": replace}))
		r := call(t, tools["read"], map[string]any{"path": m[4]})
		if strings.Contains(text(r), "sk-secret") {
			t.Fatalf("after %q, read returned the secret: %s", replace, text(r))
		}
		mustFail(t, r, "outside the working directory")
	}
}

// TestWriteUnderFileSizeLimit is the child half of "write fails midway".
func TestWriteUnderFileSizeLimit(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("ZOT_FSIZE_DIR")
	if dir == "" {
		t.Skip("run by TestWrite… in a child process")
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skip(err)
	}
	lim.Cur = 4096
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skip(err)
	}
	write := BuiltinTools(NewToolEnv(dir, false))[1]
	r := call(t, write, map[string]any{"path": "f.txt", "content": strings.Repeat("x", 64<<10)})
	mustFail(t, r, "write f.txt", "file too large", "the file is unchanged")
}

// TestBashDoesNotInheritZotSecrets is not parallel: it sets the secrets in
// zot's own environment.
func TestBashDoesNotInheritZotSecrets(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-secret-a")
	t.Setenv("OPENAI_API_KEY", "sk-secret-o")
	t.Setenv("ZOT_HARMLESS", "kept")
	_, _, tools := toolsIn(t, false)
	r := call(t, tools["bash"], map[string]any{"command": "env"})
	out := r.Content[0].Text
	if strings.Contains(out, "sk-secret") || !strings.Contains(out, "ZOT_HARMLESS=kept") {
		t.Errorf("bash environment:\n%s", out)
	}
}

// TestBashStopsWhatLeftTheProcessGroup: a process that leaves the
// command's process group but not its session is stopped with it.
func TestBashStopsWhatLeftTheProcessGroup(t *testing.T) {
	for _, tt := range []struct{ name, command string }{
		{"set -m", `bash -c 'set -m; sleep 405 & echo $! > escaped.pid'`},
		{"setpgid", escapeCommand(t, "setpgid", "escaped.pid")},
		{"setpgrp", escapeCommand(t, "setpgrp", "escaped.pid")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, _, tools := toolsIn(t, false)
			got := mustOK(t, call(t, tools["bash"], map[string]any{"command": tt.command}))
			if pid := readPid(t, filepath.Join(dir, "escaped.pid")); !processGone(pid) {
				t.Errorf("process %d outlived the call", pid)
			}
			if !strings.Contains(got, "[stopped processes the command left running in the background]") {
				t.Errorf("result %q", got)
			}
		})
	}
}

// TestBashLeavesANewSessionRunning: a process that starts a session of its
// own is beyond the call's reach (docs/tools.md); zot stops it when zot
// exits (TestZotStopsAdoptedOrphansAtExit).
func TestBashLeavesANewSessionRunning(t *testing.T) {
	dir, _, tools := toolsIn(t, false)
	mustOK(t, call(t, tools["bash"], map[string]any{"command": escapeCommand(t, "setsid", "escaped.pid")}))
	if pid := readPid(t, filepath.Join(dir, "escaped.pid")); processGone(pid) {
		t.Errorf("process %d in a session of its own was stopped with the call", pid)
	}
}

// TestBashStopsLeftoversBeforeReapingTheShell: what the shell left gets
// SIGTERM while the shell is an unreaped zombie, so the group id cannot
// have been reused.
func TestBashStopsLeftoversBeforeReapingTheShell(t *testing.T) {
	dir, _, tools := toolsIn(t, false)
	mustOK(t, call(t, tools["bash"], map[string]any{"command": "exec python3 " + strconv.Quote(procTestdata(t, "witness.py")) + " ."}))
	for _, name := range []string{"in-group", "out-of-group"} {
		if got := fileContent(t, filepath.Join(dir, name)); got != "Z" {
			t.Errorf("%s: at SIGTERM the shell was %q, want Z", name, got)
		}
	}
}

func TestBashSpillFilesLiveUntilClose(t *testing.T) {
	_, env, tools := toolsIn(t, false)
	m := spillMarker.FindStringSubmatch(mustOK(t, call(t, tools["bash"], map[string]any{"command": "seq 1 100000"})))
	if m == nil {
		t.Fatal("no spill file named")
	}
	if _, err := os.Stat(m[4]); err != nil {
		t.Fatalf("the spill file is gone before Close: %v", err)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m[4]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the spill file is still there after Close: %v", err)
	}
}

// Starting zot sweeps the temp directory for stale spill files once an
// hour, not at every start.
func TestStaleSpillsAreSweptHourly(t *testing.T) {
	t.Parallel()
	home, tmp := t.TempDir(), t.TempDir()
	old := time.Now().Add(-25 * time.Hour)
	stale := func() string {
		f, err := os.CreateTemp(tmp, spillPattern)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		os.Chtimes(f.Name(), old, old)
		return f.Name()
	}
	gone := func(p string) bool {
		_, err := os.Lstat(p)
		return errors.Is(err, fs.ErrNotExist)
	}
	first := stale()
	sweepStaleSpills(home, tmp)
	if !gone(first) {
		t.Fatal("the first start did not sweep")
	}
	second := stale()
	sweepStaleSpills(home, tmp)
	if gone(second) {
		t.Fatal("a second start within the hour listed the temp directory again")
	}
	hourAgo := time.Now().Add(-61 * time.Minute)
	os.Chtimes(filepath.Join(home, "spills-swept"), hourAgo, hourAgo)
	sweepStaleSpills(home, tmp)
	if !gone(second) {
		t.Fatal("a start an hour later did not sweep")
	}
}

// TestRemoveStaleSpills: only old regular files of the spill pattern that
// the user owns go.
func TestRemoveStaleSpills(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := time.Now().Add(-25 * time.Hour)
	create := func(name string, age time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, age, age)
		return p
	}
	stale := create("zot-bash-123.log", old)
	keep := []string{
		create("zot-bash-456.log", time.Now()),
		create("zot-bash-abc.log", old),
		create("zot-bash-.log", old),
		create("other-123.log", old),
	}
	linkTarget := create("target", old)
	link := filepath.Join(dir, "zot-bash-789.log")
	os.Symlink(linkTarget, link)
	subdir := filepath.Join(dir, "zot-bash-790.log")
	os.Mkdir(subdir, 0o700)
	os.Chtimes(subdir, old, old)
	keep = append(keep, linkTarget, link, subdir)
	if os.Getuid() == 0 {
		foreign := create("zot-bash-791.log", old)
		if err := os.Lchown(foreign, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		keep = append(keep, foreign)
	}
	RemoveStaleSpills(dir, 24*time.Hour)
	if _, err := os.Lstat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is still there", stale)
	}
	for _, p := range keep {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed", p)
		}
	}
}
