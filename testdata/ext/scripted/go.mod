module scripted

go 1.22
