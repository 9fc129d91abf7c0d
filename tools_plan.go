package main

import (
	"context"
	"encoding/json"
)

// present_plan: how the model ends plan mode. It hands its plan, as
// markdown, to whoever the host asks (the user in the TUI, an rpc or ACP
// client), who approves it and picks the mode to carry it out in, edits
// it, or rejects it; the answer is the tool's result, so the plan and
// what became of it stay in the conversation. The host does the asking
// and the switching (present).

type planTool struct {
	present func(ctx context.Context, plan string) ToolResult
}

// PresentPlanTool is present_plan; present asks about the plan and says
// what became of it.
func PresentPlanTool(present func(ctx context.Context, plan string) ToolResult) Tool {
	return planTool{present}
}

func (planTool) Name() string { return ToolPresentPlan }

func (planTool) Description() string {
	return "Plan mode only: present your finished plan (markdown: the steps, the files to change, how to check the result) for the user to approve. " +
		"Nothing changes until they approve it; then the mode switches and you carry the plan out. If they reject it, revise and present it again."
}

func (planTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"plan":{"type":"string","description":"the plan, in markdown"}},"required":["plan"]}`)
}

// ReadOnly: presenting a plan changes nothing; what the user's approval
// switches is the host's.
func (planTool) ReadOnly() bool { return true }

func (t planTool) Run(ctx context.Context, raw json.RawMessage, _ func(string)) ToolResult {
	plan, err := ParsePlanArgs(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	return t.present(ctx, plan)
}
