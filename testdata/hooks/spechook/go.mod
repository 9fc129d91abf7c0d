module spechook

go 1.22
