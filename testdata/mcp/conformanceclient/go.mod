module conformanceclient

go 1.22
