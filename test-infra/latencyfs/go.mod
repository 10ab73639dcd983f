module github.com/s3stream/latencyfs

go 1.24

require github.com/hanwen/go-fuse/v2 v2.9.0

require golang.org/x/sys v0.28.0 // indirect
