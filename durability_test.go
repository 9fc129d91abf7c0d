package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Helpers for the tests that play a crash or a full disk against the real
// binary: kill -9 at a chosen moment, a directory that runs out of room.

// smallDisk makes dir a place with room bytes left: a 64 KiB tmpfs
// mounted there and filled up to room (as root), else a file-size limit
// (RLIMIT_FSIZE, through prlimit) on z's runs of grow bytes beyond what
// dir holds now — for a run that appends to one file there. It skips
// loudly when neither can be had.
func smallDisk(t *testing.T, z *zotRun, dir string, room int64) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", dir).CombinedOutput()
		if err == nil {
			t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
			// Filled to the last byte, then given back room: the room
			// statfs would say, without statfs's fields, which differ on
			// each system.
			filler, err := os.OpenFile(filepath.Join(dir, "filler"), os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer filler.Close()
			n, err := filler.Write(make([]byte, 128<<10)) // twice what it holds
			if !errors.Is(err, syscall.ENOSPC) || n < int(room) {
				t.Fatalf("filling the tmpfs: %d bytes, %v; want it full beyond %d", n, err, room)
			}
			if err := filler.Truncate(int64(n) - room); err != nil {
				t.Fatal(err)
			}
			return "a 64 KiB tmpfs"
		}
		t.Logf("mount tmpfs: %v: %s; trying a file-size limit", err, out)
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		skipMissing(t, "SKIPPED LOUDLY: no full disk to test with: cannot mount a tmpfs (not root) and prlimit (util-linux) is not installed")
	}
	var size int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			size = max(size, fi.Size())
		}
		return nil
	})
	z.wrap = []string{prlimit, fmt.Sprintf("--fsize=%d", size+room)}
	return "RLIMIT_FSIZE"
}

// noTornLines fails on a line of path that is not one whole JSON object.
func noTornLines(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("%s ends in a cut-off line: %q", path, b[max(0, len(b)-80):])
	}
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("%s line %d is torn: %.120q…", path, i+1, l)
		}
	}
}

// bigToolStep is toolStep for big arguments (a padding of kilobytes, a
// file of megabytes): streamed in pieces of 1 MiB rather than a provider's
// few bytes, which for 16 KiB are 2,341 events to encode and parse where
// a test is about something else.
func bigToolStep(id, name string, args any) replayStep {
	b, _ := json.Marshal(args)
	ev := anthropicEvents(gen{ToolID: id, ToolName: name, ToolArgs: "{}"})
	var deltas []string
	for _, p := range pieces(string(b), 1<<20) {
		deltas = append(deltas, sseEventText("content_block_delta", obj{"type": "content_block_delta", "index": 0,
			"delta": obj{"type": "input_json_delta", "partial_json": p}}))
	}
	// ev: message_start, content_block_start, one delta of "{}", the rest.
	return replayStep{Events: append(append(ev[:2:2], deltas...), ev[3:]...)}
}
