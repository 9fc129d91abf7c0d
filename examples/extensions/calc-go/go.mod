module calc

go 1.22

require zot.local/zotext v0.0.0

// The SDK of the zot repository this example lives in. Elsewhere, point
// this at your copy of zot's sdk/go, or copy zotext.go into your module.
replace zot.local/zotext => ../../../sdk/go
