module zot

go 1.22
