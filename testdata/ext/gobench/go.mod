module gobench

go 1.22
