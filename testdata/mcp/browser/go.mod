module browser

go 1.22
