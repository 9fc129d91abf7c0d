module sdkgo

go 1.22

require zot.local/zotext v0.0.0

replace zot.local/zotext => ../../../sdk/go
