module github.com/blackboardkernel/bk

go 1.26.8
