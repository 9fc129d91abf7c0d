module zot.local/zotext

go 1.22
