module fakeserver

go 1.22
