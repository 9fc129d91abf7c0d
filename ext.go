package main

// Types the extension host shares with its users (the TUI, the RPC server,
// main.go). The host itself is built in this file.

// ExtCommand is a slash command an extension registered.
type ExtCommand struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Extension   string `json:"extension"`
}

// CommandResponse is an extension's answer to a command: Action is prompt,
// insert, display or noop; Error, when set, is shown whatever the action.
// Panel, when set, opens an overlay panel.
type CommandResponse struct {
	Action  string    `json:"action"`
	Prompt  string    `json:"prompt,omitempty"`
	Insert  string    `json:"insert,omitempty"`
	Display string    `json:"display,omitempty"`
	Error   string    `json:"error,omitempty"`
	Panel   *ExtPanel `json:"open_panel,omitempty"`
}

// ExtPanel is an overlay an extension draws and that receives keys.
type ExtPanel struct {
	ID        string   `json:"id"`
	Title     string   `json:"title,omitempty"`
	Lines     []string `json:"lines,omitempty"`
	Footer    string   `json:"footer,omitempty"`
	Extension string   `json:"-"`
}

// PanelUpdate tells the host's UI to open, redraw or close a panel.
type PanelUpdate struct {
	Kind  string // open, render, close
	Panel ExtPanel
}

// ExtNote is a notify frame (Clear false) or a clear_notes frame (Clear
// true: retract every note of Extension).
type ExtNote struct {
	Extension string
	Level     string
	Message   string
	Clear     bool
}

// ReloadStats is what a reload did.
type ReloadStats struct {
	Stopped int      `json:"stopped"`
	Loaded  int      `json:"loaded"`
	Ready   int      `json:"ready"`
	Errors  []string `json:"errors"`
}
