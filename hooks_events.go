package main

import (
	"context"
	"fmt"
	"strings"
)

// The events of hooks.go that zot added after the first six:
// PostToolUseFailure, PermissionRequest, Notification and PreCompact.

// afterFailure is PostToolUseFailure: after a call that ran and failed
// (not one a gate refused), the hooks whose matcher takes the tool run with the error;
// exit 2's stderr and additionalContext are what it gives the model.
func (h *Hooks) afterFailure(ctx context.Context, rec *ToolRecord) []string {
	if !rec.Ran || !rec.Result.IsError || !h.Has("PostToolUseFailure") {
		return nil
	}
	args := rec.Call.Args
	if rec.Executed != nil {
		args = rec.Executed
	}
	name := claudeToolName(rec.Call.Name)
	interrupted := ctx.Err() != nil
	var extra []string
	for _, r := range h.run(ctx, "PostToolUseFailure", name, hookInput{
		ToolName: name, ToolInput: claudeToolInput(rec.Call.Name, args, h.cfg.Cwd), ToolUseID: rec.Call.ID,
		Error: resultText(rec.Result), IsInterrupt: &interrupted,
	}) {
		switch {
		case r.blocks():
			extra = append(extra, "PostToolUseFailure hook: "+r.reason())
		case !r.ok():
		default:
			if r.out.stops() {
				h.stop(r.out.StopReason)
			}
			if c := r.out.additionalContext(); c != "" {
				extra = append(extra, "PostToolUseFailure hook: "+c)
			}
		}
	}
	return extra
}

// resultText is the text of a tool result.
func resultText(res ToolResult) string {
	var parts []string
	for _, b := range res.Content {
		if b.Type == BlockText {
			parts = append(parts, b.Text)
		}
	}
	return truncate(strings.Join(parts, "\n"), hookReasonLimit)
}

// PermissionRequest runs where a call waits for approval, before anyone
// is asked. A hook's "decision": {"behavior": "deny"}, exit 2, or an http
// hook that cannot answer denies (the first such); else an "allow"
// approves; else the call goes to whoever confirms. It settles the asks
// of the gates only: a gate's deny never reaches it. updatedInput is not
// taken: the gates judged the call as it is.
func (h *Hooks) PermissionRequest(ctx context.Context, call ToolCall, asks []GateNote) (verdict GateVerdict, by, reason string) {
	if h == nil || !h.Has("PermissionRequest") {
		return GateAsk, "", ""
	}
	name := claudeToolName(call.Name)
	runs := h.run(ctx, "PermissionRequest", name, hookInput{
		ToolName: name, ToolInput: claudeToolInput(call.Name, call.Args, h.cfg.Cwd), ToolUseID: call.ID,
	})
	if ctx.Err() != nil && len(runs) > 0 {
		return GateDeny, "hooks", "aborted while PermissionRequest hooks were deciding"
	}
	verdict = GateAsk
	for i := range runs {
		r := &runs[i]
		switch {
		case r.refused:
			return GateDeny, r.by(), r.err.Error()
		case r.blocks():
			return GateDeny, r.by(), r.reason()
		case r.failsClosed():
			return GateDeny, r.by(), r.closedReason()
		case !r.ok() || r.out.Specific == nil || r.out.Specific.Decision == nil:
		case r.out.Specific.Decision.Behavior == "deny":
			why := strings.TrimSpace(r.out.Specific.Decision.Message)
			if why == "" {
				why = fmt.Sprintf("denied by PermissionRequest hook %q", r.h.name())
			}
			return GateDeny, r.by(), why
		case verdict == GateAsk:
			if r.out.updatedInput() != nil {
				h.note("warn", fmt.Sprintf("PermissionRequest hook %q: updatedInput ignored (zot runs the call its gates judged)", r.h.name()))
			}
			verdict, by = GateAllow, r.by()
		}
	}
	return verdict, by, ""
}

// NotifyApproval is Notification with notification_type
// "permission_prompt": the user is being asked about call. It cannot
// change anything; the caller runs it beside the question.
func (h *Hooks) NotifyApproval(ctx context.Context, call ToolCall) {
	h.Notify(ctx, "permission_prompt", "zot needs your permission to use "+claudeToolName(call.Name))
}

// Notify runs the Notification hooks whose matcher takes kind.
func (h *Hooks) Notify(ctx context.Context, kind, message string) {
	if h == nil || !h.Has("Notification") {
		return
	}
	h.run(ctx, "Notification", kind, hookInput{Message: message, NotificationType: kind})
}

// PreCompact runs before a compaction; the matcher takes the trigger,
// "manual" or "auto". It cannot stop the compaction (exit 2's stderr is
// shown to the user).
func (h *Hooks) PreCompact(ctx context.Context, trigger string) {
	if h == nil || !h.Has("PreCompact") {
		return
	}
	empty := ""
	for _, r := range h.run(ctx, "PreCompact", trigger, hookInput{Trigger: trigger, CustomInstructions: &empty}) {
		if r.blocks() {
			h.note("warn", "PreCompact hook: "+r.reason())
		}
	}
}
