package main

import (
	"context"
	"slices"
)

// The TUI's approvals: the confirmation dialog shows an edit's or write's
// diff (numbered and coloured, as the edit's result will be) instead of
// its JSON, a command with who asked, and the answers an approval allows:
// yes; no, or no with a message for the model; and, where an allow ends
// the question, yes and don't ask again this session for the command's
// prefix (or for file edits), or the same saved for this directory in
// $ZOT_HOME/approvals.json (approvals_saved.go).

// approvalConfirm is the TUI's ConfirmFunc: the session's approvals,
// asking through the dialog.
func (t *TUI) approvalConfirm() ConfirmFunc {
	a := t.cfg.Approvals
	if a == nil {
		var preview func(ToolCall) string
		if env := t.cfg.ToolEnv; env != nil {
			preview = func(call ToolCall) string { return previewFileChange(env, call) }
		}
		a = newSessionApprovals(t.cfg.Cwd, preview, nil)
	}
	return a.Confirm(t.ask)
}

// ask shows q as a dialog and waits for the answer, or for the prompt to
// be cancelled (a no).
func (t *TUI) ask(ctx context.Context, q approvalQuestion) approvalAnswer {
	req := &confirmReq{ctx: ctx, call: q.Call, asks: q.Asks, q: q, reply: make(chan bool, 1), detail: make(chan approvalAnswer, 1)}
	t.post(msgConfirm{req})
	select {
	case a := <-req.detail:
		a.By = "user"
		return a
	case <-ctx.Done():
		return approvalAnswer{Decision: ApprovalDeny, By: "user (cancelled)"}
	case <-t.ctx.Done():
		return approvalAnswer{Decision: ApprovalDeny, By: "user (zot exited)"}
	}
}

// planLetters are the answers that approve a plan and the mode each
// carries it out in.
var planLetters = [][2]string{{"a", string(ModeAcceptEdits)}, {"k", string(ModeAsk)}, {"u", string(ModeAuto)}, {"s", string(ModeSandboxedAuto)}}

// approvalOptions are the "don't ask again" answers q offers; for a plan,
// the approvals, one per mode it may be carried out in, and one with
// changes typed.
func approvalOptions(q approvalQuestion) [][2]string {
	if q.Plan != nil {
		var opts [][2]string
		for _, l := range planLetters {
			if slices.Contains(q.Plan.Modes, l[1]) {
				opts = append(opts, [2]string{l[0], "approve, and carry it out in " + l[1] + " mode (" + Mode(l[1]).About() + ")"})
			}
		}
		if len(q.Plan.Modes) > 0 {
			opts = append(opts, [2]string{"e", "approve with changes (type them), in " + q.Plan.Modes[0] + " mode"})
		}
		return opts
	}
	o := q.Offer
	switch {
	case o.Edits:
		return [][2]string{{"e", "yes, and don't ask again for file edits in this directory this session"}}
	case len(o.Prefixes) > 0:
		return [][2]string{
			{"p", "yes, and don't ask again for " + o.Describe() + " this session"},
			{"s", "yes, and don't ask again for " + o.Describe() + " in this directory (saved)"},
		}
	}
	return nil
}

// approvalBody lays out what the call would do: for an edit or write its
// diff under the tool and path, a plan as markdown, else the call's
// arguments.
func approvalBody(req *confirmReq, width int) []string {
	if p := req.q.Plan; p != nil {
		return append([]string{fitLine(width, span{"the plan", sBold})}, renderMarkdown(drawText(p.Text), width, 0)...)
	}
	if req.q.Diff == "" {
		return callRows(req.call, width)
	}
	head := []span{{oneLine(req.call.Name), sBold}}
	if p := argPath(req.call); p != "" {
		head = append(head, span{"  " + p, 0})
	}
	return append([]string{fitLine(width, head...)}, parseDiff(req.q.Diff).rows(width, 0, true)...)
}

// argPath is the path argument of an edit or write, for a headline.
func argPath(call ToolCall) string {
	if a, err := ParseEditArgs(call.Args); err == nil && call.Name == ToolEdit {
		return oneLine(a.Path)
	}
	if a, err := ParseWriteArgs(call.Args); err == nil && call.Name == ToolWrite {
		return oneLine(a.Path)
	}
	return ""
}

// chooseApproval answers the dialog with one of the answers beyond yes and
// no; ok is false for a letter that is not one of them.
func (d *confirmDialog) chooseApproval(t *TUI, letter string) (ok bool) {
	if p := d.req.q.Plan; p != nil {
		for _, l := range planLetters {
			if l[0] == letter && slices.Contains(p.Modes, l[1]) {
				d.answerWith(approvalAnswer{Decision: ApprovalAllow, Mode: l[1]})
				return true
			}
		}
		return false
	}
	switch letter {
	case "p", "e":
	case "s":
		what := d.req.q.Offer.Describe()
		where, err := t.cfg.Approvals.Save(d.req.q.Offer)
		if err != nil {
			t.logf(fgRed, "✗ could not save %s: %s", what, err)
		} else {
			t.logf(sDim, "saved %s for this directory in %s", what, where)
		}
	default:
		return false
	}
	d.answerWith(approvalAnswer{Decision: ApprovalAlways})
	return true
}
