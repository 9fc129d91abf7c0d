module weather

go 1.22
