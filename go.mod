module github.com/corral/corral

go 1.26.0
