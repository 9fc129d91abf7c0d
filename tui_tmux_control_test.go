package main

import (
	"bufio"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// tmuxControl is one tmux client in control mode (tmux -C) for a test's
// whole session: its commands go down one pipe instead of each starting a
// tmux client (8 ms of CPU each, some 1,500 a suite run).
type tmuxControl struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	mu      sync.Mutex // one command at a time: replies come in order
	replies chan tmuxReply
	done    chan struct{} // the reader ended
}

type tmuxReply struct {
	out    string
	failed bool
}

func startTmuxControl(sock string) (*tmuxControl, error) {
	c := &tmuxControl{replies: make(chan tmuxReply), done: make(chan struct{})}
	// Attached to a session of its own, which shares no window with the
	// test's: a client showing zot's window would make tmux report the
	// focus to zot (ESC [ I) and keep the window's bell flag down. Its
	// window is named, since tmux takes "-t t" for a window of the
	// client's session whose name starts with t ("tmux", before its
	// command starts) before the session t.
	c.cmd = exec.Command("tmux", "-L", sock, "-C", "new-session", "-s", "ctl", "-n", "ctl", "exec sleep 600")
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go c.read(bufio.NewReader(stdout))
	return c, nil
}

// read takes each command's reply from the client's lines: what stands
// between %begin and the %end or %error with the same time and number.
// The reply to the session's start (flags 0: not a command of this
// client's) and the notices between replies are dropped.
func (c *tmuxControl) read(r *bufio.Reader) {
	defer close(c.done)
	var reply strings.Builder
	end := "" // the line's tail that ends the reply being read
	mine := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case end != "":
			tag, rest, _ := strings.Cut(line, " ")
			if (tag == "%end" || tag == "%error") && rest == end {
				if mine {
					c.replies <- tmuxReply{out: reply.String(), failed: tag == "%error"}
				}
				end = ""
				continue
			}
			reply.WriteString(line + "\n")
		case strings.HasPrefix(line, "%begin "):
			end = strings.TrimPrefix(line, "%begin ")
			fields := strings.Fields(end)
			mine = len(fields) == 3 && fields[2] == "1"
			reply.Reset()
		}
	}
}

// run sends one command, its arguments quoted, and returns its output.
func (c *tmuxControl) run(args []string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shq(a)
	}
	if _, err := io.WriteString(c.stdin, strings.Join(quoted, " ")+"\n"); err != nil {
		return "", err
	}
	select {
	case r := <-c.replies:
		if r.failed {
			return r.out, errors.New("tmux reported an error")
		}
		return r.out, nil
	case <-c.done:
		return "", errors.New("the tmux control client ended")
	}
}

// close ends the client once the server is gone (or on its stdin's end)
// and waits for it.
func (c *tmuxControl) close() {
	c.stdin.Close()
	<-c.done
	c.cmd.Wait()
}
